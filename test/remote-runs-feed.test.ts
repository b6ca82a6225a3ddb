import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { RunEvents } from "../src/domain/run-feed.ts";
import type { RunView } from "../src/domain/types.ts";
import { RemoteRuns } from "../src/harness/remote-runs.ts";
import { openDatabase } from "../src/store/db.ts";
import { Store } from "../src/store/repos.ts";
import { sqliteSql } from "../src/store/sql.ts";
import { privateSession, tempDir } from "./helpers/core.ts";

/**
 * The feed of other instances' runs (harness/remote-runs.ts), its rules on a real store: a run is told once
 * as started and then at each change, never when a read finds it as it was, never when it is this
 * instance's own; its end forgets it; a poll finds what a lost wake-up would have said. (Across two instances
 * on Postgres, with the wake-ups themselves: remote-runs.test.ts.)
 */

const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

async function world() {
  const db = openDatabase(path.join(tempDir(), "bot.sqlite"));
  closers.push(() => db.close());
  const store = new Store(sqliteSql(db), Date.now, db);
  const session = privateSession("ou_a");
  await store.upsertSession(session);
  const errors: unknown[] = [];
  const remote = new RemoteRuns({ store, onError: (error) => errors.push(error) });
  const told: string[] = [];
  const queues: RunEvents["queue_changed"][] = [];
  remote.on("run_started", ({ run, card, resumed }) => {
    told.push(`started ${run.id}`);
    // Shown, never drawn: the run's own instance sends its card.
    expect({ card, resumed }).toEqual({ card: undefined, resumed: false });
  });
  remote.on("run_updated", (run) => told.push(`updated ${run.id} ${run.status} ${run.steps.length}`));
  remote.on("queue_changed", (event) => queues.push(event));
  let n = 0;
  const run = async (overrides: Partial<RunView> = {}): Promise<RunView> => {
    n += 1;
    const view: RunView = {
      id: `run-${n}`,
      sessionId: session.id,
      senderId: "ou_a",
      input: "go",
      status: "running",
      steps: [],
      startedAt: Date.now(),
      ...overrides,
    };
    await store.insertRun(view);
    return view;
  };
  return { store, session, remote, told, queues, errors, run };
}

const step = { id: "s1", tool: "scan", title: "扫描", status: "running" as const, startedAt: 1 };

describe("RemoteRuns", () => {
  it("tells a run started once, then each change; a read that finds nothing new tells nothing", async () => {
    const { store, session, remote, told, run } = await world();
    const view = await run();
    await remote.refresh(view.id);
    await remote.refresh(view.id);
    expect(told).toEqual(["started run-1", "updated run-1 running 0"]);
    expect(remote.activeRun(session.id)?.id).toBe("run-1");

    await store.saveRun({ ...view, steps: [step] });
    await remote.refresh(view.id);
    await remote.poll();
    expect(told.slice(2)).toEqual(["updated run-1 running 1"]);
  });

  it("forgets a run at its end, after telling it, and tells nothing more of it", async () => {
    const { store, session, remote, told, run } = await world();
    const view = await run();
    await remote.refresh(view.id);
    await store.saveRun({ ...view, status: "completed", endedAt: Date.now() });
    await remote.refresh(view.id);
    expect(told).toEqual(["started run-1", "updated run-1 running 0", "updated run-1 completed 0"]);
    expect(remote.activeRun(session.id)).toBeUndefined();
    expect(remote.size).toBe(0);
    await remote.refresh(view.id);
    expect(told).toHaveLength(3);
  });

  it("ignores this instance's own runs, until it loses one to another", async () => {
    const { remote, told, run } = await world();
    const view = await run();
    remote.ownRun(view.id);
    await remote.refresh(view.id);
    await remote.poll();
    expect(told).toEqual([]);
    remote.lostRun(view.id);
    await remote.refresh(view.id);
    expect(told).toEqual(["started run-1", "updated run-1 running 0"]);
  });

  it("a run adopted here stops being a copy: the runner's feed answers for it", async () => {
    const { session, remote, run } = await world();
    const view = await run();
    await remote.refresh(view.id);
    remote.ownRun(view.id);
    expect(remote.activeRun(session.id)).toBeUndefined();
    expect(await remote.getRun(view.id)).toBeUndefined();
  });

  it("a poll finds a run no wake-up told of, and the end of one whose last wake-up was lost", async () => {
    const { store, session, remote, told, run } = await world();
    const view = await run();
    await remote.poll();
    expect(told).toEqual(["started run-1", "updated run-1 running 0"]);
    await store.saveRun({ ...view, status: "failed", error: "boom", endedAt: Date.now() });
    await remote.poll();
    expect(told.at(-1)).toBe("updated run-1 failed 0");
    expect(remote.activeRun(session.id)).toBeUndefined();
  });

  it("tells a queue that changed, once, and a queue as this instance's runner told it not again", async () => {
    const { store, session, remote, queues } = await world();
    const message = { id: "q1", sessionId: session.id, senderId: "ou_a", text: "next", createdAt: 1 };
    await store.queue.enqueue(message);
    await remote.refreshQueue(session.id);
    await remote.refreshQueue(session.id);
    expect(queues.map((event) => event.queued.map((queued) => queued.id))).toEqual([["q1"]]);

    await store.queue.enqueue({ ...message, id: "q2" });
    remote.ownQueue(session.id, await store.queue.queued(session.id));
    await remote.refreshQueue(session.id);
    expect(queues).toHaveLength(1);
    // An empty queue is as good as none: polls do not tell it again and again.
    await store.queue.dequeue(session.id);
    await store.queue.dequeue(session.id);
    await remote.refreshQueue(session.id);
    await remote.poll();
    await remote.poll();
    expect(queues.map((event) => event.queued.length)).toEqual([1, 0]);
  });
});
