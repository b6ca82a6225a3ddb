import { describe, expect, it } from "vitest";
import type { Card } from "../../src/cards/model.ts";
import type { AgentContext } from "../../src/harness/agents/agent.ts";
import type { RecordedCall } from "../../src/local/emulator/index.ts";
import { startEmulator } from "../../src/local/emulator/index.ts";
import { strings } from "../../src/strings/index.ts";
import { LONG, record, size, sleep, timeoutMs, until } from "./helpers/env.ts";
import { startSlowPath } from "./helpers/slow-path.ts";
import {
  ALICE,
  ENCRYPT_KEY,
  formsOn,
  isCompleted,
  type Stack,
  stacksForEachTest,
  submitValue,
} from "./helpers/stack.ts";

/**
 * Platform faults injected through the emulator, with the real SDK over HTTP: 230020 storms, HTTP 429 with
 * a reset header, 5xx, responses slower than the client's timeout, a token that expires mid-run
 * (99991663 → a fresh token), 230031 and a recalled message. Each test counts the calls the bot made: the
 * final card lands, or publishing stops cleanly, and no retry loop is unbounded.
 */

const { stack, closers } = stacksForEachTest({ askPing: false });

const PATCH = /^\/open-apis\/im\/v1\/messages\/[^/]+$/;
const TOKEN_PATH = "/open-apis/auth/v3/tenant_access_token/internal";

const patchesOf = (s: Stack, cardId: string): RecordedCall[] =>
  s.emulator.callsTo("PATCH", `/open-apis/im/v1/messages/${cardId}`);

const codes = (calls: RecordedCall[]) => calls.map((call) => call.code ?? call.status);

/** Sends a message and returns its progress card once the reply exists. */
async function task(s: Stack, text: string) {
  const { messageId } = await s.say({ chatType: "p2p", senderOpenId: ALICE, text });
  const cardId = await s.progressCard(messageId);
  return { messageId, cardId, sessionId: s.privateSessionId(ALICE) };
}

/** Waits for the run and every PATCH to settle, then a little longer: a retry loop would show up as calls. */
async function settled(s: Stack, quietMs = 1500): Promise<void> {
  await s.core.runner.idle();
  await s.channel.idle();
  await sleep(quietMs);
}

const completedCard = (s: Stack, cardId: string, waitMs = 15_000) =>
  until(
    () => {
      const card = s.cardOf(cardId);
      return isCompleted(card) && card;
    },
    "the completed card",
    waitMs,
  );

/** Answers the form on the card through a real card callback (webhook). */
async function answerOnCard(s: Stack, cardId: string, sessionId: string) {
  const ask = await until(() => s.core.registry.getPendingForSession(sessionId)[0], "the question");
  return s.click({
    messageId: cardId,
    operatorOpenId: ALICE,
    name: "ask0_submit",
    value: submitValue(sessionId, ask.requestId, ALICE),
    formValue: { ask0_q0: "0", ask0_q1: ["1"] },
  });
}

