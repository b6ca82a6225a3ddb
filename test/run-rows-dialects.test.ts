import { describe, expect, it } from "vitest";
import type { QueuedMessage, RunView, SessionInfo } from "../src/domain/types.ts";
import { SessionMembers } from "../src/store/members.ts";
import { Store } from "../src/store/repos.ts";
import { TurnStore } from "../src/store/turns.ts";
import { type Dialect, useStoreHandles } from "./helpers/store-handles.ts";

/**
 * The bot's sessions, runs, history, queue, pending turns and members on both dialects (issue 27): one suite on
 * the SQLite file and on a real Postgres. Two "instances" are two pools on one Postgres database.
 */

const store = useStoreHandles();
const handles = (dialect: Dialect, count = 1) => store.handles(dialect, count);
const T0 = 1_700_000_000_000;

const session: SessionInfo = {
  id: "feishu-cli_a-group-oc_1",
  channel: "feishu",
  chatType: "group",
  chatId: "oc_1",
  workspace: "/w/oc_1",
  ownerId: "ou_a",
  title: "团队群",
  topic: { chatId: "oc_1", rootMessageId: "om_root", groupSessionId: "feishu-cli_a-group-oc_0" },
};

const run = (id: string, startedAt: number): RunView => ({
  id,
  sessionId: session.id,
  senderId: "ou_a",
  input: `do ${id}`,
  status: "running",
  steps: [{ id: "s1", tool: "scan", title: "扫描", status: "running", startedAt }],
  startedAt,
});

const queued = (id: string, text: string): QueuedMessage => ({
  id,
  sessionId: session.id,
  senderId: "ou_b",
  text,
  source: { channel: "feishu", messageId: `om_${id}` },
  createdAt: T0,
});

