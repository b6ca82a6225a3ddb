import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { p2pChatId } from "../src/local/emulator/ids.ts";
import { type AgentsRig, ALICE, QUESTION, startAgentsRig, submitValue } from "./helpers/agents.ts";
import { cardText, formsOn } from "./helpers/feishu.ts";

/** The plain HTTP API: the same operations as the MCP tools, for agents that do not speak MCP. */

describe("HTTP API for agents", () => {
  let r: AgentsRig;
  let token: string;
  beforeEach(async () => {
    r = await startAgentsRig();
    token = r.token("CI bot", [ALICE]);
  });
  afterEach(async () => {
    await r.stop();
  });

  const api = async (method: string, path: string, body?: unknown, as = token) => {
    const response = await fetch(`${r.httpUrl}/api${path}`, {
      method,
      headers: { authorization: `Bearer ${as}`, "content-type": "application/json" },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  it("starts a task, reports a step, asks, long-polls the answer and finishes", async () => {
    const started = await api("POST", "/tasks", { to: ALICE, title: "Nightly release" });
    expect(started.status).toBe(201);
    const taskId = String(started.body.task_id);
    const step = await api("POST", `/tasks/${taskId}/steps`, { step: "Build", status: "done" });
    expect(step.body).toEqual({ task_id: taskId, steps: 1 });
    const asked = await api("POST", "/asks", { task_id: taskId, questions: [QUESTION], reason: "Pick one" });
    expect(asked.status).toBe(201);
    expect(asked.body.status).toBe("pending");
    const askId = String(asked.body.ask_id);

    const cardId = await r.until(() => r.cardsIn(p2pChatId(ALICE))[0], "the card");
    const card = await r.until(() => {
      const c = r.cardOf(cardId);
      return formsOn(c).length === 1 && cardText(c).includes("✅ Build") && c;
    }, "step and form");
    const polling = api("GET", `/asks/${askId}?wait=30`);
    await r.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: submitValue(card),
      name: "ask0_submit",
      formValue: { ask0_q0: "0" },
    });
    const answered = await polling;
    expect(answered.body).toMatchObject({ status: "answered", answers: [{ selectedLabels: ["Postgres"] }] });

    const finished = await api("POST", `/tasks/${taskId}/finish`, { status: "failed", text: "Deploy broke" });
    expect(finished.body).toEqual({ task_id: taskId, status: "failed" });
    await r.until(() => cardText(r.cardOf(cardId)).includes("Deploy broke"), "the failed card");
    const again = await api("POST", `/tasks/${taskId}/steps`, { step: "Late" });
    expect(again).toMatchObject({ status: 409, body: { error: { code: "CONFLICT" } } });
  });

  it("DELETE withdraws a question; GET without wait answers at once", async () => {
    const asked = await api("POST", "/asks", { to: ALICE, questions: [QUESTION] });
    const askId = String(asked.body.ask_id);
    expect((await api("GET", `/asks/${askId}`)).body.status).toBe("pending");
    expect((await api("DELETE", `/asks/${askId}`)).body).toEqual({ status: "cancelled", ask_id: askId });
    expect((await api("GET", `/asks/${askId}?wait=5`)).body.status).toBe("cancelled");
  });

  it("errors are {error:{code,message}} naming the field", async () => {
    const bad = await api("POST", "/asks", {
      to: ALICE,
      questions: [{ ...QUESTION, options: [QUESTION.options[0]] }],
    });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({
      error: { code: "INVALID_INPUT", message: "questions.0.options: options must have at least 2 items" },
    });
    expect((await api("GET", "/asks/nope?wait=abc")).body).toMatchObject({
      error: { code: "INVALID_INPUT" },
    });
    expect((await api("GET", "/asks/nope")).status).toBe(404);
    expect((await api("POST", "/tasks", { to: "ou_stranger", title: "x" })).status).toBe(403);
  });

  it("refuses metadata nested 5,000 deep with a 400 before any task exists, leaving nothing behind", async () => {
    // Built as text: the test's own JSON.stringify would overflow on it.
    const deep = `${'{"a":'.repeat(5000)}1${"}".repeat(5000)}`;
    const body = `{"to":"${ALICE}","questions":${JSON.stringify([QUESTION])},"metadata":${deep}}`;
    const response = await fetch(`${r.httpUrl}/api/asks`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body,
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: { code: "INVALID_INPUT", message: "metadata: metadata must be at most 8 levels deep" },
    });
    const big = await api("POST", "/asks", {
      to: ALICE,
      questions: [QUESTION],
      metadata: { x: "y".repeat(20_000) },
    });
    expect(big).toMatchObject({ status: 400, body: { error: { code: "INVALID_INPUT" } } });
    // Nothing recorded that a restart could bring back as a card stuck at 执行中, and nothing shown.
    const rows = r.core.store.db.prepare("SELECT COUNT(*) AS n FROM agent_tasks").get() as { n: number };
    expect(rows.n).toBe(0);
    expect(r.tasks.tasksOf(`agent:CI bot:${ALICE}`)).toEqual([]);
    expect(r.cardsIn(p2pChatId(ALICE))).toEqual([]);
    // Metadata within the bounds still goes through.
    const fine = await api("POST", "/asks", {
      to: ALICE,
      questions: [QUESTION],
      metadata: { a: { b: { c: 1 } } },
    });
    expect(fine.status).toBe(201);
  });
});
