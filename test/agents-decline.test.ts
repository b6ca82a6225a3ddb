import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Card } from "../src/cards/model.ts";
import { p2pChatId } from "../src/local/emulator/ids.ts";
import { auditForSession } from "../src/store/audit.ts";
import { sqliteSql } from "../src/store/sql.ts";
import { type AgentsRig, ALICE, BOB, QUESTION, startAgentsRig } from "./helpers/agents.ts";
import { cardText, formsOn } from "./helpers/feishu.ts";

/**
 * 拒绝回答 and 延长 on an outside agent's question (issue 25): the person asked may decline it — the agent's
 * waiting MCP call (official SDK client) and the HTTP API read status "declined" — or give it more time, on
 * the card (clicks through the emulator) and on the session page (the hub's frames), under the card's rules.
 */

type ToolResult = { structuredContent?: Record<string, unknown>; isError?: boolean };
type Frame = { type: string; data: Record<string, unknown> };

/** The callback value of the first button whose value says `act` (and, given, whose name is `name`). */
function buttonValue(card: Card, act: string, name?: string): Record<string, unknown> {
  let found: Record<string, unknown> | undefined;
  const walk = (node: unknown): void => {
    if (found || typeof node !== "object" || node === null) return;
    if (Array.isArray(node)) return node.forEach(walk);
    const record = node as Record<string, unknown>;
    if (record.tag === "button" && (name === undefined || record.name === name)) {
      const behaviors = Array.isArray(record.behaviors) ? record.behaviors : [];
      for (const behavior of behaviors as { value?: Record<string, unknown> }[])
        if (behavior.value?.act === act) found = behavior.value;
    }
    for (const value of Object.values(record)) walk(value);
  };
  walk(card);
  if (!found) throw new Error(`no ${act} button on the card`);
  return found;
}

