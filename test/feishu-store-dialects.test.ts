import { describe, expect, it } from "vitest";
import { DatabaseUnavailableError } from "../src/cluster/errors.ts";
import { createClusterPool } from "../src/cluster/pool.ts";
import { FeishuStore, INBOUND_RETENTION_MS } from "../src/store/feishu.ts";
import { STORE_PG_TYPES } from "../src/store/pg-schema.ts";
import { postgresSql, transaction } from "../src/store/sql.ts";
import { type Dialect, useStoreHandles } from "./helpers/store-handles.ts";

/**
 * The Feishu channel's rows on both dialects (issue 27): one suite, run on the SQLite file and on a real
 * Postgres, so the channel behaves the same on either. Two "instances" are two handles on one database (two
 * connections to the file, two pools on the server).
 */

const store = useStoreHandles();
const handles = (dialect: Dialect, count = 1) => store.handles(dialect, count);
const sqliteFiles = (count: number) => store.files(count);

const A = "cli_a000000000000001";
const B = "cli_b000000000000002";
const T0 = 1_700_000_000_000;

function card(runId: string, over: { messageId?: string; createdAt?: number } = {}) {
  return {
    runId,
    sessionId: `s-${runId}`,
    messageId: over.messageId ?? `om_${runId}`,
    chatId: "oc_1",
    senderId: "ou_alice",
    sourceMessageId: `om_src_${runId}`,
    createdAt: over.createdAt ?? T0,
  };
}

function ping(
  messageId: string,
  sentAt: number,
  over: Partial<{ runId: string; requestIds: string[] }> = {},
) {
  return {
    messageId,
    kind: "ping" as const,
    runId: over.runId ?? "run-1",
    requestIds: over.requestIds ?? ["r1", "r2"],
    group: true,
    sentAt,
  };
}

const queued = {
  queueId: "q1",
  sessionId: "s1",
  messageId: "om_queued",
  sourceMessageId: "om_user",
  chatId: "oc_1",
};

