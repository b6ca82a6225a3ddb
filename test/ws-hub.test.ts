import { once } from "node:events";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { AskAnswer } from "../src/asks/schema.ts";
import { signToken } from "../src/auth/token.ts";
import type { SessionInfo } from "../src/domain/types.ts";
import { createDemoAgent, createDemoTools, DEMO_QUESTIONS } from "../src/harness/agents/demo.ts";
import { MAX_FRAME_BYTES } from "../src/ws/protocol.ts";
import {
  createScriptedAskAgent,
  DEFAULT_ASK,
  eventually,
  type ScriptedAskAgent,
  startRun,
  startTestServer,
  type TestClient,
  type TestServer,
  type TestServerOptions,
  waitForRun,
} from "./helpers/harness.ts";

const ALICE = "ou_alice";
const BOB = "ou_bob";

const [FRAMEWORK, FEATURES] = DEFAULT_ASK.questions.map((question) => question.question) as [string, string];

const ANSWERS: AskAnswer[] = [
  { question: FRAMEWORK, selectedLabels: ["React"], customInput: null },
  { question: FEATURES, selectedLabels: ["Dark mode", "PDF export"], customInput: null },
];

const OTHER_ANSWERS: AskAnswer[] = [
  { question: FRAMEWORK, selectedLabels: ["Vue 3 (Recommended)"], customInput: null },
  { question: FEATURES, selectedLabels: ["i18n"], customInput: null },
];

function answerFrame(sessionId: string, requestId: string, answers: unknown = ANSWERS) {
  return { type: "ask_user_questions_result", sessionId, data: { requestId, answers } };
}

const servers: TestServer[] = [];

async function start(options: TestServerOptions = {}): Promise<TestServer> {
  const server = await startTestServer(options);
  servers.push(server);
  return server;
}

afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(servers.splice(0).map((server) => server.stop()));
});

/** Alice has `connections` sockets open, starts a run, and every socket has received its one ask. */
async function aliceIsAsked(options: TestServerOptions & { connections?: number } = {}) {
  const agent: ScriptedAskAgent = createScriptedAskAgent();
  const server = await start({ agent, ...options });
  const session: SessionInfo = await server.createSession(ALICE);
  const clients: TestClient[] = [];
  for (let index = 0; index < (options.connections ?? 1); index += 1)
    clients.push(await server.connect(ALICE));
  const run = await startRun(server.core, session, ALICE);
  const asks = await Promise.all(clients.map((client) => client.next("ask_user_questions")));
  const [client] = clients as [TestClient];
  const [ask] = asks as [(typeof asks)[number]];
  return { server, agent, session, run, clients, client, asks, ask, requestId: ask.data.requestId };
}