describe.each(["sqlite", "postgres"] as const)("the run rows on %s", (dialect) => {
  it("reads back a session with its topic, runs field for field, newest first with ties in insertion order", async () => {
    const [sql] = await handles(dialect);
    const store = new Store(sql!, () => T0);
    await store.upsertSession(session);
    await store.upsertSession({ ...session, title: "renamed" }); // a second upsert changes nothing shown
    expect(await store.getSession(session.id)).toEqual(session);
    // Three runs on one millisecond (fake clocks, fast machines): the latest is the last inserted.
    for (const id of ["r1", "r2", "r3"])
      await store.insertRun(run(id, T0), { channel: "feishu", messageId: id });
    expect((await store.recentRuns(session.id, 5)).map((r) => r.id)).toEqual(["r3", "r2", "r1"]);
    const ended: RunView = {
      ...run("r2", T0),
      status: "failed",
      text: "部分",
      error: "无法写入数据库",
      errorWords: { zh_cn: "无法写入数据库", en_us: "Could not write to the database" },
      usage: { inputTokens: 10, outputTokens: 5, cachedTokens: 2, model: "m" },
      endedAt: T0 + 5,
    };
    await store.saveRun(ended);
    expect(await store.getRun("r2")).toEqual(ended);
    expect(await store.runSource("r2")).toEqual({ channel: "feishu", messageId: "r2" });
    expect((await store.unfinishedRuns()).map((r) => r.id)).toEqual(["r1", "r3"]);
    expect(await store.runCounts()).toMatchObject({ running: 2, failed: 1, completed: 0 });
  });

  it("keeps the history in order, the last N oldest first, a call and its result together", async () => {
    const [sql] = await handles(dialect);
    const store = new Store(sql!, () => T0);
    await store.upsertSession(session);
    await store.appendMessage(session.id, { role: "user", content: "one", runId: "r1" });
    await store.appendMessages(session.id, [
      {
        role: "assistant",
        content: "",
        runId: "r1",
        toolCalls: [{ id: "c1", name: "ask", arguments: "{}" }],
      },
      { role: "tool", content: "{}", runId: "r1", toolCallId: "c1", toolName: "ask", summary: "已回答" },
    ]);
    await store.appendMessage(session.id, { role: "assistant", content: "done", runId: "r1" });
    expect((await store.history(session.id, 3)).map((m) => m.role)).toEqual([
      "assistant",
      "tool",
      "assistant",
    ]);
    expect((await store.history(session.id))[2]).toEqual({
      role: "tool",
      content: "{}",
      runId: "r1",
      toolCallId: "c1",
      toolName: "ask",
      summary: "已回答",
    });
  });

  it("queues in order, moves one to the front, counts and previews, and gives the next to one taker of two", async () => {
    const [a, b] = await handles(dialect, 2);
    const store = new Store(a!, () => T0);
    await store.upsertSession(session);
    expect(await store.queue.enqueue(queued("q1", "第一"))).toBe(1);
    expect(await store.queue.enqueue(queued("q2", "第二条消息"))).toBe(2);
    expect(await store.queue.enqueue(queued("q3", "第三"))).toBe(3);
    expect(await store.queue.moveToFront("q3")).toBe(true);
    expect(await store.queue.moveToFront("gone")).toBe(false);
    expect((await store.queue.queued(session.id)).map((q) => q.id)).toEqual(["q3", "q1", "q2"]);
    expect(await store.queue.position("q2")).toBe(3);
    expect(await store.queue.get("q1")).toEqual(queued("q1", "第一"));
    expect((await store.queue.preview(session.id, 2, 2)).map((q) => q.text)).toEqual(["第三", "第一"]);
    expect(await store.queue.count(session.id)).toBe(3);
    expect(await store.queue.hasFrom(session.id, "ou_b")).toBe(true);
    expect(await store.queue.sessions()).toEqual([session.id]);
    // Two instances take the next message at once: each gets a different one, none twice.
    const other = new Store(b ?? a!, () => T0);
    const taken = await Promise.all([store.queue.dequeue(session.id), other.queue.dequeue(session.id)]);
    expect(taken.map((q) => q?.id).sort()).toEqual(["q1", "q3"]);
    expect(await store.queue.remove("q2")).toBe(true);
    expect(await store.queue.dequeue(session.id)).toBeUndefined();
    expect(await store.queue.total()).toBe(0);
  });

  it("writes all of a transaction or none: a failure after the run's insert leaves no run and no message", async () => {
    const [sql] = await handles(dialect);
    const store = new Store(sql!, () => T0);
    await store.upsertSession(session);
    await expect(
      store.transaction(async (tx) => {
        await tx.insertRun(run("r1", T0));
        await tx.appendMessage(session.id, { role: "user", content: "x", runId: "r1" });
        throw new Error("the claim was a redelivery");
      }),
    ).rejects.toThrow(/redelivery/);
    expect(await store.getRun("r1")).toBeUndefined();
    expect(await store.history(session.id)).toEqual([]);
  });

  it("keeps a pending turn's results, and moves a finished turn into the history atomically", async () => {
    const [sql] = await handles(dialect);
    const store = new Store(sql!, () => T0);
    await store.upsertSession(session);
    const turns = new TurnStore(sql!, store);
    const turn = {
      turnId: "t1",
      runId: "r1",
      sessionId: session.id,
      text: "",
      calls: [{ id: "c1", stepId: "s1", name: "ask_user_questions", arguments: "{}" }],
      createdAt: T0,
    };
    await turns.save(turn);
    await turns.save({ ...turn, turnId: "t2", createdAt: T0 });
    turn.calls[0] = { ...turn.calls[0]!, result: "{}", summary: "已回答" } as (typeof turn.calls)[0];
    await turns.update(turn);
    expect((await turns.ofRun("r1")).map((t) => [t.turnId, t.calls[0]?.result])).toEqual([
      ["t1", "{}"],
      ["t2", undefined],
    ]);
    await turns.finish(turn, [{ role: "tool", content: "{}", runId: "r1", toolCallId: "c1" }]);
    expect((await turns.ofRun("r1")).map((t) => t.turnId)).toEqual(["t2"]);
    expect((await store.history(session.id)).map((m) => m.toolCallId)).toEqual(["c1"]);
    await turns.dropRun("r1");
    expect(await turns.ofRun("r1")).toEqual([]);
  });

  it("remembers when a member was last seen, never moving it back", async () => {
    const [sql] = await handles(dialect);
    const members = new SessionMembers(sql!);
    await members.note(session.id, "ou_a", T0 + 10);
    await members.note(session.id, "ou_a", T0); // a late write of an earlier sighting
    expect(await members.lastSeen(session.id, "ou_a")).toBe(T0 + 10);
    expect(await members.lastSeen(session.id, "ou_b")).toBeUndefined();
  });
});