describe("declining and extending an outside agent's question", () => {
  let r: AgentsRig;
  beforeEach(async () => {
    r = await startAgentsRig({ sessionPages: true });
  });
  afterEach(async () => {
    await r.stop();
  });

  async function askAlice(wait_s: number) {
    const token = r.token("Claude Code", [ALICE]);
    const client = await r.mcp(token);
    const started = (await client.callTool({
      name: "start_task",
      arguments: { to: ALICE, title: "Migrate the billing service" },
    })) as ToolResult;
    const taskId = String(started.structuredContent?.task_id);
    const cardId = await r.until(() => r.cardsIn(p2pChatId(ALICE))[0], "the task card");
    const waiting = client.callTool({
      name: "ask_user_questions",
      arguments: { task_id: taskId, questions: [QUESTION], wait_s },
    }) as Promise<ToolResult>;
    const card = await r.until(() => {
      const c = r.cardOf(cardId);
      return formsOn(c).length === 1 && c;
    }, "the form on the card");
    const ask = await r.until(
      () => r.core.registry.getPendingForSession(`agent:Claude Code:${ALICE}`)[0],
      "ask",
    );
    return { token, client, taskId, cardId, card, waiting, askId: ask.requestId };
  }

  it("拒绝回答 on the card: only the answerer, and the waiting MCP call reads status declined", async () => {
    const { token, client, cardId, card, waiting, askId } = await askAlice(30);
    expect(cardText(card)).toContain("拒绝回答");
    const decline = buttonValue(card, "decline", "ask0_decline");

    const byBob = await r.click({
      messageId: cardId,
      operatorOpenId: BOB,
      value: decline,
      name: "ask0_decline",
    });
    expect(byBob.toast?.content).toBe("仅任务发起人可以回答此问题");
    expect(r.core.registry.get(askId)).toBeDefined();

    const byAlice = await r.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: decline,
      name: "ask0_decline",
      formValue: {},
    });
    expect(byAlice.toast?.content).toBe("已拒绝回答");
    const result = await waiting;
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({
      status: "declined",
      ask_id: askId,
      declined_by: ALICE,
      declined_via: "feishu",
    });
    expect(String(result.structuredContent?.hint)).toMatch(/declined/);
    // The card says so, as the person's choice, not as a failure; the form is gone.
    await r.until(() => formsOn(r.cardOf(cardId)).length === 0 && true, "the form gone");
    await r.until(() => cardText(r.cardOf(cardId)).includes("已拒绝回答") && true, "the declined line");
    expect(cardText(r.cardOf(cardId))).not.toContain("问题已失效");
    expect(await auditForSession(sqliteSql(r.core.store.db), `agent:Claude Code:${ALICE}`)).toMatchObject([
      { requestId: askId, outcome: "declined", answeredBy: ALICE, answeredVia: "feishu" },
    ]);

    // get_answers and the HTTP API read the same result later.
    const again = (await client.callTool({
      name: "get_answers",
      arguments: { ask_id: askId, wait_s: 0 },
    })) as ToolResult;
    expect(again.structuredContent).toMatchObject({ status: "declined", declined_by: ALICE });
    const http = await fetch(`${r.httpUrl}/api/asks/${askId}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(await http.json()).toMatchObject({ status: "declined", ask_id: askId, declined_by: ALICE });
  });

  it("延长 15 分钟 on the agent's card moves its deadline; someone else's click does not", async () => {
    const { cardId, card, askId, waiting } = await askAlice(0.05);
    expect((await waiting).structuredContent).toMatchObject({ status: "pending" });
    expect(cardText(card)).toContain("延长 15 分钟");
    const before = r.core.registry.get(askId)?.expiresAt ?? 0;
    const extend = buttonValue(card, "extend");
    const byBob = await r.click({ messageId: cardId, operatorOpenId: BOB, value: extend });
    expect(byBob.toast?.content).toBe("仅任务发起人可以回答此问题");
    expect(r.core.registry.get(askId)?.expiresAt).toBe(before);
    const byAlice = await r.click({ messageId: cardId, operatorOpenId: ALICE, value: extend });
    expect(byAlice.toast?.content).toMatch(/^已延长，请在 .+ 前回答$/);
    expect(r.core.registry.get(askId)?.expiresAt).toBe(before + 15 * 60_000);
  });

  it("on the session page: the question offers 拒绝回答 and 延长, and a decline there reaches the agent", async () => {
    const { waiting, askId } = await askAlice(30);
    const sessionId = `agent:Claude Code:${ALICE}`;
    const alice = await r.connect(ALICE);
    alice.send({ type: "subscribe", sessionId });
    const frames = alice.frames as Frame[];
    const first = await r.until(
      () => frames.find((f) => f.type === "ask_user_questions" && f.data.requestId === askId),
      "the question on the page",
    );
    expect(first.data).toMatchObject({ declinable: true, canExtend: true });

    alice.send({ type: "extend", sessionId });
    const moved = await r.until(
      () => frames.filter((f) => f.type === "ask_user_questions" && f.data.requestId === askId)[1],
      "the question again, extended",
    );
    expect(moved.data.expiresAt).toBe(Number(first.data.expiresAt) + 15 * 60_000);

    alice.send({ type: "ask_user_questions_decline", sessionId, data: { requestId: askId } });
    const result = await waiting;
    expect(result.structuredContent).toMatchObject({
      status: "declined",
      declined_by: ALICE,
      declined_via: "websocket",
    });
    const withdrawn = await r.until(
      () => frames.find((f) => f.type === "ask_user_questions_cancelled"),
      "the question withdrawn",
    );
    expect(withdrawn.data).toEqual({ requestId: askId, reason: "declined" });
    alice.close();
  });

  it("keeps 拒绝回答 for outside agents: the bot's own questions cannot be declined from the page", async () => {
    const { askId, waiting } = await askAlice(0.05);
    await waiting;
    // The same registry holds the bot's own asks; one without `declinable` is refused, whoever asks.
    const own = await r.core.registry.register({
      sessionId: "web-x",
      runId: "run-x",
      answererId: ALICE,
      questions: [QUESTION],
    });
    const alice = await r.connect(ALICE);
    alice.send({
      type: "ask_user_questions_decline",
      sessionId: "web-x",
      data: { requestId: own.requestId },
    });
    const refused = await r.until(() => (alice.frames as Frame[]).find((f) => f.type === "error"), "error");
    expect(refused.data).toMatchObject({ code: "forbidden", requestId: own.requestId });
    expect(r.core.registry.get(own.requestId)).toBeDefined();
    expect(r.core.registry.get(askId)?.declinable).toBe(true);
    alice.close();
  });
});
