import { describe, expect, it } from "vitest";
import type { AskOutcome } from "../src/asks/pending.ts";
import { AskRegistry } from "../src/asks/registry.ts";
import { DatabaseUnavailableError } from "../src/cluster/errors.ts";
import { createClusterPool } from "../src/cluster/pool.ts";
import { AskStore } from "../src/store/asks.ts";
import { STORE_PG_TYPES } from "../src/store/pg-schema.ts";
import { postgresSql } from "../src/store/sql.ts";
import { sampleAsk } from "./fixtures.ts";
import { type Dialect, useStoreHandles } from "./helpers/store-handles.ts";

/**
 * The ask rows on both dialects (issue 27): one suite, run on the SQLite file and on a real Postgres, so the
 * repository behaves the same on either. Two "instances" are two handles on one database (two connections
 * to the file, two pools on the server): an ask one registered is answered from its row by the other, which
 * never held it, and the first learns of it by `reconcile` (what a wake-up or a poll triggers).
 */

const store = useStoreHandles();
const handles = (dialect: Dialect, count = 2) => store.handles(dialect, count);

const QUESTIONS = sampleAsk().questions;
const ANSWERS = [{ question: QUESTIONS[0]?.question ?? "", selectedLabels: ["React"], customInput: null }];
let ids = 0;
const row = (over: Partial<Parameters<AskStore["insert"]>[0]> = {}) => ({
  requestId: `req-${++ids}`,
  sessionId: "s1",
  runId: "run-1",
  toolCallId: "call-1",
  answererId: "ou_a",
  questions: QUESTIONS,
  metadata: { source: "test" },
  surfaces: ["feishu", "websocket"],
  createdAt: 1_700_000_000_000,
  expiresAt: 1_700_000_900_000,
  ...over,
});

function registry(store: AskStore, now = () => Date.now()): AskRegistry {
  let n = 0;
  return new AskRegistry({
    timeoutMs: 900_000,
    now,
    newId: () => `ask-${Date.now()}-${++n}-${Math.random().toString(36).slice(2)}`,
    onListenerError: (error) => {
      throw error;
    },
    store,
  });
}

