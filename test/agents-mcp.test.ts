import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { p2pChatId } from "../src/local/emulator/ids.ts";
import { auditForSession } from "../src/store/audit.ts";
import { sqliteSql } from "../src/store/sql.ts";
import {
  type AgentsRig,
  ALICE,
  BOB,
  CAROL,
  GROUP,
  QUESTION,
  startAgentsRig,
  submitValue,
} from "./helpers/agents.ts";
import { cardText, formsOn } from "./helpers/feishu.ts";

/** An outside agent through the official MCP client: everything it does is seen on the emulated Feishu card. */

type ToolResult = { structuredContent?: Record<string, unknown>; isError?: boolean; content?: unknown };

describe("MCP server at /mcp", () => {
  let r: AgentsRig;
  beforeEach(async () => {
    r = await startAgentsRig();
  });
  afterEach(async () => {
    await r.stop();
  });

  const call = async (token: string, name: string, args: Record<string, unknown>) =>
    (await (await r.mcp(token)).callTool({ name, arguments: args })) as ToolResult;

  it("lists the six tools, each with an input and an output schema", async () => {
    const client = await r.mcp(r.token("Claude Code", [ALICE]));
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      "ask_user_questions",
      "cancel_question",
      "finish_task",
      "get_answers",
      "report_progress",
      "start_task",
    ]);
    for (const tool of tools) expect(tool.outputSchema, tool.name).toBeDefined();
    const ask = tools.find((t) => t.name === "ask_user_questions");
    expect(ask?.description).toMatch(/secrets/);
    expect(client.getInstructions()).toMatch(/never ask for secrets/);
    expect(JSON.stringify(ask?.inputSchema)).toContain("multiSelect");
  });

  it("opens a card naming the agent, shows steps, asks, and returns the answer given on the card", async () => {
    const client = await r.mcp(r.token("Claude Code", [ALICE]));
    const started = (await client.callTool({
      name: "start_task",
      arguments: { to: ALICE, title: "Migrate the billing service" },
    })) as ToolResult;
    const taskId = String(started.structuredContent?.task_id);
    const cardId = await r.until(() => r.cardsIn(p2pChatId(ALICE))[0], "the task card");
    expect(cardText(r.cardOf(cardId))).toContain("Claude Code 正在处理…");
    expect(cardText(r.cardOf(cardId))).not.toContain("取消任务");

    await client.callTool({
      name: "report_progress",
      arguments: { task_id: taskId, step: "Read the schema" },
    });
    await client.callTool({
      name: "report_progress",
      arguments: { task_id: taskId, step: "Read the schema", status: "done", detail: "12 tables" },
    });
    await r.until(
      () => cardText(r.cardOf(cardId)).includes("✅ Read the schema · 12 tables"),
      "the step done",
    );

    const asked = (await client.callTool({
      name: "ask_user_questions",
      arguments: { task_id: taskId, questions: [QUESTION], reason: "The schema fits both", wait_s: 0.05 },
    })) as ToolResult;
    expect(asked.structuredContent).toMatchObject({ status: "pending" });
    expect(asked.structuredContent?.hint).toMatch(/get_answers/);
    const askId = String(asked.structuredContent?.ask_id);
    const card = await r.until(() => {
      const c = r.cardOf(cardId);
      return formsOn(c).length === 1 && c;
    }, "the form on the card");
    expect(cardText(card)).toContain("提问原因：** The schema fits both");

    const wrong = await r.click({
      messageId: cardId,
      operatorOpenId: BOB,
      value: submitValue(card),
      name: "ask0_submit",
      formValue: { ask0_q0: "1" },
    });
    expect(wrong.toast?.content).toBe("仅任务发起人可以回答此问题");
    const still = (await client.callTool({
      name: "get_answers",
      arguments: { ask_id: askId, wait_s: 0 },
    })) as ToolResult;
    expect(still.structuredContent?.status).toBe("pending");

    // A wait longer than wait_s: this call is waiting when Alice answers, and returns her answer.
    const waiting = client.callTool({ name: "get_answers", arguments: { ask_id: askId, wait_s: 30 } });
    const right = await r.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: submitValue(card),
      name: "ask0_submit",
      formValue: { ask0_q0: "1" },
    });
    expect(right.toast?.content).toBe("已提交");
    const answered = (await waiting) as ToolResult;
    expect(answered.structuredContent).toEqual({
      status: "answered",
      ask_id: askId,
      answers: [{ question: QUESTION.question, selectedLabels: ["SQLite"], customInput: null }],
      answered_by: ALICE,
      answered_via: "feishu",
    });
    expect(JSON.parse(textOf(answered))).toEqual(answered.structuredContent);
    // Audited with the agent's name (in the session id) and who answered where.
    expect(await auditForSession(sqliteSql(r.core.store.db), `agent:Claude Code:${ALICE}`)).toMatchObject([
      { requestId: askId, answererId: ALICE, outcome: "answered", answeredBy: ALICE, answeredVia: "feishu" },
    ]);

    await client.callTool({
      name: "finish_task",
      arguments: { task_id: taskId, status: "completed", text: "Done: SQLite" },
    });
    await r.until(() => cardText(r.cardOf(cardId)).includes("Done: SQLite"), "the finished card");
    expect(formsOn(r.cardOf(cardId))).toEqual([]);
  });

  it("sends progress notifications while a call waits, naming who it waits for", async () => {
    const client = await r.mcp(r.token("Codex", [ALICE]));
    const messages: string[] = [];
    const result = (await client.callTool(
      { name: "ask_user_questions", arguments: { to: ALICE, questions: [QUESTION], wait_s: 0.3 } },
      undefined,
      { onprogress: (p) => messages.push(String(p.message)) },
    )) as ToolResult;
    expect(result.structuredContent?.status).toBe("pending");
    expect(messages.length).toBeGreaterThanOrEqual(2);
    expect(messages[0]).toBe("等待 Alice 在飞书回答");
  });

  it("asks on a new question card for `to`, and cancelling takes the form away", async () => {
    const token = r.token("Codex", [ALICE]);
    const asked = await call(token, "ask_user_questions", { to: ALICE, questions: [QUESTION], wait_s: 0 });
    const askId = String(asked.structuredContent?.ask_id);
    const cardId = await r.until(() => r.cardsIn(p2pChatId(ALICE))[0], "the question card");
    await r.until(() => formsOn(r.cardOf(cardId)).length === 1, "the form");
    expect(cardText(r.cardOf(cardId))).toContain("Codex 正在处理…");
    const cancelled = await call(token, "cancel_question", { ask_id: askId });
    expect(cancelled.structuredContent).toEqual({ status: "cancelled", ask_id: askId });
    await r.until(
      () => formsOn(r.cardOf(cardId)).length === 0 && cardText(r.cardOf(cardId)).includes("提问已结束"),
      "no form",
    );
  });

  it("reaches the answerer's WebSocket clients too, where an answer counts like one on the card", async () => {
    const alice = await r.connect(ALICE);
    const bob = await r.connect(BOB);
    const client = await r.mcp(r.token("Claude Code", [ALICE]));
    const waiting = client.callTool({
      name: "ask_user_questions",
      arguments: { to: ALICE, questions: [QUESTION], wait_s: 30 },
    });
    const frame = await r.until(
      () => alice.frames.find((f) => f.type === "ask_user_questions"),
      "the question frame",
    );
    expect(bob.frames.some((f) => f.type === "ask_user_questions")).toBe(false);
    alice.send({
      type: "ask_user_questions_result",
      sessionId: `agent:Claude Code:${ALICE}`,
      data: {
        requestId: frame.data.requestId,
        answers: [{ question: QUESTION.question, selectedLabels: ["Postgres"], customInput: null }],
      },
    });
    expect(((await waiting) as ToolResult).structuredContent).toMatchObject({
      status: "answered",
      answered_by: ALICE,
      answered_via: "websocket",
    });
    // The card's form goes away too: one answer, everywhere.
    const cardId = await r.until(() => r.cardsIn(p2pChatId(ALICE))[0], "the card");
    await r.until(() => formsOn(r.cardOf(cardId)).length === 0, "no form");
  });

  it("in a group, only the answerer's submit counts and the form names them", async () => {
    const token = r.token("Claude Code", [GROUP]);
    const missing = await call(token, "ask_user_questions", { to: GROUP, questions: [QUESTION] });
    expect(missing.isError).toBe(true);
    expect(textOf(missing)).toMatch(/answerer: required/);
    await call(token, "ask_user_questions", { to: GROUP, answerer: BOB, questions: [QUESTION], wait_s: 0 });
    const cardId = await r.until(() => r.cardsIn(GROUP)[0], "the group card");
    const card = await r.until(() => {
      const c = r.cardOf(cardId);
      return formsOn(c).length === 1 && c;
    }, "the form");
    expect(cardText(card)).toContain(`<at id=${BOB}></at>`);
    const byAlice = await r.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: submitValue(card),
      name: "ask0_submit",
      formValue: { ask0_q0: "0" },
    });
    expect(byAlice.toast?.content).toBe("仅任务发起人可以回答此问题");
    const byBob = await r.click({
      messageId: cardId,
      operatorOpenId: BOB,
      value: submitValue(card),
      name: "ask0_submit",
      formValue: { ask0_q0: "0" },
    });
    expect(byBob.toast?.content).toBe("已提交");
  });

  it("refuses whom the token does not allow, and shows nothing to anyone", async () => {
    const token = r.token("Claude Code", [ALICE]);
    const refused = await call(token, "start_task", { to: CAROL, title: "Hi" });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/^FORBIDDEN: agent "Claude Code" may not ask ou_carol/);
    const asked = await call(token, "ask_user_questions", {
      to: GROUP,
      answerer: CAROL,
      questions: [QUESTION],
    });
    expect(textOf(asked)).toMatch(/^FORBIDDEN/);
    await r.channel.idle();
    expect(r.emulator.messages.listMessages()).toEqual([]);
  });

  it("keeps one agent's tasks and questions from another", async () => {
    const mine = r.token("Claude Code", [ALICE]);
    const other = r.token("Intruder", [ALICE]);
    const task = await call(mine, "start_task", { to: ALICE, title: "Mine" });
    const ask = await call(mine, "ask_user_questions", { to: ALICE, questions: [QUESTION], wait_s: 0 });
    const taskId = String(task.structuredContent?.task_id);
    const askId = String(ask.structuredContent?.ask_id);
    expect(textOf(await call(other, "get_answers", { ask_id: askId, wait_s: 0 }))).toBe(
      `NOT_FOUND: no question ${askId}`,
    );
    expect(textOf(await call(other, "cancel_question", { ask_id: askId }))).toMatch(/^NOT_FOUND/);
    expect(textOf(await call(other, "report_progress", { task_id: taskId, step: "x" }))).toMatch(
      /^NOT_FOUND/,
    );
    expect(r.core.registry.get(askId)).toBeDefined();
  });

  it("rejects malformed tool input with a message naming the field", async () => {
    const token = r.token("Claude Code", [ALICE]);
    const five = await call(token, "ask_user_questions", { to: ALICE, questions: Array(5).fill(QUESTION) });
    expect(five.isError).toBe(true);
    expect(textOf(five)).toMatch(/questions/);
    const header = await call(token, "ask_user_questions", {
      to: ALICE,
      questions: [{ ...QUESTION, header: "A header far too long" }],
    });
    expect(textOf(header)).toMatch(/header must be at most 12 characters/);
    const twice = await call(token, "ask_user_questions", { to: ALICE, questions: [QUESTION, QUESTION] });
    expect(textOf(twice)).toMatch(/question texts must be unique/);
    const bad = await call(token, "start_task", { to: "alice@example.com", title: "x" });
    expect(textOf(bad)).toMatch(/open_id/);
    expect(r.core.registry.size).toBe(0);
  });
});

function textOf(result: ToolResult): string {
  const content = Array.isArray(result.content) ? result.content : [];
  const first: unknown = content[0];
  return typeof first === "object" && first !== null && "text" in first ? String(first.text) : "";
}