describe("rate limits", () => {
  it("rides out a 230020 storm: backs off about a second a time and lands the final card", async () => {
    const storm = size(2, 6);
    const s = await stack({ stepMs: 20 });
    const { cardId } = await task(s, "/long");
    s.emulator.injectFault({
      match: { method: "PATCH", path: PATCH },
      times: storm,
      response: { httpStatus: 400, code: 230020, msg: "frequency limit" },
    });
    const final = await completedCard(s, cardId);
    expect(JSON.stringify(final)).toContain("`/long` 执行了 20 步");
    await settled(s, 500);
    const patches = patchesOf(s, cardId);
    const limited = patches.filter((call) => call.code === 230020);
    expect(limited).toHaveLength(storm);
    // Each retry waits the per-message window out (feishu-platform §3.2: 5/s per message).
    for (const call of limited.slice(1)) {
      const previous = patches[patches.indexOf(call) - 1]!;
      expect(call.at - previous.at).toBeGreaterThanOrEqual(900);
    }
    // 21 state changes became far fewer PATCHes, storm included.
    expect(patches.length).toBeLessThan(storm + 15);
    record("faults: 230020 storm", { storm, patchCalls: patches.length, codes: codes(patches) });
  });

  // Nine tries a second apart: ~11 s, so it runs in the long variant; the endless 5xx below proves the same bound in CI.
  it.runIf(LONG)(
    "stops retrying one state after 9 rate-limited tries when the storm never ends, and sends nothing more",
    async () => {
      const s = await stack({ stepMs: 5 });
      const fault = s.emulator.injectFault({
        match: { method: "PATCH", path: PATCH },
        times: 1000,
        response: { httpStatus: 400, code: 230020, msg: "frequency limit" },
      });
      const { cardId } = await task(s, "/quick");
      await s.core.runner.idle();
      await until(
        () => patchesOf(s, cardId).filter((c) => c.code === 230020).length >= 9,
        "nine rate-limited tries",
        20_000,
      );
      await settled(s, 3000);
      const patches = patchesOf(s, cardId);
      // The publisher's budget: 1 try + 8 retries of the latest state, then it gives that state up.
      expect(patches.length).toBeLessThanOrEqual(10);
      expect(patches.every((c) => c.code === 230020)).toBe(true);
      expect(1000 - fault.remaining).toBe(patches.length);
      record("faults: endless 230020", { patchCalls: patches.length });
    },
    timeoutMs(30_000, 30_000),
  );

  it("honours x-ogw-ratelimit-reset on HTTP 429 and then lands the card", async () => {
    const limited = size(1, 3);
    const s = await stack({ stepMs: 5 });
    s.emulator.injectFault({
      match: { method: "PATCH", path: PATCH },
      times: limited,
      response: {
        httpStatus: 429,
        code: 99991400,
        msg: "request trigger frequency limit",
        headers: { "x-ogw-ratelimit-reset": "1" },
      },
    });
    const { cardId } = await task(s, "/quick");
    await completedCard(s, cardId);
    await settled(s, 500);
    const patches = patchesOf(s, cardId);
    expect(codes(patches).slice(0, limited + 1)).toEqual([...Array(limited).fill(99991400), 0]);
    // Each retry waits as long as the header says (1 s), not less.
    for (let i = 1; i <= limited; i += 1)
      expect(patches[i]!.at - patches[i - 1]!.at).toBeGreaterThanOrEqual(950);
    expect(patches.length).toBeLessThanOrEqual(limited + 2);
    record("faults: 429 with reset", { patchCalls: patches.length, codes: codes(patches) });
  });
});

