import { describe, expect, it } from "vitest";
import {
  ALL_ALLOWED,
  joinFeeds,
  type RunEvents,
  type RunFeed,
  type RunSession,
} from "../src/domain/run-feed.ts";
import type { RunView } from "../src/domain/types.ts";
import { Emitter } from "../src/util/emitter.ts";

/** A feed holding fixed sessions and runs, with an emitter the test fires. */
function feedOf(sessionIds: string[], runs: RunView[], viewers: string[] = []) {
  const events = new Emitter<RunEvents>((error) => {
    throw error;
  });
  const feed: RunFeed = {
    on: (event, listener) => events.on(event, listener),
    getRun: async (id) => runs.find((run) => run.id === id),
    session: async (id): Promise<RunSession | undefined> =>
      sessionIds.includes(id)
        ? { id, channel: "web", chatType: "private", title: id, allows: ALL_ALLOWED }
        : undefined,
    activeRun: (id) => runs.find((run) => run.sessionId === id && run.status === "running"),
    currentRun: async (id) => runs.find((run) => run.sessionId === id),
    runs: async (id, limit) => runs.filter((run) => run.sessionId === id).slice(0, limit),
    queuedPreview: async () => ({ items: [{ id: "q", senderId: "u", text: "t", createdAt: 0 }], total: 1 }),
    canView: async (userId, id) => sessionIds.includes(id) && viewers.includes(userId),
  };
  return { feed, events };
}

const run = (id: string, sessionId: string, status: RunView["status"] = "running"): RunView => ({
  id,
  sessionId,
  senderId: "u",
  input: id,
  status,
  steps: [],
  startedAt: 0,
});

describe("joinFeeds", () => {
  it("asks the feed that holds the session, and answers an unknown one with nothing", async () => {
    const a = feedOf(["s1"], [run("r1", "s1")], ["alice"]);
    const b = feedOf(["s2"], [run("r2", "s2", "completed")], ["bob"]);
    const feed = joinFeeds(a.feed, b.feed);
    expect(feed.activeRun("s1")?.id).toBe("r1");
    expect(feed.activeRun("s2")).toBeUndefined();
    expect((await feed.currentRun("s2"))?.id).toBe("r2");
    expect((await feed.runs("s2", 5)).map((r) => r.id)).toEqual(["r2"]);
    expect(await feed.canView("alice", "s1")).toBe(true);
    expect(await feed.canView("alice", "s2")).toBe(false);
    expect(await feed.canView("bob", "s2")).toBe(true);
    expect((await feed.getRun("r2"))?.sessionId).toBe("s2");
    expect(await feed.session("nowhere")).toBeUndefined();
    expect(await feed.canView("alice", "nowhere")).toBe(false);
    expect(await feed.runs("nowhere", 5)).toEqual([]);
    expect(await feed.queuedPreview("nowhere", 5, 10)).toEqual({ items: [], total: 0 });
  });

  it("takes feeds joined later, and their events reach listeners that subscribed before", async () => {
    const a = feedOf(["s1"], []);
    const later = feedOf(["s9"], [run("r9", "s9")]);
    const feed = joinFeeds(a.feed);
    const heard: string[] = [];
    const off = feed.on("run_updated", (view) => heard.push(view.id));
    expect(await feed.session("s9")).toBeUndefined();
    feed.add(later.feed);
    expect((await feed.session("s9"))?.id).toBe("s9");
    later.events.emit("run_updated", run("r9", "s9"));
    a.events.emit("run_updated", run("r1", "s1"));
    expect(heard).toEqual(["r9", "r1"]);
    off();
    later.events.emit("run_updated", run("r9", "s9"));
    feed.add(feedOf([], []).feed);
    expect(heard).toEqual(["r9", "r1"]);
  });
});
