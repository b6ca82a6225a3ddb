import { createClusterPool, type Db } from "../src/cluster/pool.ts";
import { ensureClusterSchema } from "../src/cluster/schema.ts";
import { createClusterLimiter } from "../src/feishu/cluster-budget.ts";
import { createAppLimiter, type Limiter, type LimitWindows } from "../src/feishu/limits.ts";
import { startEmbeddedPostgres } from "../test/helpers/embedded-postgres.ts";
import { type Check, zero } from "./checks.ts";
import { type BenchOptions, clock, fmtInt, printTable, seededRandom, sleep } from "./common.ts";

/**
 * Benchmark: the app's 50/s + 1,000/min shared by 3 instances (src/feishu/cluster-budget.ts over
 * src/cluster/budget.ts) on a real Postgres (embedded, or BENCH_DATABASE_URL), against one process's limiter.
 * Each limiter is driven as hard as it goes: 20 callers in a loop, each call taking 5–30 ms (a network call),
 * a quarter of the callers urgent (so the urgent lane's headroom is spent too, inside the share). Every call's start is recorded; a violation is a call that is the 51st in some second
 * or the 1,001st in some minute, across all members.
 * 1. one process, its own limiter;
 * 2. 3 members started together, once each holds its share (the later two after their grace and a heartbeat:
 *    cluster-budget.ts); how long each waited for its first call, as an instance's start-up botInfo does;
 * 3. the same 3, then one leaves: the other two take its share once its calls have left each window;
 * 4. the two, busy, then a newcomer joins: it spends what their published counts leave it (budget.ts roomOf).
 * Full: the platform's windows, 90 s per row. `--quick`: the windows ten times shorter (100 ms and 6 s, the
 * same 50 and 1,000 in them) and 9 s per row, so rates are given per window-second.
 */

export interface ClusterBudgetRow {
  scenario: string;
  calls: number;
  /** Calls per window-second (per second in a full run). */
  perSecond: number;
  busiestSecond: number;
  busiestMinute: number;
  /** Calls over 50 in a second or over 1,000 in a minute. */
  violations: number;
}

const CALLERS = 20;

export function clusterBudgetChecks(rows: readonly ClusterBudgetRow[]): Check[] {
  return rows.map((row) =>
    zero("cluster-budget", `calls over the app's limits (${row.scenario})`, row.violations),
  );
}

/** How many calls are the 51st in a second or the 1,001st in a minute: each window (t - ms, t]. */
export function violations(
  times: readonly number[],
  windows: LimitWindows,
): { count: number; busiest: number[] } {
  const sorted = [...times].sort((a, b) => a - b);
  let count = 0;
  const busiest = [0, 0];
  const limits = [
    [windows.secondMs, 50],
    [windows.minuteMs, 1000],
  ] as const;
  limits.forEach(([ms, limit], w) => {
    let from = 0;
    for (let i = 0; i < sorted.length; i++) {
      while ((sorted[from] ?? 0) <= (sorted[i] ?? 0) - ms) from++;
      const inWindow = i - from + 1;
      busiest[w] = Math.max(busiest[w] ?? 0, inWindow);
      if (inWindow > limit) count += 1;
    }
  });
  return { count, busiest };
}

/** How long a limiter made just now waits for its first call (an instance's start-up botInfo). */
async function firstCall(limiter: Limiter): Promise<number> {
  const started = clock();
  await limiter(async () => undefined);
  return clock() - started;
}

/** Drives `limiter` until `until()`, recording each call's start in `times`. */
function drive(limiter: Limiter, times: number[], scale: number, random: () => number, until: () => boolean) {
  return Promise.all(
    Array.from({ length: CALLERS }, async (_, k) => {
      while (!until())
        await limiter(
          async () => {
            times.push(clock());
            await sleep((5 + random() * 25) / scale);
          },
          { urgent: k % 4 === 0 },
        );
    }),
  );
}