describe("server errors and timeouts", () => {
  it("retries a 5xx PATCH with growing back-off and lands the card", async () => {
    const s = await stack({ stepMs: 5 });
    s.emulator.injectFault({
      match: { method: "PATCH", path: PATCH },
      times: 2,
      response: { httpStatus: 502, msg: "Bad Gateway" },
    });
    const { cardId } = await task(s, "/quick");
    await completedCard(s, cardId);
    await settled(s, 500);
    const patches = patchesOf(s, cardId);
    expect(codes(patches).slice(0, 3)).toEqual([502, 502, 0]);
    expect(patches[1]!.at - patches[0]!.at).toBeGreaterThanOrEqual(450);
    expect(patches[2]!.at - patches[1]!.at).toBeGreaterThanOrEqual(950);
    record("faults: 5xx then success", { patchCalls: patches.length, codes: codes(patches) });
  });

  // ~6 s of back-off (0.5 + 1 + 2 s, then quiet): long variant; in CI the endless 99991663 below and
  // test/publisher.test.ts ("retries a 5xx a bounded number of times") prove the bound.
  it.runIf(LONG)(
    "gives a state up after 4 tries when the 5xx never stops, and sends nothing more",
    async () => {
      const s = await stack({ stepMs: 5 });
      const { cardId } = await task(s, "/quick");
      await s.core.runner.idle();
      await s.channel.idle();
      const before = patchesOf(s, cardId).length;
      // From now on every PATCH fails; a second task's card meets it from its first PATCH on.
      s.emulator.injectFault({
        match: { method: "PATCH", path: PATCH },
        times: 1000,
        response: { httpStatus: 503, msg: "Service Unavailable" },
      });
      const { cardId: second } = await task(s, "/quick 再来一次");
      await s.core.runner.idle();
      await until(() => patchesOf(s, second).length >= 4, "four tries", 10_000);
      // The last back-off was 2 s: another 2.5 s of quiet shows there is no fifth try.
      await settled(s, 2500);
      const patches = patchesOf(s, second);
      expect(patches.length).toBe(4);
      expect(codes(patches)).toEqual([503, 503, 503, 503]);
      expect(patchesOf(s, cardId).length).toBe(before);
      record("faults: endless 5xx", { patchCalls: patches.length });
    },
  );

  // A task without its card can neither show progress nor ask: its first reply is retried (the run id as the
  // reply's uuid keeps a retry from posting a second card). This suite and the benchmarks both found it missing.
  it("retries a 5xx on the card's first reply (the uuid makes that safe), so the task still gets its card", async () => {
    const s = await stack({ stepMs: 5 });
    s.emulator.injectFault({
      match: { method: "POST", path: /\/reply$/ },
      times: 1,
      response: { httpStatus: 502, msg: "Bad Gateway" },
    });
    const { messageId } = await s.say({ chatType: "p2p", senderOpenId: ALICE, text: "/quick" });
    await s.core.runner.idle();
    const cardId = await s.progressCard(messageId, 1500);
    await completedCard(s, cardId, 2000);
    const replies = s.emulator.callsTo("POST", /\/reply$/);
    expect(codes(replies)).toEqual([502, 0]);
    expect(s.emulator.messages.listMessages().filter((m) => m.parentId === messageId)).toHaveLength(1);
    record("faults: 5xx on the first reply", { replyCalls: codes(replies) });
  });

  // The same through the rate limit: a 429 on the first reply waits out the reset header.
  it("retries a 429 on the card's first reply after the reset, so the task still gets its card", async () => {
    const s = await stack({ stepMs: 5 });
    s.emulator.injectFault({
      match: { method: "POST", path: /\/reply$/ },
      times: 1,
      response: {
        httpStatus: 429,
        code: 99991400,
        msg: "request trigger frequency limit",
        headers: { "x-ogw-ratelimit-reset": "1" },
      },
    });
    const { messageId } = await s.say({ chatType: "p2p", senderOpenId: ALICE, text: "/quick" });
    await s.core.runner.idle();
    const cardId = await s.progressCard(messageId, 2000);
    await completedCard(s, cardId, 2000);
    const replies = s.emulator.callsTo("POST", /\/reply$/);
    expect(codes(replies)).toEqual([99991400, 0]);
    expect(replies[1]!.at - replies[0]!.at).toBeGreaterThanOrEqual(950);
    expect(s.emulator.messages.listMessages().filter((m) => m.parentId === messageId)).toHaveLength(1);
  });

  it("survives a PATCH slower than the client's timeout: it retries and the final state is what stays", async () => {
    const s = await stack({ stepMs: 150, messengerTimeoutMs: 500 });
    // The first PATCH is held 1.2 s before the platform reads it: the client gives up at 0.5 s and retries.
    s.emulator.injectFault({
      match: { method: "PATCH", path: PATCH },
      times: 1,
      response: { delayMs: 1200 },
    });
    const { cardId } = await task(s, "/quick");
    await settled(s, 1500);
    const patches = patchesOf(s, cardId);
    record("faults: slow PATCH", { patchCalls: patches.length, codes: codes(patches) });
    expect(isCompleted(s.cardOf(cardId)), JSON.stringify(codes(patches))).toBe(true);
  });
  // Found by this suite: the late PATCH used to land on top of the retry and stay (the publisher believed the
  // latest state was on the card). Now a PATCH without an answer is followed, once a later one has landed, by
  // one confirming PATCH of the latest state a request timeout later.
  it("keeps the final state when a timed-out PATCH is applied late by the platform, after its retry", async () => {
    const emulator = await startEmulator({ encryptKey: ENCRYPT_KEY });
    const path = await startSlowPath(emulator.url);
    closers.push(
      () => path.close(),
      () => emulator.close(),
    );
    // Two steps, then done: the first PATCH carries a state the run has left by the time it lands.
    const agent = {
      name: "two-steps",
      async run(ctx: AgentContext) {
        await ctx.callTool("scan_workspace", {}, { title: "第一步" });
        await ctx.callTool("scan_workspace", {}, { title: "第二步" });
        return { text: "done" };
      },
    };
    const s = await stack({ emulator, apiUrl: path.url, agent, stepMs: 150, messengerTimeoutMs: 500 });
    // What the platform shows after each PATCH it applies: completed or not.
    const shown: boolean[] = [];
    emulator.on("message_patched", ({ message }) =>
      shown.push(isCompleted(JSON.parse(message.content) as Card)),
    );
    // The first PATCH reaches the platform 1.2 s late: after the client gave up (0.5 s) and its retry landed.
    path.hold({ method: "PATCH", path: PATCH }, 1200);
    const { cardId } = await task(s, "两步");
    await settled(s, 1500);
    const patches = patchesOf(s, cardId);
    record("faults: PATCH applied late", {
      patchCalls: patches.length,
      codes: codes(patches),
      delivered: path.delivered,
      completedAfterEachPatch: shown,
    });
    expect(path.delivered).toEqual([expect.objectContaining({ method: "PATCH", clientGone: true })]);
    // The retry showed the final state, the late PATCH put the old one back, the confirmation fixed it.
    expect(shown).toEqual([true, false, true]);
    expect(isCompleted(s.cardOf(cardId)), JSON.stringify(codes(patches))).toBe(true);
  });
});

