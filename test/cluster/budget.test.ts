import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import {
  type BudgetShare,
  createBudgetShare,
  type MemberRow,
  roomOf,
  type Share,
  shareOf,
} from "../../src/cluster/budget.ts";
import { ensureClusterSchema } from "../../src/cluster/schema.ts";
import { usePostgres } from "../helpers/postgres.ts";

/**
 * The app budget split among live members, on a real Postgres. Heartbeats are driven by hand (beat()) so
 * the test says exactly who has seen what; the newcomer's grace is one heartbeat interval plus 1 s, and the
 * "minute" (a newcomer's first one, and how long a gone member's count is kept) is shortened to 3 s. Each
 * member's published count is set by the test (`calls`), as its limiter's would be.
 */
const pg = usePostgres();
const HEARTBEAT_MS = 200;
const GRACE_MS = HEARTBEAT_MS + 1_000;
const MINUTE_MS = 3_000;

async function members(names: string[], ttlMs = 600) {
  const first = pg().pool();
  await ensureClusterSchema(first);
  const changes: Record<string, Share[]> = {};
  const calls: Record<string, number> = {};
  const budgets = Object.fromEntries(
    names.map((name, i) => {
      changes[name] = [];
      calls[name] = 0;
      const budget = createBudgetShare({
        db: i === 0 ? first : pg().pool(),
        appId: "cli_a",
        member: name,
        calls: () => calls[name] ?? 0,
        minuteMs: MINUTE_MS,
        heartbeatEveryMs: HEARTBEAT_MS,
        ttlMs,
        onChange: (share) => changes[name]?.push(share),
      });
      return [name, budget];
    }),
  ) as Record<string, BudgetShare>;
  return { db: first, budgets, changes, calls };
}

/** A share to spend of `perSecond` and `perMinute`, with the shares by rank `byRank`. */
const spend = (perSecond: number, perMinute: number, members: number, byRank = [perSecond, perMinute]) => ({
  perSecond,
  perMinute,
  members,
  byRank: { perSecond: byRank[0], perMinute: byRank[1] },
});

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
    expect(a.share()).toEqual(spend(0, 0, 0));
    expect(await a.beat()).toEqual(spend(50, 1000, 1));
    // b and c join: they take nothing until the others have had a heartbeat to see them.
    expect(await b.beat()).toEqual(spend(0, 0, 2, [25, 500]));
    expect(await c.beat()).toEqual(spend(0, 0, 3, [16, 333]));
    expect(total(all).perSecond).toBeLessThanOrEqual(50);
    // a shrinks at once; in its own first minute it also leaves room for b, which last said it holds 500.
    expect(await a.beat()).toEqual(spend(17, 334 - (500 - 333), 3, [17, 334]));
    await beatWhile(GRACE_MS, all);
    for (const budget of all) await budget.beat();
    expect(all.map((budget) => budget.share().perSecond)).toEqual([17, 17, 16]);
    expect(all.map((budget) => budget.share().perMinute)).toEqual([334, 333, 333]);
    expect(total(all)).toEqual({ perSecond: 50, perMinute: 1000 });
    // c leaves: its share is gone at once, and the others take it over at their next heartbeat.
    await c.stop();
    expect(c.share().perSecond).toBe(0);
    expect(total(all).perSecond).toBeLessThanOrEqual(50);
    expect(await a.beat()).toEqual(spend(25, 500, 2));
    expect(await b.beat()).toEqual(spend(25, 500, 2));
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
    // b dies without a word; within its 600 ms TTL a still leaves it its half. Then a takes the whole
    // budget, less, in its own first minute, the 500 b may have spent (its row is kept a minute for that).
    await sleep(700);
    expect(await a.beat()).toEqual(spend(50, 500, 1, [50, 1000]));
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
          calls: () => 0,
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