export async function runClusterBudget(
  options: BenchOptions,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Check[]> {
  const scale = options.quick ? 10 : 1;
  const windows: LimitWindows = { secondMs: 1000 / scale, minuteMs: 60_000 / scale };
  const rowMs = 90_000 / scale;
  const budget = { heartbeatEveryMs: options.quick ? 100 : 500, ttlMs: options.quick ? 300 : 1_500, windows };
  const random = seededRandom(27);
  // The limiters on the clock the calls are counted with: Date.now's whole milliseconds against
  // performance.now's fractions put a call at a window's edge inside one and outside the other (51 in a
  // "second" at --quick's 100 ms windows, none of them over in the limiter's own count).
  const own = env.BENCH_DATABASE_URL ? undefined : await startEmbeddedPostgres({ fsync: true });
  const url = env.BENCH_DATABASE_URL ?? own?.url ?? "";
  const pools: Db[] = [1, 2, 3].map(() => createClusterPool({ connectionString: url }));
  const rows: ClusterBudgetRow[] = [];
  const row = (scenario: string, times: number[], all: number[], ms: number) => {
    const found = violations(all, windows);
    rows.push({
      scenario,
      calls: times.length,
      perSecond: times.length / (ms / windows.secondMs),
      busiestSecond: found.busiest[0] ?? 0,
      busiestMinute: found.busiest[1] ?? 0,
      violations: found.count,
    });
  };
  try {
    await ensureClusterSchema(pools[0] as Db);
    const appId = `cli_bench_${Date.now().toString(36)}`;

    const alone: number[] = [];
    const aloneUntil = clock() + rowMs;
    await drive(createAppLimiter({ windows, now: clock }), alone, scale, random, () => clock() >= aloneUntil);
    row("one process", alone, alone, rowMs);

    const warmedAt = clock();
    const members = pools.map((db, i) =>
      createClusterLimiter({ cluster: { db, instance: `m${i}`, budget }, appId, windows, now: clock }),
    );
    const firstCallMs = await Promise.all(members.map((m) => firstCall(m.limiter)));
    // Until each holds its share by rank (the first alone takes the whole budget at once, and shrinks).
    while (members.some((m) => m.limits().perMinute !== m.budget.share().byRank.perMinute)) await sleep(50);
    const warmUpMs = clock() - warmedAt;

    const three: number[] = [];
    const threeUntil = clock() + rowMs;
    await Promise.all(
      members.map((m) => drive(m.limiter, three, scale, random, () => clock() >= threeUntil)),
    );
    row("3 members on Postgres", three, three, rowMs);

    const [a, b, c] = members as [(typeof members)[0], (typeof members)[0], (typeof members)[0]];
    await c.stop();
    const two: number[] = [];
    const twoUntil = clock() + rowMs;
    await Promise.all([a, b].map((m) => drive(m.limiter, two, scale, random, () => clock() >= twoUntil)));
    // Violations across both rows: the leaver's calls are still in the windows the two spend in.
    row("3 members, then one leaves", two, [...three, ...two], rowMs);

    // A newcomer while the two are busy: the windows are full of their calls under halves.
    const older: number[] = [];
    const newer: number[] = [];
    const joinUntil = clock() + rowMs;
    const joinedAt = clock();
    const d = createClusterLimiter({
      cluster: { db: pools[2] as Db, instance: "m3", budget },
      appId,
      windows,
    });
    await Promise.all([
      drive(d.limiter, newer, scale, random, () => clock() >= joinUntil),
      ...[a, b].map((m) => drive(m.limiter, older, scale, random, () => clock() >= joinUntil)),
    ]);
    const newcomerFirstMs = (newer[0] ?? joinUntil) - joinedAt;
    const joined = [...older, ...newer];
    row("2 busy members, then one joins", joined, [...two, ...joined], rowMs);
    await Promise.all([a.stop(), b.stop(), d.stop()]);

    const unit = options.quick ? "per window-second" : "per second";
    printTable(
      `The app budget shared (${own ? "embedded Postgres" : "BENCH_DATABASE_URL"}; ${
        options.quick ? "windows 100 ms / 6 s" : "windows 1 s / 1 min"
      }, ${fmtInt(rowMs / 1000)} s per row; 3 members' shares in force after ${(warmUpMs / 1000).toFixed(1)} s)`,
      ["scenario", "calls", `calls ${unit}`, "busiest second", "busiest minute", "violations"],
      rows.map((r) => [
        r.scenario,
        fmtInt(r.calls),
        r.perSecond.toFixed(1),
        fmtInt(r.busiestSecond),
        fmtInt(r.busiestMinute),
        fmtInt(r.violations),
      ]),
    );
    const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
    console.log(
      `\nFirst call of each of the 3 started together (heartbeat every ${budget.heartbeatEveryMs} ms, grace ${
        budget.heartbeatEveryMs + 1000
      } ms): ${firstCallMs.map(seconds).join(", ")}; the newcomer to the 2 busy members: ${seconds(newcomerFirstMs)}`,
    );
    return clusterBudgetChecks(rows);
  } finally {
    await Promise.all(pools.map((pool) => pool.end()));
    await own?.destroy();
  }
}
