import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AgentTasks } from "../src/agents-api/service.ts";
import { AgentStore } from "../src/agents-api/store.ts";
import type { AgentPrincipal } from "../src/agents-api/token.ts";
import { AskRegistry } from "../src/asks/registry.ts";
import type { RunView } from "../src/domain/types.ts";
import { AppError } from "../src/errors.ts";
import { openDatabase } from "../src/store/db.ts";
import { sqliteSql } from "../src/store/sql.ts";
import { QUESTION } from "./helpers/agents.ts";

/**
 * One agent token, within its request rate, must not spend the app's budget for everyone (issue 24 item 7):
 * its steps are coalesced per task before the card publisher and the store, and it keeps a bounded number of
 * live cards. Fake time throughout.
 */

const ALICE = "ou_alice";
const BOB = "ou_bob";
const who: AgentPrincipal = {
  agent: "Busy Agent",
  mayAsk: new Set([ALICE, BOB]),
  expiresAt: Number.MAX_SAFE_INTEGER,
  tokenId: "at_lane-test-token",
  issuedAt: 0,
};

let dir: string;

function setup(options: { maxLiveTasks?: number; store?: boolean } = {}) {
  const updates: RunView[] = [];
  const opened: RunView[] = [];
  let id = 0;
  const registry = new AskRegistry({
    timeoutMs: 30 * 60_000,
    now: Date.now,
    newId: () => `ask-${++id}`,
    onListenerError: (error) => {
      throw error;
    },
  });
  const db = options.store ? openDatabase(path.join(dir, "bot.sqlite")) : undefined;
  const store = db ? new AgentStore(sqliteSql(db)) : undefined;
  let taskId = 0;
  const tasks = new AgentTasks({
    registry,
    now: Date.now,
    newId: () => `task-${++taskId}`,
    askTimeoutMs: 30 * 60_000,
    perAgent: { max: 10_000, windowMs: 60_000 },
    perTarget: { max: 10_000, windowMs: 60_000 },
    ...(options.maxLiveTasks !== undefined ? { maxLiveTasks: options.maxLiveTasks } : {}),
    ...(store ? { store } : {}),
  });
  // What the card side hears (the Feishu lifecycle listens to the joined feed): a card opened, a run changed.
  tasks.feed.on("run_started", ({ run }) => void opened.push(run));
  tasks.feed.on("run_updated", (run) => void updates.push(run));
  const feedChanges: string[] = [];
  tasks.feed.on("run_updated", (run) => void feedChanges.push(run.id));
  return { tasks, registry, updates, opened, db, store, feedChanges };
}

