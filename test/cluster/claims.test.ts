import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { createClaims } from "../../src/cluster/claims.ts";
import { StaleClaimError } from "../../src/cluster/errors.ts";
import { ensureClusterSchema } from "../../src/cluster/schema.ts";
import { usePostgres } from "../helpers/postgres.ts";

/** Two instances are two pools (two sets of connections) on one real Postgres. */
const pg = usePostgres();

async function twoInstances() {
  const first = pg().pool();
  await ensureClusterSchema(first);
  return { db: first, a: createClaims(first), b: createClaims(pg().pool()) };
}

describe("event claims", () => {
  it("make one claim of an event delivered to two instances at once; the other learns who took it", async () => {
    const { a, b } = await twoInstances();
    const ids = Array.from({ length: 25 }, (_, i) => `ev_${i}`);
    const outcomes = await Promise.all(
      ids.flatMap((id) => [
        a.claimEvent(id, "a").then((claim) => ({ id, who: "a", claim })),
        b.claimEvent(id, "b").then((claim) => ({ id, who: "b", claim })),
      ]),
    );
    for (const id of ids) {
      const both = outcomes.filter((outcome) => outcome.id === id);
      const winners = both.filter((outcome) => outcome.claim.claimed);
      expect(winners).toHaveLength(1);
      const loser = both.find((outcome) => !outcome.claim.claimed);
      expect(loser?.claim).toMatchObject({ claimed: false, by: winners[0]?.who });
    }
  });

  it("refuse a redelivery later too, and forget only claims older than asked", async () => {
    const { a, b } = await twoInstances();
    expect(await a.claimEvent("ev_old", "a")).toEqual({ claimed: true });
    await sleep(200);
    expect(await a.claimEvent("ev_new", "a")).toEqual({ claimed: true });
    expect((await b.claimEvent("ev_old", "b")).claimed).toBe(false);
    expect(await b.pruneEvents(100)).toBe(1);
    expect(await b.claimEvent("ev_old", "b")).toEqual({ claimed: true });
    expect((await b.claimEvent("ev_new", "b")).claimed).toBe(false);
  });

  it("reject an empty or oversized event id without a query", async () => {
    const { a } = await twoInstances();
    await expect(a.claimEvent("", "a")).rejects.toBeInstanceOf(RangeError);
    await expect(a.claimEvent("x".repeat(201), "a")).rejects.toBeInstanceOf(RangeError);
  });
});

describe("work claims", () => {
  it("hand each queued row to exactly one of many claimers on two instances", async () => {
    const { a, b } = await twoInstances();
    const total = 200;
    for (let i = 0; i < total; i++) await a.enqueue("event", { n: i });
    const done: { n: number; by: string }[] = [];
    const worker = async (claims: typeof a, name: string) => {
      for (;;) {
        const items = await claims.claimWork(name, { kinds: ["event"], limit: 5, claimMs: 30_000 });
        if (items.length === 0) return;
        for (const item of items) {
          done.push({ n: (item.payload as { n: number }).n, by: name });
          await claims.complete(item);
        }
      }
    };
    await Promise.all([
      worker(a, "a1"),
      worker(a, "a2"),
      worker(a, "a3"),
      worker(b, "b1"),
      worker(b, "b2"),
      worker(b, "b3"),
    ]);
    expect(done).toHaveLength(total);
    expect(new Set(done.map((entry) => entry.n)).size).toBe(total);
    expect(done.some((entry) => entry.by.startsWith("a"))).toBe(true);
    expect(done.some((entry) => entry.by.startsWith("b"))).toBe(true);
  });

  it("give a dead claimer's row to another once the claim lapses, and refuse the late finish", async () => {
    const { a, b } = await twoInstances();
    await a.enqueue("repair", { run: "r1" });
    const [mine] = await a.claimWork("a", { kinds: ["repair"], claimMs: 200 });
    if (!mine) throw new Error("nothing claimed");
    expect(await b.claimWork("b", { kinds: ["repair"], claimMs: 10_000 })).toEqual([]);
    await sleep(300);
    const [theirs] = await b.claimWork("b", { kinds: ["repair"], claimMs: 10_000 });
    expect(theirs).toMatchObject({ id: mine.id, claimedBy: "b", attempt: 2 });
    await expect(a.complete(mine)).rejects.toBeInstanceOf(StaleClaimError);
    expect(await a.retry(mine)).toBe(false);
    if (theirs) await b.complete(theirs);
    expect(await a.claimWork("a", { kinds: ["repair"], claimMs: 10_000 })).toEqual([]);
  });

  it("queue a deduplicated row once (insert-or-nothing), whichever instance queues it", async () => {
    const { db, a, b } = await twoInstances();
    const [first, second] = await Promise.all([
      a.enqueue("event", { from: "a" }, { dedupeKey: "ev_1" }),
      b.enqueue("event", { from: "b" }, { dedupeKey: "ev_1" }),
    ]);
    expect([first, second].filter((id) => id !== undefined)).toHaveLength(1);
    const rows = await db.query("SELECT count(*)::int AS n FROM cluster_work");
    expect(rows.rows[0]).toEqual({ n: 1 });
  });

  it("keep a row given back for later out of reach until its delay passes, and claim only asked kinds", async () => {
    const { a, b } = await twoInstances();
    await a.enqueue("reminder", { ask: "k1" });
    await a.enqueue("other", {});
    const [item] = await a.claimWork("a", { kinds: ["reminder"], claimMs: 10_000 });
    if (!item) throw new Error("nothing claimed");
    expect(await a.retry(item, 300)).toBe(true);
    expect(await b.claimWork("b", { kinds: ["reminder"], claimMs: 10_000 })).toEqual([]);
    await sleep(400);
    const again = await b.claimWork("b", { kinds: ["reminder"], claimMs: 10_000 });
    expect(again.map((row) => [row.kind, row.payload, row.attempt])).toEqual([
      ["reminder", { ask: "k1" }, 2],
    ]);
  });
});