describe.each(["sqlite", "postgres"] as const)("the Feishu channel's rows on %s", (dialect) => {
  it("read a card back field for field, by run and by message", async () => {
    const [sql] = await handles(dialect);
    const store = new FeishuStore(sql!, () => T0);
    await store.saveCard(card("run-1"));
    const expected = { ...card("run-1"), gone: false, finalLandedAt: undefined };
    expect(await store.cardForRun("run-1")).toEqual(expected);
    expect(await store.cardByMessage("om_run-1")).toEqual(expected);
    expect(typeof (await store.cardForRun("run-1"))?.createdAt).toBe("number");
    expect(await store.cardForRun("nobody")).toBeUndefined();
    expect(await store.cardByMessage("om_nobody")).toBeUndefined();
  });

  it("keep each app's bot identity, the latest one said, as numbers and text read back", async () => {
    const [sql] = await handles(dialect);
    const a = new FeishuStore(sql!, () => T0, { appId: A });
    const b = new FeishuStore(sql!, () => T0, { appId: B, first: false });
    expect(await a.botIdentity()).toBeUndefined();
    await a.saveBotIdentity({ openId: "ou_bot_a", name: "进度助手", checkedAt: T0 });
    await b.saveBotIdentity({ openId: "ou_bot_b", name: "Other", checkedAt: T0 + 1 });
    await a.saveBotIdentity({ openId: "ou_bot_a", name: "进度助手 2", checkedAt: T0 + 2 });
    expect(await a.botIdentity()).toEqual({ openId: "ou_bot_a", name: "进度助手 2", checkedAt: T0 + 2 });
    expect(await b.botIdentity()).toEqual({ openId: "ou_bot_b", name: "Other", checkedAt: T0 + 1 });
    expect(await new FeishuStore(sql!, () => T0).botIdentity()).toBeUndefined();
  });

  it("mark a card gone and its final state landed; a card saved again starts over", async () => {
    const [sql] = await handles(dialect);
    const store = new FeishuStore(sql!, () => T0);
    await store.saveCard(card("a"));
    await store.saveCard(card("b"));
    await store.markCardGone("b");
    await store.markFinalLanded("a", T0 + 5);
    expect(await store.cardForRun("b")).toMatchObject({ gone: true, finalLandedAt: undefined });
    expect(await store.cardForRun("a")).toMatchObject({ gone: false, finalLandedAt: T0 + 5 });
    expect(await store.finalPending(0)).toEqual([]);
    // Moved to a new message (a CardKit card that needed a form): not gone, its final state still owed.
    await store.saveCard(card("b", { messageId: "om_b2", createdAt: T0 + 9 }));
    await store.saveCard(card("a", { messageId: "om_a2" }));
    expect(await store.cardForRun("b")).toEqual({
      ...card("b", { messageId: "om_b2", createdAt: T0 + 9 }),
      gone: false,
      finalLandedAt: undefined,
    });
    expect(await store.cardByMessage("om_b")).toBeUndefined();
    expect((await store.finalPending(0)).map((row) => row.messageId)).toEqual(["om_a2", "om_b2"]);
  });

  it("list cards owed their final state oldest first, ties in the order saved, none older than asked", async () => {
    const [sql] = await handles(dialect);
    const store = new FeishuStore(sql!, () => T0);
    for (const [runId, createdAt] of [
      ["late", T0 + 20],
      ["tie-1", T0 + 10],
      ["tie-2", T0 + 10],
      ["tie-3", T0 + 10],
      ["old", T0],
    ] as const)
      await store.saveCard(card(runId, { createdAt }));
    const pending = await store.finalPending(T0 + 10);
    expect(pending.map((row) => row.runId)).toEqual(["tie-1", "tie-2", "tie-3", "late"]);
    expect(pending[3]).toEqual({
      ...card("late", { createdAt: T0 + 20 }),
      gone: false,
      finalLandedAt: undefined,
    });
    expect((await store.finalPending(0)).map((row) => row.runId)[0]).toBe("old");
  });

  it("mark a reminder once: of ten writers on two handles one marks it", async () => {
    const [a, b] = await handles(dialect, 2);
    const stores = [new FeishuStore(a!, () => T0), new FeishuStore(b!, () => T0)];
    expect(await stores[0]!.wasReminded("run-1")).toBe(false);
    const marks = await Promise.all(
      Array.from({ length: 10 }, (_, i) => stores[i % 2]!.markReminded("run-1", T0 + i)),
    );
    expect(marks.filter(Boolean)).toHaveLength(1);
    expect(await stores[1]!.wasReminded("run-1")).toBe(true);
    expect(await stores[0]!.wasReminded("run-2")).toBe(false);
    expect(await stores[0]!.markReminded("run-1", T0)).toBe(false);
  });

  it("list pings since a time oldest first (ties in the order first saved), dropping older ones", async () => {
    const [sql] = await handles(dialect);
    const store = new FeishuStore(sql!, () => T0);
    await store.savePing(ping("om_tie_1", T0 + 100));
    await store.savePing(ping("om_early", T0 + 50, { runId: "run-2", requestIds: ["r9"] }));
    await store.savePing(ping("om_tie_2", T0 + 100));
    await store.savePing({ ...ping("om_tie_3", T0 + 100), kind: "reminder", group: false, requestIds: [] });
    await store.savePing(ping("om_stale", T0));
    // Saved again with every ask it points at now: replaced, in its place.
    await store.savePing(ping("om_tie_1", T0 + 100, { requestIds: ["r1", "r2", "r3"] }));
    expect(await store.pingsSince(T0 + 50)).toEqual([
      ping("om_early", T0 + 50, { runId: "run-2", requestIds: ["r9"] }),
      ping("om_tie_1", T0 + 100, { requestIds: ["r1", "r2", "r3"] }),
      ping("om_tie_2", T0 + 100),
      { ...ping("om_tie_3", T0 + 100), kind: "reminder", group: false, requestIds: [] },
    ]);
    // The stale one went with that read (past the edit window).
    expect((await store.pingsSince(0)).map((row) => row.messageId)).not.toContain("om_stale");
    await store.deletePing("om_tie_2");
    expect((await store.pingsSince(0)).map((row) => row.messageId)).toEqual([
      "om_early",
      "om_tie_1",
      "om_tie_3",
    ]);
  });

  it("keep a queued message's card: read back, replaced, deleted", async () => {
    const [sql] = await handles(dialect);
    const store = new FeishuStore(sql!, () => T0);
    await store.saveQueuedCard(queued);
    expect(await store.queuedCard("q1")).toEqual(queued);
    await store.saveQueuedCard({ ...queued, messageId: "om_queued_2" });
    expect(await store.queuedCard("q1")).toEqual({ ...queued, messageId: "om_queued_2" });
    expect(await store.queuedCard("q2")).toBeUndefined();
    await store.deleteQueuedCard("q1");
    expect(await store.queuedCard("q1")).toBeUndefined();
  });

  it("see an inbound message once: twice from one handle, and from two handles at once exactly one", async () => {
    const [a, b] = await handles(dialect, 2);
    const first = new FeishuStore(a!, () => T0);
    const second = new FeishuStore(b!, () => T0);
    expect(await first.markInbound("om_1")).toBe(true);
    expect(await first.markInbound("om_1")).toBe(false);
    const both = await Promise.all([first.markInbound("om_2"), second.markInbound("om_2")]);
    expect(both.filter(Boolean)).toHaveLength(1);
    const many = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? first : second).markInbound("om_3")),
    );
    expect(many.filter(Boolean)).toHaveLength(1);
  });

  it("forget inbound ids once the redelivery window has passed", async () => {
    const [sql] = await handles(dialect);
    let now = T0;
    const store = new FeishuStore(sql!, () => now);
    expect(await store.markInbound("om_old")).toBe(true);
    now += INBOUND_RETENTION_MS - 1000;
    expect(await store.markInbound("om_young")).toBe(true);
    expect(await store.markInbound("om_old")).toBe(false);
    now += 2 * 60 * 60 * 1000; // past the window for om_old, and the hourly prune is due
    expect(await store.markInbound("om_old")).toBe(true);
    expect(await store.markInbound("om_young")).toBe(false);
  });

  it("record an inbound id inside the transaction it is handed: rolled back with it", async () => {
    const [sql] = await handles(dialect);
    const store = new FeishuStore(sql!, () => T0);
    await expect(
      transaction(sql!, async (tx) => {
        expect(await store.markInbound("om_1", tx)).toBe(true);
        throw new Error("the run's row was refused");
      }),
    ).rejects.toThrow("the run's row was refused");
    expect(await store.markInbound("om_1")).toBe(true);
    expect(await transaction(sql!, (tx) => store.markInbound("om_1", tx))).toBe(false);
  });

  it("show each app its own rows, and give rows written before apps were recorded to the first", async () => {
    const [sql] = await handles(dialect);
    // Written as by an earlier, one-app version: no app on the rows.
    const before = new FeishuStore(sql!, () => T0);
    await before.saveCard(card("old"));
    await before.savePing(ping("om_ping", T0, { runId: "old" }));
    await before.saveQueuedCard({ ...queued, queueId: "q_old" });

    const a = new FeishuStore(sql!, () => T0, { appId: A, first: true });
    const b = new FeishuStore(sql!, () => T0, { appId: B, first: false });
    // Not claimed yet: neither app's store counts the old rows as its own.
    expect(await a.finalPending(0)).toEqual([]);
    expect(await a.cardForRun("old")).toBeUndefined();
    await a.claimUnowned();
    await b.claimUnowned(); // only the first app's runtime calls it; a second call finds nothing left to claim
    await a.claimUnowned(); // and the first's own again (a restart) changes nothing
    expect((await a.finalPending(0)).map((row) => row.runId)).toEqual(["old"]);
    expect((await a.pingsSince(0)).map((row) => row.messageId)).toEqual(["om_ping"]);
    expect((await a.queuedCard("q_old"))?.messageId).toBe("om_queued");
    expect((await a.cardByMessage("om_old"))?.runId).toBe("old");

    await b.saveCard(card("new"));
    await b.savePing(ping("om_ping_b", T0));
    await b.saveQueuedCard({ ...queued, queueId: "q_b" });
    expect((await b.finalPending(0)).map((row) => row.runId)).toEqual(["new"]);
    expect((await a.finalPending(0)).map((row) => row.runId)).toEqual(["old"]);
    expect(await b.cardForRun("old")).toBeUndefined();
    expect(await b.cardByMessage("om_old")).toBeUndefined();
    expect((await b.pingsSince(0)).map((row) => row.messageId)).toEqual(["om_ping_b"]);
    expect(await b.queuedCard("q_old")).toBeUndefined();
    expect(await a.queuedCard("q_b")).toBeUndefined();
    // A store of no app (tools, tests) sees every app's.
    const all = new FeishuStore(sql!, () => T0);
    expect((await all.finalPending(0)).map((row) => row.runId)).toEqual(["old", "new"]);
    expect((await all.pingsSince(0)).map((row) => row.messageId)).toEqual(["om_ping", "om_ping_b"]);
  });

  it("see an inbound message once per app, the first app keeping the ids earlier versions recorded", async () => {
    const [sql] = await handles(dialect);
    expect(await new FeishuStore(sql!, () => T0).markInbound("om_1")).toBe(true); // before the upgrade
    const a = new FeishuStore(sql!, () => T0, { appId: A, first: true });
    const b = new FeishuStore(sql!, () => T0, { appId: B, first: false });
    expect(await a.markInbound("om_1")).toBe(false); // a redelivery across the upgrade is still one
    expect(await b.markInbound("om_1")).toBe(true); // the same message @-mentioning the second bot too
    expect(await b.markInbound("om_1")).toBe(false);
  });
});

describe("rows the channel cannot use", () => {
  it("a card row edited by hand is refused with a message, not read as a wrong card", async () => {
    const [db] = sqliteFiles(1);
    const store = FeishuStore.onFile(db!, () => T0);
    await store.saveCard(card("run-1"));
    db!.prepare("UPDATE progress_cards SET created_at = 'yesterday'").run();
    await expect(store.cardForRun("run-1")).rejects.toThrow(/created_at/);
  });

  it("Postgres unreachable: DatabaseUnavailableError (503), which the channel's retried writes wait out", async () => {
    const pool = createClusterPool({
      connectionString: "postgres://nobody@127.0.0.1:1/none",
      connectTimeoutMs: 500,
      types: STORE_PG_TYPES,
    });
    try {
      const store = new FeishuStore(postgresSql(pool), () => T0);
      for (const failure of [
        await store.markInbound("om_1").catch((error: unknown) => error),
        await store.cardForRun("run-1").catch((error: unknown) => error),
        await store.savePing(ping("om_ping", T0)).catch((error: unknown) => error),
      ]) {
        expect(failure).toBeInstanceOf(DatabaseUnavailableError);
        expect(failure).toMatchObject({ status: 503 });
      }
    } finally {
      await pool.end();
    }
  });
});