describe("report_progress is coalesced per task before the publisher", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    dir = mkdtempSync(path.join(tmpdir(), "fpb-lane-"));
  });
  afterEach(() => {
    vi.useRealTimers();
    rmSync(dir, { recursive: true, force: true });
  });

  it("1,000 steps in one burst are two card updates, and the card ends with every step", async () => {
    const { tasks, updates, feedChanges } = setup();
    const { task_id } = await tasks.startTask(who, { to: ALICE, title: "burst" });
    updates.length = 0;
    feedChanges.length = 0;
    for (let i = 0; i < 1000; i += 1) {
      const result = await tasks.reportProgress(who, { task_id, step: `step ${i % 150}`, status: "done" });
      // The answer counts every step at once, whatever the card shows yet.
      expect(result.steps).toBe(Math.min(i + 1, 150));
    }
    // The first step is shown at once; the rest wait for the end of the window.
    expect(updates).toHaveLength(1);
    expect(updates[0]?.steps.map((s) => s.title)).toEqual(["step 0"]);
    await vi.advanceTimersByTimeAsync(250);
    expect(updates).toHaveLength(2);
    expect(updates[1]?.steps).toHaveLength(150);
    expect(updates[1]?.steps.at(-1)?.title).toBe("step 149");
    // The hub and the session pages hear of it as often as the card does.
    expect(feedChanges).toHaveLength(2);
    // A quiet task's next step is shown at once again.
    await vi.advanceTimersByTimeAsync(1000);
    await tasks.reportProgress(who, { task_id, step: "after the pause" });
    expect(updates).toHaveLength(3);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a steady 1,000 steps a second is four updates a second, not a thousand", async () => {
    const { tasks, updates } = setup();
    const { task_id } = await tasks.startTask(who, { to: ALICE, title: "steady" });
    updates.length = 0;
    for (let ms = 0; ms < 10_000; ms += 1) {
      await tasks.reportProgress(who, { task_id, step: `step ${ms}` });
      await vi.advanceTimersByTimeAsync(1);
    }
    await vi.advanceTimersByTimeAsync(250);
    expect(updates.length).toBeGreaterThanOrEqual(39);
    expect(updates.length).toBeLessThanOrEqual(42);
    expect(updates.at(-1)?.steps.at(-1)?.title).toBe("step 9999");
  });

  it("finish_task and a question carry the steps held back, at once", async () => {
    const { tasks, updates, registry } = setup();
    const { task_id } = await tasks.startTask(who, { to: ALICE, title: "ends" });
    await tasks.reportProgress(who, { task_id, step: "one" });
    await tasks.reportProgress(who, { task_id, step: "two" });
    const askId = await tasks.ask(who, { task_id, questions: [QUESTION] });
    expect(registry.get(askId)).toBeDefined();
    expect(updates.at(-1)?.steps.map((s) => s.title)).toEqual(["one", "two"]);
    await tasks.reportProgress(who, { task_id, step: "three" });
    await tasks.finishTask(who, { task_id, status: "completed", text: "done" });
    const last = updates.at(-1);
    expect(last?.status).toBe("completed");
    expect(last?.steps.map((s) => s.title)).toEqual(["one", "two", "three"]);
    const count = updates.length;
    await vi.advanceTimersByTimeAsync(1000);
    expect(updates).toHaveLength(count); // nothing left to show after the end
  });

  it("the store gets one write per window, and flush() writes what is held back (shutdown)", async () => {
    const { tasks, db: opened } = setup({ store: true });
    if (!opened) throw new Error("no store");
    const db = opened;
    const { task_id } = await tasks.startTask(who, { to: ALICE, title: "stored" });
    const writes = () =>
      (db.prepare("SELECT run_json FROM agent_tasks WHERE id = ?").get(task_id) as { run_json: string })
        .run_json;
    await tasks.reportProgress(who, { task_id, step: "first" });
    for (let i = 0; i < 500; i += 1) await tasks.reportProgress(who, { task_id, step: `held ${i}` });
    expect(JSON.parse(writes()).steps).toHaveLength(1);
    await tasks.flush();
    const saved = JSON.parse(writes()) as RunView;
    expect(saved.steps).toHaveLength(200); // MAX_STEPS: the newest kept
    expect(saved.steps.at(-1)?.title).toBe("held 499");
    expect(vi.getTimerCount()).toBe(0);
    db.close();
  });
});

describe("live tasks per agent", () => {
  it("refuses a 21st running task, and a question card past the cap, before anything is shown", async () => {
    const { tasks, opened, registry } = setup();
    const ids = [];
    for (let i = 0; i < 20; i += 1)
      ids.push((await tasks.startTask(who, { to: ALICE, title: `t${i}` })).task_id);
    expect(opened).toHaveLength(20);
    let refused: unknown;
    try {
      await tasks.startTask(who, { to: BOB, title: "one too many" });
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(AppError);
    expect(refused).toMatchObject({ code: "RATE_LIMITED", status: 429 });
    expect((refused as Error).message).toMatch(/20 tasks running.*finish_task/);
    // A question without a task would open a card: refused too, and no form registered anywhere.
    await expect(tasks.ask(who, { to: BOB, questions: [QUESTION] })).rejects.toThrow(/tasks running/);
    expect(registry.getPendingForSession(`agent:${who.agent}:${BOB}`)).toHaveLength(0);
    expect(opened).toHaveLength(20);
    // A question on a running task opens nothing new: still allowed.
    expect(
      registry.get(await tasks.ask(who, { task_id: ids[0] ?? "", questions: [QUESTION] })),
    ).toBeDefined();
    // Another agent is not held by this one's cards.
    const other = { ...who, agent: "Quiet Agent", tokenId: "at_quiet" };
    expect((await tasks.startTask(other, { to: BOB, title: "mine" })).task_id).toBeDefined();
    // Finishing one frees a place.
    await tasks.finishTask(who, { task_id: ids[1] ?? "", status: "completed" });
    expect((await tasks.startTask(who, { to: BOB, title: "now it fits" })).task_id).toBeDefined();
  });

  it("the cap is a setting", async () => {
    const { tasks } = setup({ maxLiveTasks: 2 });
    await tasks.startTask(who, { to: ALICE, title: "a" });
    await tasks.startTask(who, { to: ALICE, title: "b" });
    await expect(tasks.startTask(who, { to: ALICE, title: "c" })).rejects.toThrow(/2 tasks running/);
  });
});