describe.each(["sqlite", "postgres"] as const)("the ask rows on %s", (dialect) => {
  it("read back every field as written, times as numbers", async () => {
    const [sql] = await handles(dialect, 1);
    const store = new AskStore(sql!);
    const written = row({ declinable: true });
    await store.insert(written);
    const read = await store.get(written.requestId);
    expect(read).toEqual({
      ...written,
      extendedMs: 0,
      declinable: true,
      status: "pending",
      answers: undefined,
      reason: undefined,
      answeredVia: undefined,
      answeredBy: undefined,
      settledAt: undefined,
    });
    expect(typeof read?.createdAt).toBe("number");
    expect(await store.get("nobody")).toBeUndefined();
  });

  it("settle by compare-and-set: of twenty writers at once from two handles, exactly one wins", async () => {
    const [a, b] = await handles(dialect);
    const stores = [new AskStore(a!), new AskStore(b!)];
    const written = row();
    await stores[0]!.insert(written);
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        stores[i % 2]!.settle(written.requestId, {
          status: "answered",
          answers: [{ ...ANSWERS[0]!, customInput: `writer ${i}` }],
          via: `surface-${i}`,
          by: "ou_a",
          at: 1_700_000_000_100 + i,
        }),
      ),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = results.indexOf(true);
    expect(await stores[1]!.get(written.requestId)).toMatchObject({
      status: "answered",
      answeredVia: `surface-${winner}`,
      answers: [{ customInput: `writer ${winner}` }],
      settledAt: 1_700_000_000_100 + winner,
    });
  });

  it("extend a pending deadline within its bound only", async () => {
    const [sql] = await handles(dialect, 1);
    const store = new AskStore(sql!);
    const written = row();
    await store.insert(written);
    expect(await store.extend(written.requestId, 600_000, 1_200_000)).toBe(true);
    expect(await store.extend(written.requestId, 600_000, 1_200_000)).toBe(true);
    expect(await store.extend(written.requestId, 1, 1_200_000)).toBe(false);
    expect(await store.get(written.requestId)).toMatchObject({
      expiresAt: written.expiresAt + 1_200_000,
      extendedMs: 1_200_000,
    });
    await store.settle(written.requestId, { status: "timeout", at: 1 });
    expect(await store.extend(written.requestId, 1, 10_000_000)).toBe(false);
  });

  it("order ties on the clock by insertion: the latest ask of a run and of a tool call, the pending ones", async () => {
    const [sql] = await handles(dialect, 1);
    const store = new AskStore(sql!);
    const same = { createdAt: 1_700_000_000_000 };
    const first = row({ ...same, requestId: "zzz-first" });
    const second = row({ ...same, requestId: "aaa-second" });
    const other = row({ ...same, requestId: "mmm-other", runId: "run-2", toolCallId: "call-2" });
    for (const written of [first, second, other]) await store.insert(written);
    expect((await store.latestOfRun("run-1"))?.requestId).toBe("aaa-second");
    expect((await store.byToolCall("run-1", "call-1"))?.requestId).toBe("aaa-second");
    expect((await store.byToolCall("run-1", "call-9"))?.requestId).toBeUndefined();
    await store.settle("aaa-second", { status: "cancelled", reason: "gone", at: 2 });
    expect((await store.pending()).map((pending) => pending.requestId)).toEqual(["zzz-first", "mmm-other"]);
  });

  it("answer from the row on an instance that never held the ask; the asker's instance reconciles once", async () => {
    const [a, b] = await handles(dialect);
    const asker = registry(new AskStore(a!));
    const other = registry(new AskStore(b!));
    const ask = await asker.register({
      sessionId: "s1",
      runId: "run-1",
      answererId: "ou_a",
      questions: QUESTIONS,
      surfaces: ["feishu"],
    });
    const outcomes: AskOutcome[] = [];
    asker.on("settled", ({ outcome }) => outcomes.push(outcome));
    const waiting = asker.waitForAnswer(ask.requestId);
    // The other instance holds nothing: the row decides who may answer, and that it is still open.
    expect(other.get(ask.requestId)).toBeUndefined();
    expect(await other.complete("s1", ask.requestId, ANSWERS, { surface: "feishu", userId: "ou_b" })).toEqual(
      {
        ok: false,
        reason: "forbidden",
      },
    );
    expect(await other.complete("s2", ask.requestId, ANSWERS, { surface: "feishu", userId: "ou_a" })).toEqual(
      {
        ok: false,
        reason: "gone",
      },
    );
    expect(asker.get(ask.requestId)).toBeDefined();
    expect(await other.complete("s1", ask.requestId, ANSWERS, { surface: "feishu", userId: "ou_a" })).toEqual(
      {
        ok: true,
      },
    );
    expect(
      await other.complete("s1", ask.requestId, ANSWERS, { surface: "websocket", userId: "ou_a" }),
    ).toEqual({
      ok: false,
      reason: "gone",
    });
    // Until it re-reads the row, the asker still holds the ask; a late answer there loses to the row.
    expect(await asker.reconcile(ask.requestId)).toBe(true);
    expect(await asker.reconcile(ask.requestId)).toBe(false);
    await expect(waiting).resolves.toMatchObject({ kind: "answered", surface: "feishu", answers: ANSWERS });
    expect(outcomes).toHaveLength(1);
    expect(
      await asker.complete("s1", ask.requestId, ANSWERS, { surface: "websocket", userId: "ou_a" }),
    ).toEqual({
      ok: false,
      reason: "gone",
    });
  });

  it("a settle that loses the row to another instance hands its waiter the winner's outcome", async () => {
    const [a, b] = await handles(dialect);
    const asker = registry(new AskStore(a!));
    const other = registry(new AskStore(b!));
    const ask = await asker.register({
      sessionId: "s1",
      runId: "run-1",
      answererId: "ou_a",
      questions: QUESTIONS,
    });
    const waiting = asker.waitForAnswer(ask.requestId);
    expect((await other.complete("s1", ask.requestId, ANSWERS, { surface: "page", userId: "ou_a" })).ok).toBe(
      true,
    );
    // No wake-up yet: the asker's own cancel meets the settled row and loses.
    expect(await asker.cancel(ask.requestId, "run ended")).toBe(false);
    await expect(waiting).resolves.toMatchObject({ kind: "answered", surface: "page" });
  });

  it("refuse a row edited by hand with a message, not a crash", async () => {
    const [sql] = await handles(dialect, 1);
    const store = new AskStore(sql!);
    const written = row();
    await store.insert(written);
    await sql!.db.updateTable("asks").set({ surfaces: '{"not":"a list"}' }).execute();
    await expect(store.get(written.requestId)).rejects.toThrow(/expected array/i);
  });
});

describe("the ask rows when Postgres is away", () => {
  it("fail with DatabaseUnavailableError (503), which callers answer with a retry", async () => {
    const pool = createClusterPool({
      connectionString: "postgres://nobody@127.0.0.1:1/none",
      connectTimeoutMs: 500,
      types: STORE_PG_TYPES,
    });
    try {
      const store = new AskStore(postgresSql(pool));
      const failure = await store.get("x").catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(DatabaseUnavailableError);
      expect(failure).toMatchObject({ status: 503 });
    } finally {
      await pool.end();
    }
  });
});
