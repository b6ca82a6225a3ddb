import { createClaims } from "../src/cluster/claims.ts";
import { createLeases, type Lease } from "../src/cluster/leases.ts";
import { createClusterPool, type Db } from "../src/cluster/pool.ts";
import { ensureClusterSchema } from "../src/cluster/schema.ts";
import { startEmbeddedPostgres } from "../test/helpers/embedded-postgres.ts";
import { type Check, exactly } from "./checks.ts";
import { type BenchOptions, clock, fmtInt, fmtMs, percentile, printTable } from "./common.ts";

/**
 * Benchmark: the cluster primitives (issue 27) on a real Postgres (embedded-postgres, fsync on; or
 * BENCH_DATABASE_URL), from two instances (two pools of 5 connections), 8 calls in flight per instance.
 * 1. lease acquire, renew and a fenced write (one insert under the lease's check) per second, with latency;
 * 2. a contested lease: 3 instances race for each of many fresh names, exactly one must win each;
 * 3. event claims: every event id delivered to both instances, exactly one claim each;
 * 4. work claims: rows queued, then claimed and completed by 8 workers on two instances, batches of 1 and 10;
 *    every row done exactly once.
 */

const IN_FLIGHT = 8;

interface Row {
  what: string;
  ops: number;
  ms: number;
  latencies: number[];
}

/** `count` calls of `op(i)`, `IN_FLIGHT` at a time on each of `instances`, timing each. */
async function drive(
  count: number,
  instances: number,
  op: (i: number, instance: number) => Promise<unknown>,
) {
  const latencies: number[] = [];
  let next = 0;
  const started = clock();
  const worker = async (instance: number) => {
    for (;;) {
      const i = next++;
      if (i >= count) return;
      const t = clock();
      await op(i, instance);
      latencies.push(clock() - t);
    }
  };
  await Promise.all(Array.from({ length: instances * IN_FLIGHT }, (_, w) => worker(w % instances)));
  return { ms: clock() - started, latencies };
}

export async function runCluster(
  options: BenchOptions,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Check[]> {
  const own = env.BENCH_DATABASE_URL ? undefined : await startEmbeddedPostgres({ fsync: true });
  const url = env.BENCH_DATABASE_URL ?? own?.url ?? "";
  const pools: Db[] = [
    createClusterPool({ connectionString: url }),
    createClusterPool({ connectionString: url }),
  ];
  const checks: Check[] = [];
  const n = options.quick ? 500 : 5_000;
  try {
    const [first] = pools as [Db, Db];
    await ensureClusterSchema(first);
    const run = `b${Date.now().toString(36)}`;
    await first.query(`CREATE TABLE IF NOT EXISTS bench_fenced (fence bigint NOT NULL, body text NOT NULL)`);
    const leases = pools.map(createLeases);
    const claims = pools.map(createClaims);
    const rows: Row[] = [];

    const held: Lease[] = [];
    const acquired = await drive(n, 2, async (i, instance) => {
      const lease = await leases[instance]?.acquire(`${run}:lease:${i}`, `i${instance}`, 60_000);
      if (lease) held[i] = lease;
    });
    rows.push({ what: "lease acquire (free)", ops: n, ...acquired });
    checks.push(exactly("cluster", "leases acquired (free names)", held.filter(Boolean).length, n));
    const renewed = await drive(n, 2, async (i, instance) => {
      const lease = held[i];
      if (lease) await leases[instance]?.renew(lease, 60_000);
    });
    rows.push({ what: "lease renew", ops: n, ...renewed });
    const fenced = await drive(n, 2, async (i, instance) => {
      const lease = held[i];
      if (lease)
        await leases[instance]?.fenced(lease, (client) =>
          client.query("INSERT INTO bench_fenced VALUES ($1, $2)", [lease.fence, "x"]),
        );
    });
    rows.push({ what: "fenced write (check + insert)", ops: n, ...fenced });

    const rounds = options.quick ? 100 : 1_000;
    let winners = 0;
    const contested = await drive(rounds, 1, async (i) => {
      const attempts = await Promise.all(
        [0, 1, 2].map((who) => leases[who % 2]?.acquire(`${run}:race:${i}`, `r${who}`, 60_000)),
      );
      winners += attempts.filter((lease) => lease !== undefined).length;
    });
    rows.push({ what: "contested acquire (3 race, per round)", ops: rounds, ...contested });
    checks.push(exactly("cluster", "winners of contested leases", winners, rounds));

    let claimed = 0;
    const events = await drive(n * 2, 2, async (i, instance) => {
      const claim = await claims[instance]?.claimEvent(`${run}:ev:${i >> 1}`, `i${instance}`);
      if (claim?.claimed) claimed += 1;
    });
    rows.push({ what: "event claim (each id to both)", ops: n * 2, ...events });
    checks.push(exactly("cluster", "event claims won", claimed, n));

    for (const batch of [1, 10]) {
      const kind = `${run}-work-${batch}`;
      for (let i = 0; i < n; i += 500) {
        const values = Array.from({ length: Math.min(500, n - i) }, (_, k) => i + k);
        await first.query(
          "INSERT INTO cluster_work (kind, payload) SELECT $1, jsonb_build_object('n', x) FROM unnest($2::int[]) x",
          [kind, values],
        );
      }
      const seen = new Map<number, number>();
      const latencies: number[] = [];
      const started = clock();
      const worker = async (instance: number) => {
        for (;;) {
          const t = clock();
          const items =
            (await claims[instance]?.claimWork(`i${instance}`, {
              kinds: [kind],
              limit: batch,
              claimMs: 60_000,
            })) ?? [];
          if (items.length === 0) return;
          for (const item of items) {
            const key = (item.payload as { n: number }).n;
            seen.set(key, (seen.get(key) ?? 0) + 1);
            await claims[instance]?.complete(item);
          }
          latencies.push((clock() - t) / items.length);
        }
      };
      await Promise.all(Array.from({ length: 8 }, (_, w) => worker(w % 2)));
      rows.push({
        what: `work claim + complete (batch ${batch}, 8 workers)`,
        ops: n,
        ms: clock() - started,
        latencies,
      });
      checks.push(exactly("cluster", `work rows done (batch ${batch})`, seen.size, n));
      checks.push(
        exactly(
          "cluster",
          `work rows done twice (batch ${batch})`,
          [...seen.values()].filter((c) => c > 1).length,
          0,
        ),
      );
    }

    printTable(
      `Cluster primitives on Postgres (${own ? "embedded, fsync on" : "BENCH_DATABASE_URL"}; 2 instances × ${IN_FLIGHT} in flight)`,
      ["operation", "calls", "per second", "p50", "p99"],
      rows.map((row) => [
        row.what,
        fmtInt(row.ops),
        fmtInt((row.ops / row.ms) * 1000),
        fmtMs(percentile(row.latencies, 50)),
        fmtMs(percentile(row.latencies, 99)),
      ]),
    );
    return checks;
  } finally {
    await Promise.all(pools.map((pool) => pool.end()));
    await own?.destroy();
  }
}