describe("tokens", () => {
  it("fetches a fresh token when the tenant token is invalidated mid-run (99991663), once per invalidation", async () => {
    const s = await stack({ stepMs: 20 });
    const { cardId, sessionId } = await task(s, "帮我部署");
    await until(() => formsOn(s.cardOf(cardId)).length > 0, "the form");
    const tokensBefore = s.emulator.callsTo("POST", TOKEN_PATH).length;
    s.emulator.expireTokens();
    const answered = await answerOnCard(s, cardId, sessionId);
    expect(answered.toast?.content).toBe(strings.feishu.submitted);
    await completedCard(s, cardId);
    await settled(s, 500);
    const tokens = s.emulator.callsTo("POST", TOKEN_PATH).length - tokensBefore;
    const rejected = s.emulator.calls.filter((call) => call.code === 99991663);
    expect(rejected.length).toBeGreaterThanOrEqual(1);
    // Each call that met the dead token fetched one token and retried once; none looped.
    expect(tokens).toBeGreaterThanOrEqual(1);
    expect(tokens).toBeLessThanOrEqual(rejected.length);
    record("faults: token invalidated", { rejected: rejected.length, tokenFetches: tokens });
  });

  it("gets a new token when the old one runs out (2 h later on the platform's clock)", async () => {
    const s = await stack({ stepMs: 20 });
    const { cardId, sessionId } = await task(s, "帮我部署");
    await until(() => formsOn(s.cardOf(cardId)).length > 0, "the form");
    s.emulator.clock.advance(2 * 60 * 60_000 + 1000);
    await answerOnCard(s, cardId, sessionId);
    await completedCard(s, cardId);
    expect(s.emulator.calls.filter((call) => call.code === 99991663).length).toBeGreaterThanOrEqual(1);
  });

  it("tries twice, not forever, when every call is refused with 99991663", async () => {
    const s = await stack({ stepMs: 5 });
    const { cardId } = await task(s, "/quick");
    await s.core.runner.idle();
    await s.channel.idle();
    s.emulator.injectFault({
      match: { method: "PATCH", path: PATCH },
      times: 1000,
      response: { httpStatus: 400, code: 99991663, msg: "Invalid access token" },
    });
    const { cardId: second } = await task(s, "/quick 再来");
    await settled(s, 1500);
    const patches = patchesOf(s, second);
    expect(patches.length).toBeGreaterThan(0);
    expect(patches.length).toBeLessThanOrEqual(4);
    expect(patchesOf(s, cardId).every((c) => c.code === 0)).toBe(true);
    record("faults: 99991663 forever", { patchCalls: patches.length });
  });
});

