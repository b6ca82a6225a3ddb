import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { ensureClusterSchema } from "../../src/cluster/schema.ts";
import { type ClusterLimiter, createClusterLimiter, shareWindow } from "../../src/feishu/cluster-budget.ts";
import { usePostgres } from "../helpers/postgres.ts";

/**
 * The app limiter of several instances (src/feishu/cluster-budget.ts) with real budget members on one real
 * Postgres, driven as hard as they can go. The windows are shortened, in the platform's proportion (a
 * "second" of 50 ms, a "minute" of 3 s, the platform's 50 and 1,000 calls in them, so the minute's limit
 * binds as it does on the platform), and members come and go through several minute windows in seconds;
 * the heartbeats are real (every 100 ms).
 */
const pg = usePostgres();
const WINDOWS = { secondMs: 50, minuteMs: 3_000 };
const BUDGET = { heartbeatEveryMs: 100, ttlMs: 400 };
/** A newcomer's grace: one heartbeat interval plus 1 s (cluster/budget.ts). */
const GRACE_MS = BUDGET.heartbeatEveryMs + 1_000;
const now = () => performance.now();

interface Call {
  member: string;
  at: number;
  urgent: boolean;
}

/**
 * A member driven by 40 callers in a loop, each call taking 0–3 ms; a quarter of the callers are urgent.
 * With `from`, the callers start once it resolves (the member beats from the start).
 */
function driven(name: string, calls: Call[], from?: Promise<void>) {
  const member: ClusterLimiter = createClusterLimiter({
    cluster: { db: pg().pool(), instance: name, budget: BUDGET },
    appId: "cli_a",
    windows: WINDOWS,
    now,
  });
  let driving = true;
  const callers = Array.from({ length: 40 }, async (_, k) => {
    const urgent = k % 4 === 0;
    await from;
    while (driving) {
      await member.limiter(
        async () => {
          calls.push({ member: name, at: now(), urgent });
          await sleep(Math.random() * 3);
        },
        { urgent },
      );
    }
  });
  return {
    ...member,
    /** Stops calling, lets the queued calls go, then leaves the budget. */
    async leave() {
      driving = false;
      await Promise.all(callers);
      await member.stop();
    },
  };
}

/** The most calls in any window of `ms` (a window (t - ms, t]), and of whom. */
function busiest(calls: readonly Call[], ms: number, who?: string): number {
  const times = calls
    .filter((call) => who === undefined || call.member === who)
    .map((call) => call.at)
    .sort((a, b) => a - b);
  let most = 0;
  let from = 0;
  for (let i = 0; i < times.length; i++) {
    while ((times[from] ?? 0) <= (times[i] ?? 0) - ms) from++;
    most = Math.max(most, i - from + 1);
  }
  return most;
}

