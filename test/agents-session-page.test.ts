import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { signToken } from "../src/auth/token.ts";
import { p2pChatId } from "../src/local/emulator/ids.ts";
import { SESSION_COOKIE } from "../src/web/cookie.ts";
import {
  type AgentsRig,
  ALICE,
  BOB,
  CAROL,
  GROUP,
  QUESTION,
  RIG_AUTH_SECRET,
  startAgentsRig,
} from "./helpers/agents.ts";

/**
 * An outside agent's task on the session page (会话详情): the page's API and the WebSocket hub show it like
 * the bot's own run — title naming the agent, its steps and status — read-only, and its question answerable
 * by the answerer only.
 */

describe("session page for an outside agent's task", () => {
  let r: AgentsRig;
  let token: string;
  beforeEach(async () => {
    r = await startAgentsRig({ sessionPages: true });
    token = r.token("CI bot", [ALICE, BOB, GROUP]);
  });
  afterEach(async () => {
    await r.stop();
  });

  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${r.httpUrl}/api${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return (await response.json()) as Record<string, unknown>;
  };
  const page = async (userId: string, path: string) => {
    const cookie = `${SESSION_COOKIE}=${signToken(RIG_AUTH_SECRET, userId, Date.now() + 60_000)}`;
    const response = await fetch(`${r.httpUrl}${path}`, { headers: { cookie } });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  type Frame = { type: string; data: Record<string, unknown> };
  const last = (frames: Frame[], type: string) => frames.filter((f) => f.type === type).at(-1);

  it("shows the task's title, steps and status, and takes the answerer's answer over the socket", async () => {
    const taskId = String((await api("POST", "/tasks", { to: ALICE, title: "Nightly release" })).task_id);
    await api("POST", `/tasks/${taskId}/steps`, { step: "Build", status: "done" });
    const sessionId = `agent:CI bot:${ALICE}`;
    const encoded = encodeURIComponent(sessionId);
    // The card's 会话详情 link opens this task's page.
    const cardId = await r.until(() => r.cardsIn(p2pChatId(ALICE))[0], "the card");
    const link = `/sessions/${encoded}/runs/${encodeURIComponent(taskId)}`;
    await r.until(() => JSON.stringify(r.cardOf(cardId)).includes(link), "the card's link to the page");
    const html = await fetch(`${r.httpUrl}${link}`);
    expect(html.headers.get("content-type")).toContain("text/html");

    expect(await page(ALICE, `/api/sessions/${encoded}`)).toMatchObject({
      status: 200,
      body: { id: sessionId, title: "CI bot 的任务", chatType: "private" },
    });
    const history = await page(ALICE, `/api/sessions/${encoded}/runs`);
    expect(history.body).toMatchObject({
      activeRunId: taskId,
      runs: [{ id: taskId, title: "Nightly release" }],
    });
    expect((await page(ALICE, `/api/sessions/${encoded}/runs/${taskId}`)).body).toMatchObject({
      run: { id: taskId, steps: [{ title: "Build", status: "done" }] },
      active: true,
    });
    // Someone else learns nothing, the same 403 as for a session that does not exist.
    expect((await page(BOB, `/api/sessions/${encoded}`)).status).toBe(403);
    expect((await page(BOB, `/api/sessions/${encoded}/runs/${taskId}`)).status).toBe(403);
    expect((await page(ALICE, `/api/sessions/${encodeURIComponent("agent:CI bot:ou_none")}`)).status).toBe(
      403,
    );

    const alice = await r.connect(ALICE);
    alice.send({ type: "subscribe", sessionId });
    const snapshot = await r.until(() => last(alice.frames, "session_snapshot"), "the snapshot");
    expect(snapshot.data).toMatchObject({
      active: true,
      run: { id: taskId, input: "Nightly release", status: "running", steps: [{ title: "Build" }] },
      queued: [],
    });
    const bob = await r.connect(BOB);
    bob.send({ type: "subscribe", sessionId });
    await r.until(() => last(bob.frames, "error"), "bob refused");
    expect(last(bob.frames, "error")?.data).toMatchObject({ code: "forbidden" });
    // Read-only: the page cannot stop an agent's task.
    alice.send({ type: "cancel", sessionId });
    await r.until(() => last(alice.frames, "error"), "cancel refused");
    expect(last(alice.frames, "error")?.data).toMatchObject({ code: "forbidden" });

    // A new step reaches the subscribed page.
    await api("POST", `/tasks/${taskId}/steps`, { step: "Deploy" });
    await r.until(() => {
      const run = last(alice.frames, "session_snapshot")?.data.run as { steps: unknown[] } | undefined;
      return run?.steps.length === 2;
    }, "the second step on the page");

    const asked = await api("POST", "/asks", { task_id: taskId, questions: [QUESTION] });
    const askId = String(asked.ask_id);
    const frame = await r.until(() => last(alice.frames, "ask_user_questions"), "the question on the page");
    expect(frame.data).toMatchObject({ requestId: askId });
    alice.send({
      type: "ask_user_questions_result",
      sessionId,
      data: { requestId: askId, answers: [{ questionIndex: 0, selectedLabels: ["SQLite"] }] },
    });
    await r.until(() => last(alice.frames, "ask_user_questions_accepted"), "accepted");
    expect(await api("GET", `/asks/${askId}`)).toMatchObject({
      status: "answered",
      answers: [{ selectedLabels: ["SQLite"] }],
    });

    await api("POST", `/tasks/${taskId}/finish`, { status: "completed", text: "Shipped" });
    await r.until(
      () => (last(alice.frames, "session_snapshot")?.data.active === false ? true : undefined),
      "the ended task on the page",
    );
    expect(last(alice.frames, "session_snapshot")?.data.run).toMatchObject({ status: "completed" });
    alice.close();
    bob.close();
  });

  it("in a group only the question's answerer may view and answer", async () => {
    const asked = await api("POST", "/asks", { to: GROUP, answerer: BOB, questions: [QUESTION] });
    const sessionId = `agent:CI bot:${GROUP}`;
    const encoded = encodeURIComponent(sessionId);
    expect((await page(BOB, `/api/sessions/${encoded}`)).body).toMatchObject({ chatType: "group" });
    expect((await page(CAROL, `/api/sessions/${encoded}`)).status).toBe(403);
    const bob = await r.connect(BOB);
    bob.send({ type: "subscribe", sessionId });
    const subscribed = await r.until(() => last(bob.frames, "subscribed"), "subscribed");
    expect(subscribed.data).toEqual({ canAnswer: true, canCancel: false });
    await r.until(
      () => bob.frames.find((f) => f.type === "ask_user_questions" && f.data.requestId === asked.ask_id),
      "the question for bob",
    );
    bob.close();
  });
});
