import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { AskRegistry } from "../src/asks/registry.ts";
import { createClusterPool } from "../src/cluster/pool.ts";
import { DEMO_QUESTIONS } from "../src/harness/agents/demo.ts";
import { AskStore } from "../src/store/asks.ts";
import { openDatabase } from "../src/store/db.ts";
import { ensureStoreSchema, STORE_PG_TYPES } from "../src/store/pg-schema.ts";
import { postgresSql, sqliteSql } from "../src/store/sql.ts";
import { startEmbeddedPostgres } from "../test/helpers/embedded-postgres.ts";
import { type Check, exactly, zero } from "./checks.ts";
import { type BenchOptions, clock, fmtInt, fmtMs, percentile, printTable } from "./common.ts";

/**
 * Benchmark (issue 27): the ask rows' register + complete on the SQLite file (WAL) and on Postgres
 * (embedded, fsync on; or BENCH_DATABASE_URL), through the same repository and registry:
 * 1. one ask at a time (a single tool call's latency);
 * 2. 8 in flight (several runs asking at once);
 * 3. Postgres only, two instances: asked on one, answered from the row on the other (what a callback that
 *    reaches another instance does), 8 in flight.
 * Every ask must be answered exactly once; the ratio is against SQLite one at a time in the same run.
 */

const QUESTIONS = [DEMO_QUESTIONS.deploy, DEMO_QUESTIONS.features];
const ANSWERS = QUESTIONS.map((q) => ({
  question: q.question,
  selectedLabels: [q.options[0]?.label ?? ""],
  customInput: null,
}));

function registry(store: AskStore): AskRegistry {
  let n = 0;
  return new AskRegistry({
    timeoutMs: 900_000,
    now: Date.now,
    newId: () => `b-${Date.now().toString(36)}-${++n}-${Math.random().toString(36).slice(2, 8)}`,
    onListenerError: (error) => {
      throw error;
    },
    store,
  });
}

interface Round {
  what: string;
  ms: number;
  latencies: number[];
  answered: number;
}

/** `count` asks, `inFlight` at a time: registered on `asker`, answered on `answerer`. */
async function round(
  what: string,
  asker: AskRegistry,
  answerer: AskRegistry,
  count: number,
  inFlight: number,
) {
  const latencies: number[] = [];
  let next = 0;
  let answered = 0;
  const started = clock();
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= count) return;
      const t = clock();
      const ask = await asker.register({
        sessionId: `s${i % 50}`,
        runId: `r${i}`,
        answererId: "ou_a",
        questions: QUESTIONS,
      });
      const result = await answerer.complete(ask.sessionId, ask.requestId, ANSWERS, {
        surface: "bench",
        userId: "ou_a",
      });
      if (result.ok) answered += 1;
      latencies.push(clock() - t);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return { what, ms: clock() - started, latencies, answered } satisfies Round;
}

export async function runAskRows(
  options: BenchOptions,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Check[]> {
  const count = options.quick ? 1_000 : 10_000;
  const rounds: Round[] = [];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-bench-ask-rows-"));
  const db = openDatabase(path.join(dir, "bot.sqlite"));
  const onFile = registry(new AskStore(sqliteSql(db)));
  rounds.push(await round("SQLite file, one at a time", onFile, onFile, count, 1));
  rounds.push(await round("SQLite file, 8 in flight", onFile, onFile, count, 8));
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });

  const own = env.BENCH_DATABASE_URL ? undefined : await startEmbeddedPostgres({ fsync: true });
  const url = env.BENCH_DATABASE_URL ?? own?.url ?? "";
  const pools = [0, 1].map(() => createClusterPool({ connectionString: url, max: 8, types: STORE_PG_TYPES }));
  try {
    await ensureStoreSchema(pools[0]!);
    const [a, b] = pools.map((pool) => registry(new AskStore(postgresSql(pool)))) as [
      AskRegistry,
      AskRegistry,
    ];
    rounds.push(await round("Postgres, one at a time", a, a, count, 1));
    rounds.push(await round("Postgres, 8 in flight", a, a, count, 8));
    rounds.push(await round("Postgres, asked on A, answered on B, 8 in flight", a, b, count, 8));
  } finally {
    await Promise.all(pools.map((pool) => pool.end()));
    await own?.destroy();
  }

  const base = rounds[0] ? count / rounds[0].ms : 1;
  printTable(
    `Ask rows: register + complete, ${fmtInt(count)} asks per round (Postgres ${own ? "embedded, fsync on" : "BENCH_DATABASE_URL"})`,
    ["store", "asks/s", "vs SQLite (1 at a time)", "p50", "p99"],
    rounds.map((r) => [
      r.what,
      fmtInt((count / r.ms) * 1000),
      `${(count / r.ms / base).toFixed(2)}×`,
      fmtMs(percentile(r.latencies, 50)),
      fmtMs(percentile(r.latencies, 99)),
    ]),
  );
  return rounds.flatMap((r) => [
    exactly("ask-rows", `${r.what}: asks answered`, r.answered, count),
    zero("ask-rows", `${r.what}: answers refused`, count - r.answered),
  ]);
}
