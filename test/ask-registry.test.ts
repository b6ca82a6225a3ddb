import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AskRegistry } from "../src/asks/registry.ts";
import { sampleAsk } from "./fixtures.ts";

const TIMEOUT_MS = 900_000;

function setup() {
  let id = 0;
  const listenerErrors: unknown[] = [];
  const registry = new AskRegistry({
    timeoutMs: TIMEOUT_MS,
    now: () => Date.now(),
    newId: () => `req-${++id}`,
    onListenerError: (error) => listenerErrors.push(error),
  });
  const register = (sessionId = "s1") =>
    registry.register({
      sessionId,
      runId: `run-${sessionId}`,
      answererId: "ou_a",
      questions: sampleAsk().questions,
      metadata: { m: 1 },
    });
  return { registry, register, listenerErrors };
}

const answers = [
  {
    question: "Which framework should we use for the new module?",
    selectedLabels: ["React"],
    customInput: null,
  },
];

describe("AskRegistry", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(new Date("2026-11-30T10:00:00Z"));
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("shows a registered ask with its requestId, questions, metadata and expiry (seed 8.1 #1)", async () => {
    const { registry, register } = setup();
    const ask = await register();
    const [pending] = await registry.getPendingForSession("s1");
    expect(pending).toMatchObject({
      requestId: ask.requestId,
      questions: sampleAsk().questions,
      metadata: { m: 1 },
    });
    expect(pending?.expiresAt).toBe(pending!.createdAt + TIMEOUT_MS);
  });

  it("keeps the ask visible while it waits, and the wait does not return (seed 8.1 #2)", async () => {
    const { registry, register } = setup();
    const ask = await register();
    let settled = false;
    void registry.waitForAnswer(ask.requestId).then(() => {
      settled = true;
    });
    await vi.advanceTimersByTimeAsync(TIMEOUT_MS - 1);
    expect(settled).toBe(false);
    expect(registry.getPendingForSession("s1")).toHaveLength(1);
  });

  it("removes the ask on complete and hands the answers to the waiter (seed 8.1 #3)", async () => {
    const { registry, register } = setup();
    const ask = await register();
    const wait = registry.waitForAnswer(ask.requestId);
    expect(
      await registry.complete("s1", ask.requestId, answers, { surface: "websocket", userId: "ou_a" }),
    ).toEqual({ ok: true });
    await expect(wait).resolves.toEqual({ kind: "answered", answers, surface: "websocket", userId: "ou_a" });
    expect(registry.getPendingForSession("s1")).toEqual([]);
    expect(registry.size).toBe(0);
  });

  it("fails every ask of a session on failAllForSession (seed 8.1 #4)", async () => {
    const { registry, register } = setup();
    const first = registry.waitForAnswer((await register()).requestId);
    const second = registry.waitForAnswer((await register()).requestId);
    expect(await registry.failAllForSession("s1")).toBe(2);
    await expect(first).resolves.toEqual({ kind: "cancelled", reason: "Session cancelled" });
    await expect(second).resolves.toEqual({ kind: "cancelled", reason: "Session cancelled" });
    expect(registry.getPendingForSession("s1")).toEqual([]);
  });

  it("times out after ASK_TIMEOUT_MS counted from the ask, and removes the entry (seed 8.1 #5)", async () => {
    const { registry, register } = setup();
    const ask = await register();
    const wait = registry.waitForAnswer(ask.requestId);
    await vi.advanceTimersByTimeAsync(TIMEOUT_MS);
    await expect(wait).resolves.toEqual({ kind: "timeout" });
    expect(registry.getPendingForSession("s1")).toEqual([]);
  });

  it("lets exactly one of two surfaces completing at once win", async () => {
    const { registry, register } = setup();
    const ask = await register();
    const results = [
      await registry.complete("s1", ask.requestId, answers, { surface: "feishu", userId: "ou_a" }),
      await registry.complete("s1", ask.requestId, answers, { surface: "websocket", userId: "ou_a" }),
    ];
    expect(results.filter((result) => result.ok)).toHaveLength(1);
    expect(results[0]).toEqual({ ok: true });
  });

  it("refuses an answer from anyone but the ask's answerer, whatever the surface, and keeps it pending", async () => {
    const { registry, register } = setup();
    const ask = await register();
    const settled: string[] = [];
    registry.on("settled", ({ outcome }) => settled.push(outcome.kind));
    for (const surface of ["feishu", "websocket", "feishu-reply", "a-new-surface"])
      expect(await registry.complete("s1", ask.requestId, answers, { surface, userId: "ou_b" })).toEqual({
        ok: false,
        reason: "forbidden",
      });
    expect(await registry.decline("s1", ask.requestId, { surface: "feishu", userId: "ou_b" })).toEqual({
      ok: false,
      reason: "forbidden",
    });
    expect(registry.get(ask.requestId)).toBeDefined();
    expect((await registry.state(ask.requestId))?.status).toBe("pending");
    expect(settled).toEqual([]);
    const wait = registry.waitForAnswer(ask.requestId);
    expect(
      await registry.complete("s1", ask.requestId, answers, { surface: "websocket", userId: "ou_a" }),
    ).toEqual({
      ok: true,
    });
    await expect(wait).resolves.toEqual({ kind: "answered", answers, surface: "websocket", userId: "ou_a" });
    // Once settled, even a stranger hears only that it is gone: the ask is no longer anyone's to answer.
    expect(
      await registry.complete("s1", ask.requestId, answers, { surface: "feishu", userId: "ou_b" }),
    ).toEqual({
      ok: false,
      reason: "gone",
    });
  });

  it("refuses an elicitation's response from anyone but its answerer", async () => {
    const { registry } = setup();
    const ask = await registry.register({
      sessionId: "s1",
      runId: "run-s1",
      answererId: "ou_a",
      questions: [],
      elicitation: { server: "docs", message: "Sign in", fields: [] },
    });
    expect(
      await registry.respond(
        "s1",
        ask.requestId,
        { action: "decline" },
        { surface: "feishu", userId: "ou_b" },
      ),
    ).toEqual({ ok: false, reason: "forbidden" });
    expect(registry.get(ask.requestId)).toBeDefined();
    expect(
      await registry.respond(
        "s1",
        ask.requestId,
        { action: "decline" },
        { surface: "feishu", userId: "ou_a" },
      ),
    ).toEqual({ ok: true });
    expect(registry.get(ask.requestId)).toBeUndefined();
  });

  it("returns false for a complete after the timeout", async () => {
    const { registry, register } = setup();
    const ask = await register();
    await vi.advanceTimersByTimeAsync(TIMEOUT_MS);
    expect(
      await registry.complete("s1", ask.requestId, answers, { surface: "websocket", userId: "ou_a" }),
    ).toEqual({ ok: false, reason: "gone" });
  });

  it("refuses a complete that names another session", async () => {
    const { registry, register } = setup();
    const ask = await register("s1");
    expect(
      await registry.complete("s2", ask.requestId, answers, { surface: "websocket", userId: "ou_a" }),
    ).toEqual({ ok: false, reason: "gone" });
    expect(registry.get(ask.requestId)).toBeDefined();
  });

  it("touches only its own session on failAllForSession", async () => {
    const { registry, register } = setup();
    await register("s1");
    const other = await register("s2");
    await registry.failAllForSession("s1");
    expect(registry.getPendingForSession("s2")).toEqual([other]);
    expect(
      await registry.complete("s2", other.requestId, answers, { surface: "feishu", userId: "ou_a" }),
    ).toEqual({
      ok: true,
    });
  });

  it("emits registered and exactly one settled event per ask, whatever the way out", async () => {
    const { registry, register } = setup();
    const events: string[] = [];
    registry.on("registered", (ask) => events.push(`registered ${ask.requestId}`));
    registry.on("settled", ({ ask, outcome }) => events.push(`settled ${ask.requestId} ${outcome.kind}`));
    const a = await register();
    const b = await register();
    const c = await register("s2");
    await registry.complete("s1", a.requestId, answers, { surface: "feishu", userId: "ou_a" });
    await registry.complete("s1", a.requestId, answers, { surface: "feishu", userId: "ou_a" });
    await registry.failAllForSession("s1");
    await vi.advanceTimersByTimeAsync(TIMEOUT_MS);
    expect(events).toEqual([
      `registered ${a.requestId}`,
      `registered ${b.requestId}`,
      `registered ${c.requestId}`,
      `settled ${a.requestId} answered`,
      `settled ${b.requestId} cancelled`,
      `settled ${c.requestId} timeout`,
    ]);
  });

  it("keeps settling when a listener throws, and reports the error", async () => {
    const { registry, register, listenerErrors } = setup();
    registry.on("settled", () => {
      throw new Error("broken surface");
    });
    const ask = await register();
    const wait = registry.waitForAnswer(ask.requestId);
    expect(
      await registry.complete("s1", ask.requestId, answers, { surface: "feishu", userId: "ou_a" }),
    ).toEqual({
      ok: true,
    });
    await expect(wait).resolves.toMatchObject({ kind: "answered" });
    expect(listenerErrors).toHaveLength(1);
  });

  it("does not let a cleared timer fire after the ask is answered", async () => {
    const { registry, register } = setup();
    const settled: string[] = [];
    registry.on("settled", ({ outcome }) => settled.push(outcome.kind));
    const ask = await register();
    await registry.complete("s1", ask.requestId, answers, { surface: "feishu", userId: "ou_a" });
    await vi.advanceTimersByTimeAsync(TIMEOUT_MS * 2);
    expect(settled).toEqual(["answered"]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("lets the answer's own work finish before the waiting tool call resumes", async () => {
    const { registry, register } = setup();
    const ask = await register();
    const order: string[] = [];
    const resumed = registry.waitForAnswer(ask.requestId).then(() => order.push("run resumed"));
    await registry.complete("s1", ask.requestId, answers, { surface: "feishu", userId: "ou_a" });
    // What a callback does right after complete(): render and send its response, itself a chain of promises.
    await Promise.resolve()
      .then(() => order.push("response rendered"))
      .then(() => order.push("response sent"));
    await resumed;
    expect(order).toEqual(["response rendered", "response sent", "run resumed"]);
  });

  it("lists each session's pending asks in the order asked, and forgets settled ones", async () => {
    const { registry, register } = setup();
    const a1 = await register("s1");
    vi.advanceTimersByTime(10);
    const b1 = await register("s2");
    vi.advanceTimersByTime(10);
    const a2 = await register("s1");
    expect(registry.getPendingForSession("s1").map((a) => a.requestId)).toEqual([a1.requestId, a2.requestId]);
    expect(registry.getPendingForSession("s2").map((a) => a.requestId)).toEqual([b1.requestId]);
    await registry.cancel(a1.requestId, "gone");
    expect(registry.getPendingForSession("s1").map((a) => a.requestId)).toEqual([a2.requestId]);
    expect(await registry.failAllForSession("s1")).toBe(1);
    expect(registry.getPendingForSession("s1")).toEqual([]);
    expect(registry.getPendingForSession("s2")).toHaveLength(1);
  });
});