describe("the app limiter of several instances, on one Postgres", () => {
  it("never lets three members, driven hard, exceed 50 in a second or 1,000 in a minute as they come and go", async () => {
    await ensureClusterSchema(pg().pool());
    const calls: Call[] = [];
    // Three start at once: one takes the budget at its first heartbeat, the later ones wait for their share.
    const a = driven("a", calls);
    const b = driven("b", calls);
    const c = driven("c", calls);
    await sleep(1_100 + WINDOWS.minuteMs + 800);
    expect([a, b, c].map((m) => m.limits())).toEqual([
      { perSecond: 17, perMinute: 334 },
      { perSecond: 17, perMinute: 333 },
      { perSecond: 16, perMinute: 333 },
    ]);
    const threeUntil = now();

    // c leaves: a and b take its share once the calls c made have left each window.
    await c.leave();
    const left = now();
    await sleep(WINDOWS.secondMs + BUDGET.heartbeatEveryMs * 3);
    expect(a.limits()).toEqual({ perSecond: 25, perMinute: 334 });
    await sleep(WINDOWS.minuteMs);
    expect([a.limits(), b.limits()]).toEqual([
      { perSecond: 25, perMinute: 500 },
      { perSecond: 25, perMinute: 500 },
    ]);
    await sleep(WINDOWS.minuteMs);
    const twoFrom = now() - WINDOWS.minuteMs;
    const twoUntil = now();

    // d joins: a and b shrink at their next heartbeat; d takes nothing until its grace and a window pass.
    const d = driven("d", calls);
    await sleep(BUDGET.heartbeatEveryMs * 4);
    expect(a.limits().perSecond).toBeLessThanOrEqual(17);
    expect(a.limits().perMinute).toBeLessThanOrEqual(334);
    expect(d.limits()).toEqual({ perSecond: 0, perMinute: 0 });
    await sleep(1_100 + WINDOWS.minuteMs + 500);
    expect(d.limits().perMinute).toBeGreaterThan(300);
    await Promise.all([a.leave(), b.leave(), d.leave()]);

    // Together, never over the app's limits, in any window; and driven hard enough to reach them.
    expect(busiest(calls, WINDOWS.secondMs)).toBeLessThanOrEqual(50);
    expect(busiest(calls, WINDOWS.minuteMs)).toBeLessThanOrEqual(1000);
    expect(busiest(calls, WINDOWS.minuteMs)).toBeGreaterThan(900);
    expect(busiest(calls, WINDOWS.secondMs)).toBeGreaterThan(40);
    // Each member adapted: with three, a minute window of a's held at most its third; with two, half.
    const during = (from: number, until: number) =>
      calls.filter((call) => call.at > from && call.at <= until);
    expect(busiest(during(0, threeUntil), WINDOWS.minuteMs, "c")).toBeLessThanOrEqual(333);
    expect(busiest(during(left, twoUntil), WINDOWS.minuteMs, "a")).toBeLessThanOrEqual(500);
    expect(during(twoFrom, twoUntil).filter((call) => call.member === "a").length).toBeGreaterThan(400);
    // The urgent lane is inside the share, not on top of it: plain calls leave it a tenth of each member's
    // share (rounded down: 301 + 300 + 300 of 1,000), and the urgent callers spent it, within the 1,000 above.
    const plain = calls.filter((call) => !call.urgent);
    expect(busiest(plain, WINDOWS.minuteMs)).toBeLessThanOrEqual(901);
    expect(busiest(calls, WINDOWS.minuteMs)).toBeGreaterThan(950);
    expect(calls.filter((call) => call.member === "c" && call.at > left)).toEqual([]);
  }, 40_000);

  it("lets a newcomer to a quiet app make its first call within its grace and a heartbeat, not a minute", async () => {
    await ensureClusterSchema(pg().pool());
    const member = (name: string, appId: string) =>
      createClusterLimiter({
        cluster: { db: pg().pool(), instance: name, budget: BUDGET },
        appId,
        windows: WINDOWS,
        now,
      });
    /** How long a member made at once waits for its first call (an instance's botInfo at start). */
    const firstCall = async (m: ClusterLimiter) => {
      const started = now();
      await m.limiter(async () => undefined);
      return now() - started;
    };
    // Older members, quiet: their counts say they hold nothing beyond their shares.
    const older = [member("a", "cli_a"), member("b", "cli_a")];
    await sleep(GRACE_MS + BUDGET.heartbeatEveryMs * 3);
    const late = member("c", "cli_a");
    const waited = await firstCall(late);
    expect(waited).toBeGreaterThanOrEqual(GRACE_MS);
    expect(waited).toBeLessThan(GRACE_MS + BUDGET.heartbeatEveryMs * 4 + WINDOWS.secondMs);
    expect(late.limits().perMinute).toBe(333);
    // Three started together: the first alone takes the budget at once, the two others after their grace.
    const together = ["x", "y", "z"].map((name) => member(name, "cli_b"));
    const waits = await Promise.all(together.map(firstCall));
    expect(Math.max(...waits)).toBeLessThan(GRACE_MS + BUDGET.heartbeatEveryMs * 4 + WINDOWS.secondMs);
    await Promise.all([...older, late, ...together].map((m) => m.stop()));
  }, 20_000);

  it("keeps a newcomer to a busy app, and one that joins as another leaves, within the app's limits", async () => {
    await ensureClusterSchema(pg().pool());
    const calls: Call[] = [];
    const inLastMinute = () => calls.filter((call) => call.at > now() - WINDOWS.minuteMs).length;
    // Two members spend the whole budget in one burst, just before the newcomer comes: their calls, made under
    // halves, fill the minute window for most of a minute after its grace.
    let go: () => void = () => undefined;
    const burst = new Promise<void>((resolve) => (go = resolve));
    const a = driven("a", calls, burst);
    const b = driven("b", calls, burst);
    await sleep(GRACE_MS + WINDOWS.minuteMs + 500);
    expect([a.limits(), b.limits()]).toEqual([
      { perSecond: 25, perMinute: 500 },
      { perSecond: 25, perMinute: 500 },
    ]);
    go();
    for (const started = now(); inLastMinute() < 990 && now() - started < 2_000; ) await sleep(10);
    expect(inLastMinute()).toBeGreaterThanOrEqual(990);
    const c = driven("c", calls);
    const joined = now();
    await sleep(GRACE_MS + WINDOWS.minuteMs + 500);
    const first = calls.find((call) => call.member === "c")?.at ?? Number.POSITIVE_INFINITY;
    expect(first - joined).toBeLessThan(GRACE_MS + WINDOWS.minuteMs);
    // c leaves and d joins at once: c's last calls are still in the window, and d's room leaves them out.
    await c.leave();
    const left = now();
    const d = driven("d", calls);
    await sleep(GRACE_MS + WINDOWS.minuteMs + 500);
    await Promise.all([a.leave(), b.leave(), d.leave()]);
    expect(calls.filter((call) => call.member === "c" && call.at > left)).toEqual([]);
    expect(calls.some((call) => call.member === "d")).toBe(true);
    // All four members' calls together, in every sliding window.
    expect(busiest(calls, WINDOWS.secondMs)).toBeLessThanOrEqual(50);
    expect(busiest(calls, WINDOWS.minuteMs)).toBeLessThanOrEqual(1000);
    expect(busiest(calls, WINDOWS.minuteMs)).toBeGreaterThan(950);
  }, 40_000);
});