describe("published counts", () => {
  it("let a newcomer spend in its first minute what the older members' counts leave, once they saw it", async () => {
    const { db, budgets, calls } = await members(["a", "b"], 2_000);
    const { a, b } = budgets as { a: BudgetShare; b: BudgetShare };
    calls.a = 700;
    await a.beat();
    expect(await b.beat()).toEqual(spend(0, 0, 2, [25, 500]));
    const row = await db.query("SELECT minute_calls, minute_share FROM cluster_members WHERE member = 'a'");
    expect(row.rows).toEqual([{ minute_calls: 700, minute_share: 1000 }]);
    // Its grace over, but a has not beaten since b joined: a may still spend its 1,000, so b has no room.
    await sleep(GRACE_MS);
    expect(await b.beat()).toEqual(spend(25, 0, 2, [25, 500]));
    // a sees b and keeps to 500 from then on: of its 700, 200 are beyond its share, 300 are left for b.
    expect(await a.beat()).toEqual(spend(25, 500, 2));
    expect(await b.beat()).toEqual(spend(25, 300, 2, [25, 500]));
    // As a's calls leave the window, b's room grows at once (no window to wait for: the count is a's now).
    calls.a = 450;
    await a.beat();
    expect(await b.beat()).toEqual(spend(25, 500, 2));
  });

  it("take a gone member's last count off a newcomer's room until a minute after it went", async () => {
    const { db, budgets, calls } = await members(["a", "b", "c"]);
    const { a, b, c } = budgets as { a: BudgetShare; b: BudgetShare; c: BudgetShare };
    await a.beat();
    await b.beat();
    await beatWhile(GRACE_MS, [a, b]);
    calls.b = 400;
    await b.stop();
    const left = Date.now();
    expect(await c.beat()).toEqual(spend(0, 0, 2, [25, 500]));
    await beatWhile(GRACE_MS, [a, c]);
    expect(await c.beat()).toEqual(spend(25, 100, 2, [25, 500]));
    await beatWhile(MINUTE_MS - (Date.now() - left) + HEARTBEAT_MS, [a, c]);
    expect(await c.beat()).toEqual(spend(25, 500, 2));
    const rows = await db.query("SELECT member FROM cluster_members ORDER BY member");
    expect(rows.rows).toEqual([{ member: "a" }, { member: "c" }]);
  });

  it("leave a newcomer no room for its first minute beside a row without a count (an older version)", async () => {
    const { db, budgets } = await members(["b"]);
    const { b } = budgets as { b: BudgetShare };
    await db.query(
      `INSERT INTO cluster_members (app_id, member, joined_at, expires_at)
       VALUES ('cli_a', 'a', now(), now() + interval '1 hour')`,
    );
    expect(await b.beat()).toEqual(spend(0, 0, 2, [25, 500]));
    await beatWhile(GRACE_MS, [b]);
    expect(await b.beat()).toEqual(spend(25, 0, 2, [25, 500]));
    // After its first minute, the smallest-share rule alone (the older member's calls have left the window).
    await beatWhile(MINUTE_MS + HEARTBEAT_MS, [b]);
    expect(await b.beat()).toEqual(spend(25, 500, 2));
  });

  it("make a member whose row expired a newcomer again when it beats again", async () => {
    const { budgets } = await members(["a", "b"]);
    const { a, b } = budgets as { a: BudgetShare; b: BudgetShare };
    await a.beat();
    await b.beat();
    await beatWhile(GRACE_MS, [a, b]);
    expect(await b.beat()).toMatchObject({ perSecond: 25, members: 2 });
    await beatWhile(700, [a]);
    expect(await b.beat()).toEqual(spend(0, 0, 2, [25, 500]));
  });
});

describe("roomOf", () => {
  const row = (member: string, live: boolean, calls: number | null, share: number | null): MemberRow => ({
    member,
    live,
    minuteCalls: calls,
    minuteShare: share,
  });
  it("is the share less what the others may hold beyond theirs, and all a gone member may hold", () => {
    const me = row("c", true, null, null);
    // Three live: shares 334, 333, 333. a holds 500 (166 beyond), b is within its share.
    expect(roomOf(1000, [row("a", true, 500, 334), row("b", true, 100, 333), me], "c")).toBe(333 - 166);
    // a has not seen c yet (it keeps to 500 and says so): its whole 500 - 334 is taken off.
    expect(roomOf(1000, [row("a", true, 0, 500), row("b", true, 0, 333), me], "c")).toBe(333 - 166);
    // A gone member: all it holds. Never below 0.
    expect(roomOf(1000, [row("a", true, 0, 500), row("b", false, 300, 0), me], "c")).toBe(500 - 300);
    expect(roomOf(1000, [row("a", true, 1000, 1000), me], "c")).toBe(0);
    // A row with no count: no room.
    expect(roomOf(1000, [row("a", true, null, null), me], "c")).toBe(0);
    expect(roomOf(1000, [me], "c")).toBe(1000);
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
