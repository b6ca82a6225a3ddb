import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { type BudgetShare, createBudgetShare, type Share, shareOf } from "../../src/cluster/budget.ts";
import { ensureClusterSchema } from "../../src/cluster/schema.ts";
import { usePostgres } from "../helpers/postgres.ts";

/**
 * The app budget split among live members, on a real Postgres. Heartbeats are driven by hand (beat()) so
 * the test says exactly who has seen what; the newcomer's grace is one heartbeat interval plus 1 s.
 */
const pg = usePostgres();
const HEARTBEAT_MS = 200;
const GRACE_MS = HEARTBEAT_MS + 1_000;

async function members(names: string[]) {
  const first = pg().pool();
  await ensureClusterSchema(first);
  const changes: Record<string, Share[]> = {};
  const budgets = Object.fromEntries(
    names.map((name, i) => {
      changes[name] = [];
      const budget = createBudgetShare({
        db: i === 0 ? first : pg().pool(),
        appId: "cli_a",
        member: name,
        heartbeatEveryMs: HEARTBEAT_MS,
        ttlMs: 600,
        onChange: (share) => changes[name]?.push(share),
      });
      return [name, budget];
    }),
  ) as Record<string, BudgetShare>;
  return { db: first, budgets, changes };
}

/** Waits `ms` while `live` keep beating (a member that stops beating for its TTL is gone, and then new). */
async function beatWhile(ms: number, live: BudgetShare[]) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    await Promise.all(live.map((budget) => budget.beat()));
    await sleep(HEARTBEAT_MS);
  }
}

function total(budgets: BudgetShare[]) {
  return budgets.reduce(
    (sum, budget) => ({
      perSecond: sum.perSecond + budget.share().perSecond,
      perMinute: sum.perMinute + budget.share().perMinute,
    }),
    { perSecond: 0, perMinute: 0 },
  );
}

describe("shared app budget", () => {
  it("splits 50/s and 1,000/min among 3 members, never more in sum, and regrows when one leaves", async () => {
    const { budgets } = await members(["a", "b", "c"]);
    const { a, b, c } = budgets as { a: BudgetShare; b: BudgetShare; c: BudgetShare };
    const all = [a, b, c];
    expect(a.share()).toEqual({ perSecond: 0, perMinute: 0, members: 0 });
    expect(await a.beat()).toEqual({ perSecond: 50, perMinute: 1000, members: 1 });
    // b and c join: they take nothing until the others have had a heartbeat to see them.
    expect(await b.beat()).toEqual({ perSecond: 0, perMinute: 0, members: 2 });
    expect(await c.beat()).toEqual({ perSecond: 0, perMinute: 0, members: 3 });
    expect(total(all).perSecond).toBeLessThanOrEqual(50);
    expect(await a.beat()).toMatchObject({ perSecond: 17, perMinute: 334, members: 3 });
    await beatWhile(GRACE_MS, all);
    for (const budget of all) await budget.beat();
    expect(all.map((budget) => budget.share().perSecond)).toEqual([17, 17, 16]);
    expect(all.map((budget) => budget.share().perMinute)).toEqual([334, 333, 333]);
    expect(total(all)).toEqual({ perSecond: 50, perMinute: 1000 });
    // c leaves: its share is gone at once, and the others take it over at their next heartbeat.
    await c.stop();
    expect(c.share().perSecond).toBe(0);
    expect(total(all).perSecond).toBeLessThanOrEqual(50);
    expect(await a.beat()).toEqual({ perSecond: 25, perMinute: 500, members: 2 });
    expect(await b.beat()).toEqual({ perSecond: 25, perMinute: 500, members: 2 });
    expect(total(all)).toEqual({ perSecond: 50, perMinute: 1000 });
  });

  it("forgets a member that stopped beating once its heartbeat expires", async () => {
    const { budgets, changes } = await members(["a", "b"]);
    const { a, b } = budgets as { a: BudgetShare; b: BudgetShare };
    await a.beat();
    await b.beat();
    await beatWhile(GRACE_MS, [a, b]);
    await b.beat();
    expect(await a.beat()).toMatchObject({ perSecond: 25, members: 2 });
    // b dies without a word; within its 600 ms TTL a still leaves it its half.
    await sleep(700);
    expect(await a.beat()).toEqual({ perSecond: 50, perMinute: 1000, members: 1 });
    expect(changes.a?.map((share) => share.members)).toEqual([1, 2, 1]);
    expect(changes.b?.map((share) => share.perSecond)).toEqual([0, 25]);
  });

  it("gives the whole budget to one of members that beat for the first time at the same instant", async () => {
    const pools = [pg().pool(), pg().pool(), pg().pool()];
    await ensureClusterSchema(pools[0] as NonNullable<(typeof pools)[0]>);
    // Connected beforehand, so the first beats reach the server together.
    await Promise.all(pools.map((db) => db.query("SELECT 1")));
    for (let round = 0; round < 10; round++) {
      const all = pools.map((db, i) =>
        createBudgetShare({
          db,
          appId: `cli_${round}`,
          member: `m${i}`,
          heartbeatEveryMs: HEARTBEAT_MS,
          ttlMs: 600,
        }),
      );
      await Promise.all(all.map((budget) => budget.beat()));
      expect(total(all).perSecond).toBeLessThanOrEqual(50);
      expect(total(all).perMinute).toBeLessThanOrEqual(1000);
    }
  });

  it("keeps beating on its own with start()", async () => {
    const { budgets } = await members(["a", "b"]);
    const { a, b } = budgets as { a: BudgetShare; b: BudgetShare };
    a.start();
    b.start();
    await sleep(GRACE_MS + HEARTBEAT_MS * 3);
    expect(total([a, b])).toEqual({ perSecond: 50, perMinute: 1000 });
    expect(a.share().members).toBe(2);
    await a.stop();
    await b.stop();
  });
});

describe("shareOf", () => {
  it("adds up to exactly the limit for any member count", () => {
    for (let n = 1; n <= 60; n++) {
      const shares = Array.from({ length: n }, (_, rank) => shareOf(50, n, rank));
      expect(shares.reduce((sum, share) => sum + share, 0)).toBe(50);
      expect(Math.max(...shares) - Math.min(...shares)).toBeLessThanOrEqual(1);
    }
  });
});