describe("WsHub", () => {
  describe("upgrade", () => {
    it("refuses an upgrade without a token with HTTP 401", async () => {
      const server = await start();
      expect(await server.refusedStatus({ token: null })).toBe(401);
      expect(server.core.hub.connectionCount()).toBe(0);
    });

    it("refuses a token signed with another secret, or whose payload was altered, with HTTP 401", async () => {
      const server = await start();
      const foreign = signToken("some-other-secret", ALICE, Date.now() + 60_000);
      const [version, , signature] = server.tokenFor(ALICE).split(".");
      const forgedPayload = Buffer.from(JSON.stringify({ sub: BOB, exp: Date.now() + 60_000 })).toString(
        "base64url",
      );
      expect(await server.refusedStatus({ token: foreign })).toBe(401);
      expect(await server.refusedStatus({ token: `${version}.${forgedPayload}.${signature}` })).toBe(401);
      expect(await server.refusedStatus({ bearer: foreign })).toBe(401);
      expect(server.core.hub.connectionCount()).toBe(0);
    });

    it("refuses an expired token with HTTP 401", async () => {
      const server = await start();
      const expired = signToken(server.secret, ALICE, Date.now() - 1);
      expect(await server.refusedStatus({ token: expired })).toBe(401);
    });

    it("answers 404 to an upgrade on any path but /ws, even with a valid token", async () => {
      const server = await start();
      const token = server.tokenFor(ALICE);
      expect(await server.refusedStatus({ token, path: "/other" })).toBe(404);
      expect(await server.refusedStatus({ token, path: "/ws/extra" })).toBe(404);
    });

    it("accepts a valid token in the query string or as a Bearer header", async () => {
      const server = await start();
      const viaQuery = await server.connect({ token: server.tokenFor(ALICE) });
      const viaHeader = await server.connect({ bearer: server.tokenFor(ALICE) });
      await Promise.all([viaQuery.sync(), viaHeader.sync()]);
      expect(server.core.hub.connectionCount()).toBe(2);
      expect(server.core.hub.canReach({ userId: ALICE })).toBe(true);
    });

    it("refuses a token revoked since it was issued, and answers 503 while the revocations cannot be read", async () => {
      const server = await start();
      const token = signToken(server.secret, ALICE, Date.now() + 60_000, Date.now() - 1_000, 0);
      // The store is away (Postgres down, a locked file): nobody gets in unchecked, and nothing crashes.
      const away = vi.spyOn(server.core.revocations, "revocation").mockRejectedValue(new Error("store away"));
      expect(await server.refusedStatus({ token })).toBe(503);
      away.mockRestore();
      await server.core.revocations.revoke(ALICE, Date.now());
      expect(await server.refusedStatus({ token })).toBe(401);
      expect(server.core.hub.connectionCount()).toBe(0);
    });
  });

  describe("asks", () => {
    it("sends an ask to every connection of the run's sender with one requestId, and nothing to anyone else", async () => {
      const agent = createScriptedAskAgent();
      const server = await start({ agent });
      const session = await server.createSession(ALICE);
      const [alice1, alice2, bob] = await Promise.all([
        server.connect(ALICE),
        server.connect(ALICE),
        server.connect(BOB),
      ]);
      const run = await startRun(server.core, session, ALICE);

      const [first, second] = await Promise.all([
        alice1.next("ask_user_questions"),
        alice2.next("ask_user_questions"),
      ]);
      expect(first.sessionId).toBe(session.id);
      expect(first.data).toMatchObject({ questions: DEFAULT_ASK.questions, metadata: DEFAULT_ASK.metadata });
      expect(second.data).toEqual(first.data);
      expect(server.core.registry.get(first.data.requestId)).toMatchObject({
        answererId: ALICE,
        runId: run.id,
      });

      await bob.sync();
      expect(bob.pending()).toEqual([]);
      expect(bob.received.filter((frame) => frame.type !== "pong")).toEqual([]);
    });

    it("keeps the ask through a disconnect and re-sends it on subscribe; answering it completes the run", async () => {
      const { server, agent, session, run, client, ask, requestId } = await aliceIsAsked();

      await client.close();
      await eventually(() => expect(server.core.hub.connectionCount()).toBe(0));
      expect(server.core.registry.get(requestId)).toBeDefined();
      expect(server.core.runner.activeRun(session.id)?.status).toBe("running");
      expect(agent.results).toEqual([]);

      const again = await server.connect(ALICE);
      again.send({ type: "subscribe", sessionId: session.id });
      expect((await again.next("subscribed")).data).toEqual({ canAnswer: true, canCancel: true });
      expect((await again.next("session_snapshot")).data).toMatchObject({
        active: true,
        run: { id: run.id },
      });
      const resent = await again.next("ask_user_questions");
      expect(resent.data).toEqual(ask.data);

      again.send(answerFrame(session.id, requestId));
      await again.next("ask_user_questions_accepted", (frame) => frame.data.requestId === requestId);
      expect(JSON.parse(await agent.result())).toEqual({ answers: ANSWERS });
      const finished = await waitForRun(server.core, run.id);
      expect(finished.status).toBe("completed");
      expect(JSON.parse(finished.text ?? "")).toEqual({ answers: ANSWERS });
    });

    it("says 'unavailable' when the database refuses an answer or a 延长, keeps the question open, and takes the answer sent again", async () => {
      const { server, agent, session, client, requestId } = await aliceIsAsked();
      const full = () => Promise.reject(new Error("SQLITE_FULL: database or disk is full"));
      const complete = vi.spyOn(server.core.registry, "complete").mockImplementationOnce(full);
      client.send(answerFrame(session.id, requestId));
      const refused = await client.next("error");
      expect(refused.data).toMatchObject({ code: "unavailable", requestId });
      expect(server.core.registry.get(requestId)).toBeDefined();
      vi.spyOn(server.core.registry, "extend").mockImplementationOnce(full);
      client.send({ type: "extend", sessionId: session.id });
      expect((await client.next("error")).data).toMatchObject({ code: "unavailable", action: "extend" });
      complete.mockRestore();
      client.send(answerFrame(session.id, requestId));
      await client.next("ask_user_questions_accepted", (frame) => frame.data.requestId === requestId);
      expect(JSON.parse(await agent.result())).toEqual({ answers: ANSWERS });
    });

    it("accepts the first answer, withdraws the ask from every connection, and refuses a second answer as stale", async () => {
      const { server, agent, session, run, clients, requestId } = await aliceIsAsked({ connections: 2 });
      const [answering, other] = clients as [TestClient, TestClient];

      answering.send(answerFrame(session.id, requestId));
      const accepted = await answering.next("ask_user_questions_accepted");
      expect(accepted.data).toEqual({ requestId });
      for (const client of clients) {
        const withdrawn = await client.next("ask_user_questions_cancelled");
        expect(withdrawn).toMatchObject({ sessionId: session.id, data: { requestId } });
        expect(withdrawn.data.reason).toBe("answered via websocket");
      }
      // The winner hears that it won before it hears that the question is gone.
      const order = answering.received
        .map((frame) => frame.type)
        .filter((type) => type.startsWith("ask_user_questions_"));
      expect(order.slice(-2)).toEqual(["ask_user_questions_accepted", "ask_user_questions_cancelled"]);

      other.send(answerFrame(session.id, requestId, OTHER_ANSWERS));
      const stale = await other.next("error");
      expect(stale.data).toMatchObject({ code: "stale_request", requestId });
      await Promise.all([answering.sync(), other.sync()]);
      expect(other.pending("ask_user_questions_accepted")).toEqual([]);
      expect(answering.pending()).toEqual([]);

      const finished = await waitForRun(server.core, run.id);
      expect(agent.results).toEqual([JSON.stringify({ answers: ANSWERS })]);
      expect(JSON.parse(finished.text ?? "")).toEqual({ answers: ANSWERS });
      const toolMessages = (await server.core.store.history(session.id)).filter(
        (message) => message.role === "tool",
      );
      expect(toolMessages).toHaveLength(1);
    });

    it("rejects invalid answers with invalid_answers and keeps the ask pending until a valid answer arrives", async () => {
      const { server, agent, session, run, client, requestId } = await aliceIsAsked();
      const invalid: [unknown, RegExp][] = [
        [[{ ...ANSWERS[0], selectedLabels: ["Angular"] }, ANSWERS[1]], /"Angular" is not an option/],
        // The card's toast text, naming the question (asks/answers.ts unansweredReason).
        [
          [{ question: FRAMEWORK, selectedLabels: [], customInput: null }, ANSWERS[1]],
          /^第 1 题「Framework」：请至少选择一项或填写其他$/,
        ],
        [
          [ANSWERS[0], { question: FEATURES, selectedLabels: [], customInput: "   " }],
          /^第 2 题「Features」：请至少选择一项或填写其他$/,
        ],
        [[{ ...ANSWERS[0], selectedLabels: ["React", "Vue 3 (Recommended)"] }, ANSWERS[1]], /one choice/],
        [[ANSWERS[0]], /one per question/],
        ["React", /must be an array/],
      ];
      for (const [answers, message] of invalid) {
        client.send(answerFrame(session.id, requestId, answers));
        const error = await client.next("error");
        expect(error.data).toMatchObject({ code: "invalid_answers", requestId });
        expect(error.data.message).toMatch(message);
      }
      await client.sync();
      expect(client.pending()).toEqual([]);
      expect(server.core.registry.get(requestId)).toBeDefined();
      expect(agent.results).toEqual([]);

      client.send(answerFrame(session.id, requestId));
      await client.next("ask_user_questions_accepted");
      expect(JSON.parse(await agent.result())).toEqual({ answers: ANSWERS });
      expect((await waitForRun(server.core, run.id)).status).toBe("completed");
    });

    it("times out an unanswered ask: the client is told 'timeout' and the tool result says the user did not respond", async () => {
      const agent = createScriptedAskAgent();
      const askTimeoutMs = 1_000;
      const server = await start({ agent, askTimeoutMs });
      const session = await server.createSession(ALICE);
      const client = await server.connect(ALICE);
      // Only the registry's timer is faked; sockets and the fixture's waits run on real time.
      vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
      const run = await startRun(server.core, session, ALICE);
      const ask = await client.next("ask_user_questions");
      const { requestId } = ask.data;
      expect(ask.data.expiresAt - (server.core.registry.get(requestId)?.createdAt ?? 0)).toBe(askTimeoutMs);

      // The deadline is absolute (createdAt + timeout, on the real clock) and the ask's row is written before
      // its timer is set, so the timer's delay is shorter by however long that write took on a busy machine:
      // "not before" is checked with a margin for it, "at the deadline" exactly.
      const margin = 200;
      await vi.advanceTimersByTimeAsync(askTimeoutMs - margin);
      await client.sync();
      expect(client.pending("ask_user_questions_cancelled")).toEqual([]);
      expect(server.core.registry.get(requestId)).toBeDefined();

      await vi.advanceTimersByTimeAsync(margin);
      const withdrawn = await client.next("ask_user_questions_cancelled");
      expect(withdrawn.data).toEqual({ requestId, reason: "timeout" });
      expect(await agent.result()).toBe(JSON.stringify({ error: "User did not respond within timeout" }));
      expect((await waitForRun(server.core, run.id)).status).toBe("completed");

      client.send(answerFrame(session.id, requestId));
      expect((await client.next("error")).data).toMatchObject({ code: "stale_request", requestId });
    });

    it("answers at once that it cannot ask when the run's sender has no connection", async () => {
      const agent = createScriptedAskAgent();
      // A 60 s ask timeout: had the ask been registered, the run could not finish within waitForRun's bound.
      const server = await start({ agent, askTimeoutMs: 60_000 });
      const bob = await server.connect(BOB);
      const alice = await server.connect(ALICE);
      await alice.close();
      await eventually(() => expect(server.core.hub.connectionCount()).toBe(1));
      const registered = vi.fn();
      server.core.registry.on("registered", registered);

      const session = await server.createSession(ALICE);
      const run = await startRun(server.core, session, ALICE);
      const finished = await waitForRun(server.core, run.id, 2_000);

      expect(agent.results).toEqual([JSON.stringify({ error: "当前通道无法向用户提问" })]);
      expect(finished.status).toBe("completed");
      expect(registered).not.toHaveBeenCalled();
      await bob.sync();
      expect(bob.pending()).toEqual([]);
    });
  });

  describe("cancel", () => {
    it("lets the run's sender cancel the session: the ask is withdrawn and the run ends cancelled", async () => {
      const { server, agent, session, run, client, requestId } = await aliceIsAsked();

      client.send({ type: "cancel", sessionId: session.id });
      const withdrawn = await client.next("ask_user_questions_cancelled");
      expect(withdrawn.data).toEqual({ requestId, reason: "Session cancelled" });
      expect((await client.next("cancelled")).data).toEqual({ runId: run.id });

      const finished = await waitForRun(server.core, run.id);
      expect(finished.status).toBe("cancelled");
      expect(await agent.result()).toBe(JSON.stringify({ error: "Session cancelled" }));
      expect(server.core.registry.size).toBe(0);
      const tool = (await server.core.store.history(session.id)).find((message) => message.role === "tool");
      expect(tool).toMatchObject({ toolName: "ask_user_questions", summary: "提问已取消" });
    });

    it("refuses a cancel from someone else with forbidden, and the run carries on", async () => {
      const { server, agent, session, run, client, requestId } = await aliceIsAsked();
      const bob = await server.connect(BOB);

      bob.send({ type: "cancel", sessionId: session.id });
      expect((await bob.next("error")).data.code).toBe("forbidden");
      await client.sync();
      expect(client.pending()).toEqual([]);
      expect(server.core.registry.get(requestId)).toBeDefined();
      expect(server.core.runner.activeRun(session.id)?.id).toBe(run.id);

      client.send(answerFrame(session.id, requestId));
      expect((await waitForRun(server.core, run.id)).status).toBe("completed");
      expect(JSON.parse(await agent.result())).toEqual({ answers: ANSWERS });
    });

    it("answers not_running to a cancel when nothing runs in the session", async () => {
      const server = await start();
      const session = await server.createSession(ALICE);
      const client = await server.connect(ALICE);
      client.send({ type: "cancel", sessionId: session.id });
      expect((await client.next("error")).data.code).toBe("not_running");
      // A stranger learns nothing about the session, not even that it is idle.
      const bob = await server.connect(BOB);
      bob.send({ type: "cancel", sessionId: session.id });
      expect((await bob.next("error")).data.code).toBe("forbidden");
    });
  });

  describe("extend (延长, as the card's button)", () => {
    it("moves the answerer's deadlines by 15 minutes, up to the bound, and says when no more fit", async () => {
      const { server, session, client, ask, requestId } = await aliceIsAsked();
      expect(ask.data).toMatchObject({ canExtend: true });
      const first = ask.data.expiresAt;
      for (let n = 1; n <= 4; n += 1) {
        client.send({ type: "extend", sessionId: session.id });
        const again = await client.next("ask_user_questions");
        expect(again.data).toMatchObject({ requestId, expiresAt: first + n * 15 * 60_000 });
        // One hour in all (ASK_EXTEND_MAX_MS): the fourth uses it up.
        expect(again.data.canExtend).toBe(n < 4);
      }
      expect(server.core.registry.get(requestId)?.expiresAt).toBe(first + 60 * 60_000);
      client.send({ type: "extend", sessionId: session.id });
      expect((await client.next("error")).data).toMatchObject({ code: "extend_limit", action: "extend" });
    });

    it("refuses someone who is not asked, and the deadline stays", async () => {
      const server = await start();
      // A group session: Bob may view it, but the question waits for Alice.
      const session = await server.createSession(ALICE, {
        chatType: "group",
        workspace: "/w/feishu-chat/oc_x",
      });
      await server.core.runner.noteInChat(session.id, BOB);
      const alice = await server.connect(ALICE);
      const bob = await server.connect(BOB);
      bob.send({ type: "subscribe", sessionId: session.id });
      await bob.next("subscribed");
      await startRun(server.core, session, ALICE);
      const ask = await alice.next("ask_user_questions");
      bob.send({ type: "extend", sessionId: session.id });
      expect((await bob.next("error")).data).toMatchObject({ code: "forbidden", action: "extend" });
      expect(server.core.registry.get(ask.data.requestId)?.expiresAt).toBe(ask.data.expiresAt);
    });

    it("answers not_running when nothing waits in the session", async () => {
      const server = await start();
      const session = await server.createSession(ALICE);
      const client = await server.connect(ALICE);
      client.send({ type: "extend", sessionId: session.id });
      expect((await client.next("error")).data).toMatchObject({ code: "not_running", action: "extend" });
    });
  });

  describe("viewers", () => {
    it("shows a pending ask read-only to another viewer of the session, who cannot answer it", async () => {
      const server = await start();
      // A group session Alice opened; Bob's message is the run, so only Bob may answer.
      const session = await server.createSession(ALICE, {
        chatType: "group",
        workspace: "/w/feishu-chat/oc_1",
      });
      const alice = await server.connect(ALICE);
      alice.send({ type: "subscribe", sessionId: session.id });
      expect((await alice.next("subscribed")).data).toEqual({ canAnswer: false, canCancel: true });
      const bob = await server.connect(BOB);
      await startRun(server.core, session, BOB);
      const seenByBob = await bob.next("ask_user_questions");
      const seenByAlice = await alice.next("ask_user_questions");
      expect(seenByAlice.data.requestId).toBe(seenByBob.data.requestId);
      alice.send({
        type: "ask_user_questions_result",
        sessionId: session.id,
        data: { requestId: seenByAlice.data.requestId, answers: [] },
      });
      expect((await alice.next("error")).data.code).toBe("forbidden");
      expect(server.core.registry.get(seenByAlice.data.requestId)).toBeDefined();
    });
  });

  describe("subscriptions", () => {
    /** Every frame a client has received about `sessionId`. */
    const about = (client: TestClient, sessionId: string) =>
      client.received.filter((frame) => frame.sessionId === sessionId);

    it("sends a session's frames only to its subscribers, and nothing after unsubscribe or close", async () => {
      const server = await start();
      const { hub } = server.core;
      // Group sessions Alice opened: Bob's message is the run, so Alice's connections only watch.
      const group = { chatType: "group" as const, workspace: "/w/feishu-chat/oc_1" };
      const [a, b] = [await server.createSession(ALICE, group), await server.createSession(ALICE, group)];
      const [onA, onB, left, closing, bob] = await Promise.all([
        server.connect(ALICE),
        server.connect(ALICE),
        server.connect(ALICE),
        server.connect(ALICE),
        server.connect(BOB),
      ]);
      const subscribe = async (client: TestClient, sessionId: string) => {
        client.send({ type: "subscribe", sessionId });
        await client.next("subscribed", (frame) => frame.sessionId === sessionId);
      };
      await subscribe(onA, a.id);
      await subscribe(onB, b.id);
      await subscribe(left, a.id);
      await subscribe(left, b.id);
      left.send({ type: "unsubscribe", sessionId: a.id });
      await left.sync();
      await subscribe(closing, a.id);
      await subscribe(closing, b.id);
      await closing.close();
      await eventually(() => expect(hub.connectionCount()).toBe(4));
      expect(hub.subscribedSessionCount()).toBe(2);

      const run = await startRun(server.core, a, BOB);
      const asked = await bob.next("ask_user_questions");
      const seen = await onA.next("ask_user_questions");
      expect(seen.data.requestId).toBe(asked.data.requestId);
      bob.send(answerFrame(a.id, asked.data.requestId));
      await onA.next("ask_user_questions_cancelled");
      await waitForRun(server.core, run.id);
      await onA.next("session_snapshot", (frame) => frame.data.run?.status === "completed");
      await Promise.all([onA.sync(), onB.sync(), left.sync(), bob.sync()]);

      const types = (client: TestClient, sessionId: string) =>
        about(client, sessionId).map((frame) => frame.type);
      // Subscribed to A: the ask, its withdrawal and the run's snapshots, and nothing about B.
      expect(new Set(types(onA, a.id))).toEqual(
        new Set(["subscribed", "session_snapshot", "ask_user_questions", "ask_user_questions_cancelled"]),
      );
      expect(types(onA, a.id).filter((type) => type === "ask_user_questions")).toHaveLength(1);
      expect(about(onA, b.id)).toEqual([]);
      // Subscribed to B only, or to A no longer: nothing about A beyond the subscribe they sent.
      expect(about(onB, a.id)).toEqual([]);
      expect(types(left, a.id)).toEqual(["subscribed", "session_snapshot"]);
      expect(about(left, b.id).length).toBeGreaterThan(0);

      // Once onA unsubscribes, a second run in A reaches the answerer and no one else.
      onA.send({ type: "unsubscribe", sessionId: a.id });
      await onA.sync();
      expect(hub.subscribedSessionCount()).toBe(1);
      const before = onA.received.length;
      const second = await startRun(server.core, a, BOB);
      const again = await bob.next("ask_user_questions");
      bob.send(answerFrame(a.id, again.data.requestId));
      await waitForRun(server.core, second.id);
      await Promise.all([onA.sync(), onB.sync(), left.sync()]);
      expect(onA.received.slice(before).filter((frame) => frame.type !== "pong")).toEqual([]);
      expect(types(left, a.id)).toEqual(["subscribed", "session_snapshot"]);
      expect(about(onB, a.id)).toEqual([]);

      // The index forgets a session when its last subscriber leaves, by unsubscribe or by close.
      await onB.close();
      expect(hub.subscribedSessionCount()).toBe(1);
      await left.close();
      await eventually(() => expect(hub.subscribedSessionCount()).toBe(0));
    });

    it("sends the answerer one copy of each ask frame on a subscribed connection, and snapshots to subscribers only", async () => {
      const agent = createScriptedAskAgent();
      const server = await start({ agent });
      const session = await server.createSession(ALICE);
      const [subscribed, unsubscribed] = await Promise.all([server.connect(ALICE), server.connect(ALICE)]);
      subscribed.send({ type: "subscribe", sessionId: session.id });
      await subscribed.next("subscribed");
      const run = await startRun(server.core, session, ALICE);
      const [ask] = await Promise.all([
        subscribed.next("ask_user_questions"),
        unsubscribed.next("ask_user_questions"),
      ]);
      unsubscribed.send(answerFrame(session.id, ask.data.requestId));
      await waitForRun(server.core, run.id);
      await subscribed.next("session_snapshot", (frame) => frame.data.run?.status === "completed");
      await Promise.all([subscribed.sync(), unsubscribed.sync()]);

      for (const client of [subscribed, unsubscribed]) {
        const types = about(client, session.id).map((frame) => frame.type);
        expect(types.filter((type) => type === "ask_user_questions")).toHaveLength(1);
        expect(types.filter((type) => type === "ask_user_questions_cancelled")).toHaveLength(1);
      }
      expect(about(unsubscribed, session.id).map((frame) => frame.type)).toEqual([
        "ask_user_questions",
        "ask_user_questions_accepted",
        "ask_user_questions_cancelled",
      ]);
    });
  });

  describe("strangers", () => {
    it("refuses to let a stranger subscribe to someone else's private session", async () => {
      const server = await start();
      const session = await server.createSession(ALICE);
      const [alice, bob] = await Promise.all([server.connect(ALICE), server.connect(BOB)]);

      bob.send({ type: "subscribe", sessionId: session.id });
      const refused = await bob.next("error");
      expect(refused).toMatchObject({ sessionId: session.id, data: { code: "forbidden" } });
      await bob.sync();
      expect(bob.pending()).toEqual([]);

      alice.send({ type: "subscribe", sessionId: session.id });
      expect((await alice.next("subscribed")).sessionId).toBe(session.id);
    });

    it("refuses a stranger's answer with forbidden and leaves the ask pending", async () => {
      const { server, agent, session, run, client, requestId } = await aliceIsAsked();
      const bob = await server.connect(BOB);

      bob.send(answerFrame(session.id, requestId));
      expect((await bob.next("error")).data).toMatchObject({ code: "forbidden", requestId });
      await client.sync();
      expect(client.pending()).toEqual([]);
      expect(server.core.registry.get(requestId)).toBeDefined();
      expect(agent.results).toEqual([]);

      client.send(answerFrame(session.id, requestId, OTHER_ANSWERS));
      expect((await waitForRun(server.core, run.id)).status).toBe("completed");
      expect(JSON.parse(await agent.result())).toEqual({ answers: OTHER_ANSWERS });
    });
  });

  describe("malformed frames", () => {
    const cases: { name: string; send: (client: TestClient) => void; code: string; message: RegExp }[] = [
      {
        name: "text that is not JSON",
        send: (c) => c.sendRaw("{not json"),
        code: "bad_frame",
        message: /JSON/,
      },
      {
        name: "a JSON array",
        send: (c) => c.sendRaw('[{"type":"ping"}]'),
        code: "bad_frame",
        message: /object/,
      },
      {
        name: "an unknown type",
        send: (c) => c.send({ type: "launch_missiles", sessionId: "s" }),
        code: "unknown_type",
        message: /launch_missiles/,
      },
      {
        name: "an answer without requestId",
        send: (c) => c.send({ type: "ask_user_questions_result", sessionId: "s", data: { answers: [] } }),
        code: "bad_frame",
        message: /data\.requestId/,
      },
      {
        name: "a subscribe without sessionId",
        send: (c) => c.send({ type: "subscribe" }),
        code: "bad_frame",
        message: /sessionId/,
      },
      {
        // A valid ping, sent as binary: were binary frames accepted, this would get a pong.
        name: "a binary frame",
        send: (c) =>
          c.sendRaw(Buffer.from(JSON.stringify({ type: "ping", sessionId: "bin" })), { binary: true }),
        code: "bad_frame",
        message: /binary/,
      },
      {
        // A valid ping padded past 1 MiB (but under ws's own 4 MiB limit): only the size check refuses it.
        name: "a frame over 1 MiB",
        send: (c) => c.send({ type: "ping", sessionId: "big", data: "x".repeat(MAX_FRAME_BYTES) }),
        code: "frame_too_large",
        message: /1048576 bytes/,
      },
    ];

    it.each(cases)(
      "answers $name with an error frame ($code) and keeps the connection open",
      async (test) => {
        const server = await start();
        const client = await server.connect(ALICE);

        test.send(client);
        const error = await client.next("error");
        expect(error.data.code).toBe(test.code);
        expect(error.data.message).toMatch(test.message);

        await client.sync();
        expect(client.pending()).toEqual([]);
        expect(client.isOpen).toBe(true);
        expect(server.core.hub.connectionCount()).toBe(1);
      },
    );
  });

  describe("heartbeat", () => {
    it("terminates a connection that stops answering pings and forgets it", async () => {
      const heartbeatIntervalMs = 1_000;
      // Only the hub's interval is faked: each beat happens exactly when the test says so.
      vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
      const server = await start({ heartbeatIntervalMs });
      const healthy = await server.connect(ALICE);
      const silent = await server.connect({ token: server.tokenFor(ALICE), autoPong: false });
      expect(server.core.hub.connectionCount()).toBe(2);

      const pinged = Promise.all([once(healthy.ws, "ping"), once(silent.ws, "ping")]);
      await vi.advanceTimersByTimeAsync(heartbeatIntervalMs);
      await pinged;
      // The healthy client ponged before this round trip's ping frame, so the hub has seen its pong.
      await healthy.sync();
      expect(silent.isOpen).toBe(true);

      await vi.advanceTimersByTimeAsync(heartbeatIntervalMs);
      expect((await silent.closed()).code).toBe(1006);
      await eventually(() => expect(server.core.hub.connectionCount()).toBe(1));
      await healthy.sync();
      expect(healthy.isOpen).toBe(true);
      expect(server.core.hub.canReach({ userId: ALICE })).toBe(true);
    });

    it("keeps a socket through a beat that cannot read the revocations, and closes it at the beat after its revocation", async () => {
      const heartbeatIntervalMs = 1_000;
      vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
      const server = await start({ heartbeatIntervalMs });
      const alice = await server.connect(ALICE);
      const away = vi.spyOn(server.core.revocations, "revocation").mockRejectedValue(new Error("store away"));
      await vi.advanceTimersByTimeAsync(heartbeatIntervalMs);
      await alice.sync();
      expect(alice.isOpen).toBe(true);
      expect(away).toHaveBeenCalledWith(ALICE);
      away.mockRestore();
      await server.core.revocations.revoke(ALICE, Date.now());
      expect(alice.isOpen).toBe(true);
      await vi.advanceTimersByTimeAsync(heartbeatIntervalMs);
      expect(await alice.closed()).toEqual({ code: 1008, reason: "token expired or revoked" });
      expect(server.core.hub.connectionCount()).toBe(0);
    });
  });

  describe("with the demo agent", () => {
    it("runs end to end: the user answers the two-question ask and the run completes quoting the answers", async () => {
      const server = await start({ agent: createDemoAgent(), tools: createDemoTools({ stepMs: 0 }) });
      const session = await server.createSession(ALICE);
      const client = await server.connect(ALICE);
      client.send({ type: "subscribe", sessionId: session.id });
      await client.next("subscribed");

      const run = await startRun(server.core, session, ALICE, "帮我部署新服务");
      const ask = await client.next("ask_user_questions");
      expect(ask.data.questions.map((question) => question.header)).toEqual(["部署方式", "附加功能"]);
      expect(ask.data.metadata).toEqual({ source: "demo" });

      client.send(
        answerFrame(session.id, ask.data.requestId, [
          { question: DEMO_QUESTIONS.deploy.question, selectedLabels: ["Docker（推荐）"], customInput: null },
          {
            question: DEMO_QUESTIONS.features.question,
            selectedLabels: ["暗色模式", "导出 PDF"],
            customInput: null,
          },
        ]),
      );
      await client.next("ask_user_questions_accepted");
      const finished = await waitForRun(server.core, run.id);
      expect(finished.status).toBe("completed");
      expect(finished.text).toContain(`**${DEMO_QUESTIONS.deploy.question}** Docker（推荐）`);
      expect(finished.text).toContain(`**${DEMO_QUESTIONS.features.question}** 暗色模式、导出 PDF`);
      const last = await client.next("session_snapshot", (frame) => frame.data.run?.status === "completed");
      expect(last.data).toMatchObject({ active: false, run: { id: run.id, text: finished.text } });

      // Read the SQLite file through a connection of its own: the history is on disk, not just in memory.
      const reader = new Database(server.dbFile, { readonly: true, fileMustExist: true });
      const tools = reader
        .prepare("SELECT tool_name, summary FROM messages WHERE session_id = ? AND role = 'tool' ORDER BY id")
        .all(session.id);
      reader.close();
      expect(tools).toEqual([
        { tool_name: "scan_workspace", summary: "扫描了 42 个文件" },
        { tool_name: "ask_user_questions", summary: "回答了 2 个问题" },
        { tool_name: "apply_choice", summary: "已生成 Dockerfile" },
        { tool_name: "apply_choice", summary: "改动了 3 个文件" },
        { tool_name: "apply_choice", summary: "改动了 2 个文件" },
      ]);
    });
  });
});
