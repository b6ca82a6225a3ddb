import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { p2pChatId } from "../src/local/emulator/ids.ts";
import { type AgentsRig, ALICE, QUESTION, startAgentsRig, submitValue } from "./helpers/agents.ts";
import { formsOn } from "./helpers/feishu.ts";

/**
 * A client whose own tool timeout is shorter than wait_s (issue 31): it gives up, the form stays on the card,
 * and the model never saw the ask id. The question must not be orphaned: the client's
 * `notifications/cancelled` (on a POST of its own, /mcp being stateless) ends the wait, asking the same again
 * joins the open form, and an answer given meanwhile comes back.
 */

type ToolResult = { structuredContent?: Record<string, unknown>; isError?: boolean };

const OTHER = { ...QUESTION, question: "Which cache should the service use?", header: "Cache" };

describe("questions a client's timeout cut off", () => {
  let r: AgentsRig;
  beforeEach(async () => {
    r = await startAgentsRig();
  });
  afterEach(async () => {
    await r.stop();
  });

  /** Raw JSON-RPC over POST /mcp, as a client without the SDK sends it; the response body as text. */
  const post = (token: string, body: unknown) =>
    fetch(`${r.httpUrl}/mcp`, {
      method: "POST",
      headers: {
        Authorization: `Bearer ${token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify(body),
    });
  const toolCall = (id: number, name: string, args: Record<string, unknown>) => ({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name, arguments: args },
  });

  it("ends a waiting call when its client cancels the request id on another POST", async () => {
    const token = r.token("Claude Code", [ALICE]);
    const waiting = await post(
      token,
      toolCall(7, "ask_user_questions", { to: ALICE, questions: [QUESTION], wait_s: 300 }),
    );
    expect(waiting.status).toBe(200);
    const cardId = await r.until(() => r.cardsIn(p2pChatId(ALICE))[0], "the question card");
    await r.until(() => formsOn(r.cardOf(cardId)).length === 1, "the form");
    // Another client (another token) with the same request id cancels nothing of this one's.
    const stranger = await post(r.token("Codex", [ALICE]), {
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: 7, reason: "timeout" },
    });
    expect(stranger.status).toBe(202);
    const cancel = await post(token, {
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: 7, reason: "MCP error -32001: Request timed out" },
    });
    expect(cancel.status).toBe(202);
    // The 300 s wait ends now: the stream closes with the pending result (a client that left ignores it).
    const body = await waiting.text();
    expect(body).toContain('\\"status\\":\\"pending\\"');
    // The question itself stays open on the card.
    expect(formsOn(r.cardOf(cardId))).toHaveLength(1);
  });

  /** An ask whose call the SDK client's own timeout cuts; it sends notifications/cancelled, as Claude Code does. */
  const askCutOff = async (client: Awaited<ReturnType<AgentsRig["mcp"]>>, args: Record<string, unknown>) =>
    expect(
      client.callTool({ name: "ask_user_questions", arguments: { wait_s: 300, ...args } }, undefined, {
        timeout: 300,
      }),
    ).rejects.toThrow(/timed out/i);
  const formCard = (cardId: string) =>
    r.until(() => {
      const c = r.cardOf(cardId);
      return formsOn(c).length === 1 && c;
    }, "the form");

  it("joins the open form when the same questions are asked again: the same id, no second form", async () => {
    const client = await r.mcp(r.token("Claude Code", [ALICE]));
    await askCutOff(client, { to: ALICE, questions: [QUESTION] });
    const cardId = await r.until(() => r.cardsIn(p2pChatId(ALICE))[0], "the question card");
    const card = await formCard(cardId);

    const again = (await client.callTool({
      name: "ask_user_questions",
      arguments: { to: ALICE, questions: [QUESTION], wait_s: 0 },
    })) as ToolResult;
    const askId = String(again.structuredContent?.ask_id);
    expect(again.structuredContent).toMatchObject({ status: "pending" });
    // The pending result tells the model how to get the answer later.
    expect(again.structuredContent?.hint).toContain(`get_answers with ask_id "${askId}"`);
    expect(r.cardsIn(p2pChatId(ALICE))).toEqual([cardId]);
    expect(formsOn(r.cardOf(cardId))).toHaveLength(1);

    // Its get_answers is cut off too; Alice answers while nobody waits; the next get_answers has it.
    await expect(
      client.callTool({ name: "get_answers", arguments: { ask_id: askId, wait_s: 300 } }, undefined, {
        timeout: 300,
      }),
    ).rejects.toThrow(/timed out/i);
    await r.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: submitValue(card),
      name: "ask0_submit",
      formValue: { ask0_q0: "1" },
    });
    const later = (await client.callTool({
      name: "get_answers",
      arguments: { ask_id: askId, wait_s: 0 },
    })) as ToolResult;
    expect(later.structuredContent).toMatchObject({
      status: "answered",
      answers: [{ selectedLabels: ["SQLite"] }],
    });
  });

  it("gives the answer given after the client left when the model, which never saw the id, asks again", async () => {
    const client = await r.mcp(r.token("Claude Code", [ALICE]));
    await askCutOff(client, { to: ALICE, questions: [QUESTION] });
    const cardId = await r.until(() => r.cardsIn(p2pChatId(ALICE))[0], "the question card");
    const clicked = await r.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: submitValue(await formCard(cardId)),
      name: "ask0_submit",
      formValue: { ask0_q0: "0" },
    });
    expect(clicked.toast?.content).toBe("已提交");

    const answered = (await client.callTool({
      name: "ask_user_questions",
      arguments: { to: ALICE, questions: [QUESTION], wait_s: 0 },
    })) as ToolResult;
    expect(answered.structuredContent).toMatchObject({
      status: "answered",
      answers: [{ selectedLabels: ["Postgres"] }],
    });
    expect(r.cardsIn(p2pChatId(ALICE))).toEqual([cardId]);
    // Once handed over, the same questions are a new question.
    const fresh = (await client.callTool({
      name: "ask_user_questions",
      arguments: { to: ALICE, questions: [QUESTION], wait_s: 0 },
    })) as ToolResult;
    expect(fresh.structuredContent?.ask_id).not.toBe(answered.structuredContent?.ask_id);
    expect(fresh.structuredContent?.status).toBe("pending");
  });

  it("keeps different questions, and the same question on another task, apart", async () => {
    const client = await r.mcp(r.token("Codex", [ALICE]));
    const ask = async (args: Record<string, unknown>) =>
      String(
        (
          (await client.callTool({
            name: "ask_user_questions",
            arguments: { wait_s: 0, ...args },
          })) as ToolResult
        ).structuredContent?.ask_id,
      );
    const start = async (title: string) =>
      String(
        ((await client.callTool({ name: "start_task", arguments: { to: ALICE, title } })) as ToolResult)
          .structuredContent?.task_id,
      );
    const one = await start("One");
    const two = await start("Two");
    const first = await ask({ task_id: one, questions: [QUESTION] });
    expect(await ask({ task_id: one, questions: [QUESTION] })).toBe(first);
    expect(await ask({ task_id: one, questions: [OTHER] })).not.toBe(first);
    expect(await ask({ task_id: two, questions: [QUESTION] })).not.toBe(first);
    expect(await ask({ to: ALICE, questions: [QUESTION] })).not.toBe(first);
  });
});