describe("messages that can no longer be updated", () => {
  it("stops publishing at 230031 (older than 14 days), frees the waiting questions and finishes the run", async () => {
    const s = await stack({ stepMs: 5 });
    const hub = await s.connect(ALICE);
    const { cardId, sessionId } = await task(s, "/parallel");
    await until(() => s.core.registry.getPendingForSession(sessionId).length === 2, "two questions");
    await s.channel.idle();
    s.emulator.clock.advance(15 * 24 * 60 * 60_000);
    const [first] = s.core.registry.getPendingForSession(sessionId);
    hub.send({
      type: "ask_user_questions_result",
      sessionId,
      data: {
        requestId: first!.requestId,
        answers: first!.questions.map((q) => ({
          question: q.question,
          selectedLabels: [q.options[0]!.label],
          customInput: null,
        })),
      },
    });
    await hub.next("ask_user_questions_accepted");
    await settled(s, 1000);
    const patches = patchesOf(s, cardId);
    expect(patches.filter((c) => c.code === 230031)).toHaveLength(1);
    expect(patches.at(-1)?.code).toBe(230031);
    expect(s.core.registry.getPendingForSession(sessionId)).toEqual([]);
    expect((await s.core.store.latestRun(sessionId))?.status).toBe("completed");
    record("faults: 230031", { patchCalls: patches.length, codes: codes(patches) });
  });

  it("stops publishing a recalled card (230011) and frees its questions", async () => {
    const s = await stack({ stepMs: 5 });
    const { cardId, sessionId } = await task(s, "帮我部署");
    await until(() => formsOn(s.cardOf(cardId)).length > 0, "the form");
    await s.channel.idle();
    s.emulator.recall(cardId);
    const before = patchesOf(s, cardId).length;
    // Any change to the card now meets the recall: cancel the task from a desktop client.
    const desktop = await s.connect(ALICE);
    desktop.send({ type: "cancel", sessionId });
    await desktop.next("cancelled");
    await settled(s, 1000);
    const after = patchesOf(s, cardId).slice(before);
    expect(codes(after)).toEqual([230011]);
    expect(s.core.registry.getPendingForSession(sessionId)).toEqual([]);
    expect((await s.core.store.latestRun(sessionId))?.status).toBe("cancelled");
  });

  it("does not wait on a question when the message it answers was recalled before the card could be sent", async () => {
    const s = await stack({ stepMs: 5 });
    const payload = s.emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "帮我部署" });
    s.emulator.recall(payload.event.message.message_id);
    expect((await s.deliver(payload)).status).toBe(200);
    await settled(s, 500);
    const sessionId = s.privateSessionId(ALICE);
    const run = await s.core.store.latestRun(sessionId);
    expect(run?.status).toBe("completed");
    expect(run?.text).toContain("没有收到你的回答");
    const replies = s.emulator.callsTo("POST", /\/reply$/);
    expect(codes(replies)).toEqual([230011]);
  });
});

/** Long variant only: a storm that never ends on every endpoint for a while, then lifts. */
describe.runIf(LONG)("a long fault soak (RELIABILITY_LONG)", () => {
  it("keeps 20 tasks going through 60 injected faults of four kinds and lands every final card", async () => {
    const s = await stack({ stepMs: 50, messengerTimeoutMs: 2000 });
    const faults = [
      { httpStatus: 400, code: 230020, msg: "frequency limit" },
      { httpStatus: 429, code: 99991400, msg: "limit", headers: { "x-ogw-ratelimit-reset": "1" } },
      { httpStatus: 502, msg: "Bad Gateway" },
      { delayMs: 2500 },
    ] as const;
    const cards: string[] = [];
    const started = Date.now();
    for (let i = 0; i < 20; i += 1) {
      const user = `ou_soak${String(i).padStart(30, "0")}`;
      const { messageId } = await s.say({ chatType: "p2p", senderOpenId: user, text: "/long" });
      cards.push(await s.progressCard(messageId));
      s.emulator.injectFault({
        match: { method: "PATCH", path: PATCH },
        times: 3,
        response: faults[i % faults.length]!,
      });
    }
    await s.core.runner.idle();
    const lifted = await until(
      () => cards.every((id) => isCompleted(s.cardOf(id) as Card)) && Date.now(),
      "every final card",
      90_000,
      200,
    );
    const patchCalls = s.emulator.callsTo("PATCH", "/open-apis/im/v1/messages/").length;
    record("faults: soak", { tasks: 20, patchCalls, durationMs: lifted - started });
    expect(patchCalls).toBeLessThan(20 * 40);
  }, 120_000);
});