describe("shareWindow", () => {
  const share = (perSecond: number, perMinute: number, byRank = [perSecond, perMinute]) => ({
    perSecond,
    perMinute,
    byRank: { perSecond: byRank[0] ?? 0, perMinute: byRank[1] ?? 0 },
  });
  it("applies a smaller share at once and a larger one once each window has passed", () => {
    let t = 0;
    const held = shareWindow({ secondMs: 100, minuteMs: 2_000 }, () => t);
    expect(held.limits()).toEqual({ perSecond: 0, perMinute: 0 });
    held.record(share(50, 1000));
    expect(held.limits()).toEqual({ perSecond: 50, perMinute: 1000 });
    t = 10;
    held.record(share(17, 334));
    expect(held.limits()).toEqual({ perSecond: 17, perMinute: 334 });
    t = 500;
    held.record(share(25, 500));
    expect(held.limits()).toEqual({ perSecond: 17, perMinute: 334 });
    // The windows are (t - ms, t]: the smaller share's last moment was just before 500.
    t = 599;
    expect(held.limits()).toEqual({ perSecond: 17, perMinute: 334 });
    t = 600;
    expect(held.limits()).toEqual({ perSecond: 25, perMinute: 334 });
    t = 2_499;
    expect(held.limits()).toEqual({ perSecond: 25, perMinute: 334 });
    t = 2_501;
    expect(held.limits()).toEqual({ perSecond: 25, perMinute: 500 });
  });

  it("holds a newcomer's second back a second after its grace, and its minute to its room, which may grow at once", () => {
    let t = 0;
    const held = shareWindow({ secondMs: 100, minuteMs: 2_000 }, () => t);
    held.record(share(0, 0, [16, 333]));
    expect(held.limits()).toEqual({ perSecond: 0, perMinute: 0 });
    t = 1_000;
    held.record(share(16, 100, [16, 333]));
    expect(held.limits()).toEqual({ perSecond: 0, perMinute: 100 });
    t = 1_101;
    expect(held.limits()).toEqual({ perSecond: 16, perMinute: 100 });
    held.record(share(16, 333, [16, 333]));
    expect(held.limits()).toEqual({ perSecond: 16, perMinute: 333 });
    // Its share by rank still keeps to the smallest of the window: a larger one waits the window out.
    t = 1_200;
    held.record(share(25, 500, [25, 500]));
    t = 3_199;
    expect(held.limits()).toEqual({ perSecond: 25, perMinute: 333 });
    t = 3_201;
    expect(held.limits()).toEqual({ perSecond: 25, perMinute: 500 });
  });
});
