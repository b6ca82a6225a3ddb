import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { askUserQuestionsInput } from "../src/agents-api/schemas.ts";
import { AgentTasks } from "../src/agents-api/service.ts";
import type { AgentPrincipal } from "../src/agents-api/token.ts";
import { AskRegistry } from "../src/asks/registry.ts";
import type { RunView } from "../src/domain/types.ts";
import { AskStore } from "../src/store/asks.ts";
import { openDatabase } from "../src/store/db.ts";
import { sqliteSql } from "../src/store/sql.ts";
import { QUESTION } from "./helpers/agents.ts";

/** Long waits on fake time: progress every 15 s with the minutes waited, the wait bounded, the ask kept. */

const ALICE = "ou_alice";
const who: AgentPrincipal = {
  agent: "Claude Code",
  mayAsk: new Set([ALICE]),
  expiresAt: Number.MAX_SAFE_INTEGER,
  tokenId: "at_wait-test-token",
  issuedAt: 0,
};

function setup() {
  const shown: RunView[] = [];
  let id = 0;
  const registry = new AskRegistry({
    timeoutMs: 30 * 60_000,
    now: Date.now,
    newId: () => `ask-${++id}`,
    onListenerError: (error) => {
      throw error;
    },
  });
  const tasks = new AgentTasks({
    registry,
    now: Date.now,
    askTimeoutMs: 30 * 60_000,
    nameOf: () => "Alice",
  });
  tasks.feed.on("run_started", ({ run }) => void shown.push(run));
  tasks.feed.on("run_updated", (run) => void shown.push(run));
  return { tasks, registry, shown };
}

describe("AgentTasks.cancelQuestion", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("answers at once (pending) while the database refuses the cancel, which lands once it takes it", async () => {
    const db = openDatabase(":memory:");
    const store = new AskStore(sqliteSql(db));
    const registry = new AskRegistry({
      timeoutMs: 30 * 60_000,
      now: Date.now,
      newId: () => "ask-refused",
      onListenerError: () => {},
      store,
    });
    const tasks = new AgentTasks({
      registry,
      now: Date.now,
      askTimeoutMs: 30 * 60_000,
      nameOf: () => "Alice",
    });
    const askId = await tasks.ask(who, { to: ALICE, questions: [QUESTION] });
    const settle = vi.spyOn(store, "settle").mockRejectedValue(new Error("SQLITE_BUSY: database is locked"));
    const answer = tasks.cancelQuestion(who, askId);
    await vi.advanceTimersByTimeAsync(2_000);
    await expect(answer).resolves.toMatchObject({ status: "pending", ask_id: askId });
    settle.mockRestore();
    await vi.advanceTimersByTimeAsync(1_000);
    expect((await tasks.ledger.result(askId)).status).toBe("cancelled");
    db.close();
  });
});

describe("AgentTasks.wait", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("reports every 15 s whom it waits for and for how long, and returns pending at wait_s", async () => {
    const { tasks, registry } = setup();
    const askId = await tasks.ask(who, { to: ALICE, questions: [QUESTION] });
    // The agent comes back 2 minutes later and waits 100 s more.
    await vi.advanceTimersByTimeAsync(120_000);
    const messages: string[] = [];
    const result = tasks.wait(who, askId, {
      waitMs: 100_000,
      onProgress: ({ message }) => void messages.push(message),
    });
    await vi.advanceTimersByTimeAsync(100_000);
    expect(await result).toMatchObject({ status: "pending", ask_id: askId });
    expect(messages).toHaveLength(6);
    expect(messages[0]).toBe("等待 Alice 在飞书回答 · 2 分钟");
    expect(messages[5]).toBe("等待 Alice 在飞书回答 · 3 分钟");
    expect(registry.get(askId)).toBeDefined();
    expect(vi.getTimerCount()).toBe(1); // only the ask's own deadline is left
  });

  it("returns the answer as soon as it comes, and timeout at the ask's own deadline", async () => {
    const { tasks, registry } = setup();
    const answered = await tasks.ask(who, { to: ALICE, questions: [QUESTION] });
    const waiting = tasks.wait(who, answered, { waitMs: 50_000 });
    await vi.advanceTimersByTimeAsync(5_000);
    const ask = registry.get(answered);
    await registry.complete(
      ask?.sessionId ?? "",
      answered,
      [{ question: QUESTION.question, selectedLabels: ["SQLite"], customInput: null }],
      { surface: "feishu", userId: ALICE },
    );
    await vi.advanceTimersByTimeAsync(0);
    expect(await waiting).toMatchObject({ status: "answered", answered_by: ALICE });

    const late = await tasks.ask(who, { to: ALICE, questions: [QUESTION], timeout_s: 60 });
    await vi.advanceTimersByTimeAsync(61_000);
    expect(await tasks.wait(who, late, { waitMs: 50_000 })).toEqual({ status: "timeout", ask_id: late });
  });

  it("stops waiting when the caller goes away, leaving the question open", async () => {
    const { tasks, registry } = setup();
    const askId = await tasks.ask(who, { to: ALICE, questions: [QUESTION] });
    const controller = new AbortController();
    const waiting = tasks.wait(who, askId, { waitMs: 50_000, signal: controller.signal });
    controller.abort();
    expect((await waiting).status).toBe("pending");
    expect(registry.get(askId)).toBeDefined();
  });

  it("caps wait_s and timeout_s", () => {
    const base = { to: ALICE, questions: [QUESTION] };
    expect(askUserQuestionsInput.safeParse({ ...base, wait_s: 301 }).success).toBe(false);
    expect(askUserQuestionsInput.safeParse({ ...base, wait_s: 300 }).success).toBe(true);
    expect(askUserQuestionsInput.safeParse({ ...base, timeout_s: 8 * 24 * 3600 }).success).toBe(false);
  });
});
