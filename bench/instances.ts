import { strings } from "../src/strings/index.ts";
import { startEmbeddedPostgres } from "../test/helpers/embedded-postgres.ts";
import { toastContent } from "./callbacks.ts";
import { all, type Check, within, zero } from "./checks.ts";
import {
  type BenchOptions,
  clock,
  fmtInt,
  fmtMs,
  maxOf,
  percentile,
  printTable,
  seededRandom,
} from "./common.ts";
import type { PreparedRequest, TimedResponse } from "./http-burst-worker.ts";
import { type CallCounts, countCalls } from "./instances-calls.ts";
import {
  freshDatabase,
  hookOf,
  type Outcome,
  openTasks,
  type StoreKind,
  settled,
  signedPost,
  startFleet,
  submitOf,
} from "./instances-fleet.ts";
import { measureTakeover, type TakeoverRow } from "./instances-takeover.ts";
import { startTsWorker } from "./worker.ts";

/**
 * Benchmark: several instances of the real bot (issue 27), side by side with one process. Child processes of
 * `npm start` in feishu mode, webhook transport, behind one app of the emulator; Postgres is embedded (fsync on)
 * or BENCH_DATABASE_URL, a database of its own per row.
 * 1. Callback answers at N open cards (200, 50 with --quick): N tasks each waiting on the demo agent's
 *    question, then their N submits at once, each to a random instance (from a worker thread, as Feishu
 *    sends them: encrypted and signed), on 1 process with SQLite, 1 with Postgres, 3 with Postgres.
 * 2. Takeover after kill -9, INSTANCE_LEASE_MS 10 s (the default) and 2 s (instances-takeover.ts).
 * 3. The Open API calls of every row at the emulator, across instances (instances-calls.ts).
 */

export interface AnswerRow {
  setup: string;
  cards: number;
  p50: number;
  p99: number;
  max: number;
  /** Someone else's submits one at a time (refused, nothing changes): the cost of one callback. */
  serialP50: number;
  /** Submits answered with the success toast. */
  accepted: number;
  strangers: number;
  /** Someone else's submits refused as theirs is (strings.feishu.onlyAnswererUnnamed). */
  strangersRefused: number;
  outcome: Outcome;
  /** From the burst until every task completed and its card showed it. */
  endedMs: number;
  calls: CallCounts;
}

/** Counts that do not depend on the machine; the p99 under 1.5 s and the takeover bound are timing targets. */
export function instancesChecks(answers: readonly AnswerRow[], takeovers: readonly TakeoverRow[]): Check[] {
  const b = "instances";
  const common = (row: string, tasks: number, outcome: Outcome, calls: CallCounts) => [
    all(b, `tasks completed (${row})`, outcome.completed, tasks),
    zero(b, `questions answered other than once (${row})`, outcome.notOnce),
    zero(b, `messages with other than one card (${row})`, outcome.cardsNotOne),
    zero(b, `PATCHes over 5/s per message (${row})`, calls.overPerMessage),
  ];
  return [
    ...answers.flatMap((r) => [
      all(b, `answers accepted (${r.setup})`, r.accepted, r.cards),
      all(b, `someone else's submits refused (${r.setup})`, r.strangersRefused, r.strangers),
      ...common(r.setup, r.cards, r.outcome, r.calls),
      within(b, `callback answer p99 at ${r.cards} cards (${r.setup})`, r.p99, 1500),
    ]),
    ...takeovers.flatMap((t) => {
      const row = `lease ${t.leaseMs / 1000} s`;
      return [
        all(b, `runs adopted after kill -9 (${row})`, t.adopted, t.tasks),
        all(b, `forms back on their cards after kill -9 (${row})`, t.formsBack, t.tasks),
        all(b, `answers accepted after the takeover (${row})`, t.accepted, t.tasks),
        ...common(row, t.tasks, t.outcome, t.calls),
        within(b, `every run adopted, 1.2 × lease (${row})`, t.adoptedMax, 1.2 * t.leaseMs),
      ];
    }),
  ];
}

const STRANGER = "ou_stranger0000000000000000000000000";
const SERIAL = 20;

interface Setup {
  setup: string;
  tag: string;
  count: number;
  store: () => Promise<StoreKind>;
}

async function measureAnswers(setup: Setup, cards: number, cardPatchIntervalMs: number): Promise<AnswerRow> {
  const fleet = await startFleet({ count: setup.count, store: await setup.store(), cardPatchIntervalMs });
  const worker = startTsWorker<PreparedRequest[], TimedResponse[]>(
    new URL("./http-burst-worker.ts", import.meta.url),
  );
  const { emulator, bots } = fleet;
  const random = seededRandom(27);
  const pick = () => bots[Math.floor(random() * bots.length)] ?? bots[0]!;
  const post = (payload: unknown) => signedPost(emulator, hookOf(pick()), payload);
  try {
    const tasks = await openTasks(fleet, cards, setup.tag, pick);
    // As many keep-alive connections as the burst will use, to random instances (their url check).
    await worker.call(Array.from({ length: cards }, () => post(emulator.urlVerification("warm"))));
    const serial: TimedResponse[] = [];
    for (let i = 0; i < SERIAL; i += 1) {
      const task = tasks[i % tasks.length];
      if (task) serial.push(...(await worker.call([post(submitOf(emulator, task, STRANGER))])));
    }
    const startedAt = clock();
    const answers = await worker.call(tasks.map((task) => post(submitOf(emulator, task))));
    const outcome = await settled(fleet, tasks, cards * 300 + 120_000);
    const done = outcome.completed === cards && outcome.green === cards;
    const endedMs = done ? clock() - startedAt : Number.POSITIVE_INFINITY;
    const toastOf = (r: TimedResponse) => (r.status === 200 ? toastContent(r.body) : undefined);
    return {
      setup: setup.setup,
      cards,
      p50: percentile(
        answers.map((a) => a.ms),
        50,
      ),
      p99: percentile(
        answers.map((a) => a.ms),
        99,
      ),
      max: maxOf(answers.map((a) => a.ms)),
      serialP50: percentile(
        serial.map((a) => a.ms),
        50,
      ),
      accepted: answers.filter((a) => toastOf(a) === strings.feishu.submitted).length,
      strangers: serial.length,
      strangersRefused: serial.filter((a) => toastOf(a) === strings.feishu.onlyAnswererUnnamed).length,
      outcome,
      endedMs,
      calls: countCalls(emulator.calls),
    };
  } catch (error) {
    const tails = bots.map((bot) => `--- pid ${bot.child.pid}\n${bot.output().slice(-2000)}`);
    throw new Error(`instances (${setup.setup}): ${String(error)}\n${tails.join("\n")}`, { cause: error });
  } finally {
    await worker.close();
    await fleet.close();
  }
}

const ofAll = (n: number, of: number) => `${fmtInt(n)}/${fmtInt(of)}`;

export async function runInstances(
  options: BenchOptions,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Check[]> {
  const cards = options.quick ? 50 : 200;
  const waiting = options.quick ? 10 : 20;
  const own = env.BENCH_DATABASE_URL ? undefined : await startEmbeddedPostgres({ fsync: true });
  const serverUrl = env.BENCH_DATABASE_URL ?? own?.url ?? "";
  const database = (name: string) => async (): Promise<StoreKind> => ({
    kind: "postgres",
    url: await freshDatabase(serverUrl, `bench_${name}_${Date.now().toString(36)}`),
  });
  const setups: Setup[] = [
    { setup: "1 process, SQLite", tag: "s1", count: 1, store: async () => ({ kind: "sqlite" }) },
    { setup: "1 process, Postgres", tag: "p1", count: 1, store: database("one") },
    { setup: "3 processes, Postgres", tag: "p3", count: 3, store: database("three") },
  ];
  try {
    const answers: AnswerRow[] = [];
    for (const setup of setups) answers.push(await measureAnswers(setup, cards, options.cardPatchIntervalMs));
    const takeovers: TakeoverRow[] = [];
    for (const leaseMs of [10_000, 2_000])
      takeovers.push(
        await measureTakeover({
          serverUrl,
          leaseMs,
          tasks: waiting,
          cardPatchIntervalMs: options.cardPatchIntervalMs,
        }),
      );
    print(answers, takeovers, options, waiting, own ? "embedded Postgres, fsync on" : "BENCH_DATABASE_URL");
    return instancesChecks(answers, takeovers);
  } finally {
    await own?.destroy();
  }
}

function print(
  answers: readonly AnswerRow[],
  takeovers: readonly TakeoverRow[],
  options: BenchOptions,
  waiting: number,
  where: string,
) {
  const cards = answers[0]?.cards ?? 0;
  printTable(
    `13.1 Callback answers at ${cards} open cards: the submits at once, each to a random instance (real processes, webhook, ${where}, CARD_PATCH_INTERVAL_MS=${options.cardPatchIntervalMs})`,
    [
      "setup",
      "cards",
      "p50",
      "p99",
      "max",
      "one at a time p50",
      "accepted",
      "completed",
      "answered once",
      "one card each",
      "all done after",
    ],
    answers.map((r) => [
      r.setup,
      fmtInt(r.cards),
      fmtMs(r.p50),
      fmtMs(r.p99),
      fmtMs(r.max),
      fmtMs(r.serialP50),
      ofAll(r.accepted, r.cards),
      ofAll(r.outcome.completed, r.cards),
      ofAll(r.cards - r.outcome.notOnce, r.cards),
      ofAll(r.cards - r.outcome.cardsNotOne, r.cards),
      fmtMs(r.endedMs),
    ]),
  );
  printTable(
    `13.2 Takeover after kill -9: 3 processes on Postgres, ${waiting} tasks waiting on the killed one (from the signal)`,
    [
      "INSTANCE_LEASE_MS",
      "tasks",
      "adopted p50",
      "adopted max",
      "bound (1.2 × lease)",
      "form back p50",
      "form back max",
      "replacement listens",
      "its first call",
      "answered after",
      "completed",
      "answered once",
    ],
    takeovers.map((t) => [
      fmtInt(t.leaseMs),
      fmtInt(t.tasks),
      fmtMs(t.adoptedP50),
      fmtMs(t.adoptedMax),
      fmtMs(1.2 * t.leaseMs),
      fmtMs(t.formP50),
      fmtMs(t.formMax),
      fmtMs(t.replacementListenMs),
      fmtMs(t.replacementFirstCallMs),
      ofAll(t.accepted, t.tasks),
      ofAll(t.outcome.completed, t.tasks),
      ofAll(t.tasks - t.outcome.notOnce, t.tasks),
    ]),
  );
  const calls = [
    ...answers.map((r) => [r.setup, r.calls] as const),
    ...takeovers.map((t) => [`takeover, lease ${t.leaseMs / 1000} s`, t.calls] as const),
  ];
  printTable(
    "13.3 Open API calls at the emulator, across the instances of each row (limits: 5 PATCH/s per message; 50/s and 1,000/min per app)",
    [
      "row",
      "PATCHes",
      "busiest second, one message",
      "over 5/s per message",
      "app calls",
      "busiest second",
      "busiest minute",
      "over 50/s or 1,000/min",
      "refused for rate",
    ],
    calls.map(([row, c]) => [
      row,
      fmtInt(c.patches),
      fmtInt(c.busiestMessageSecond),
      fmtInt(c.overPerMessage),
      fmtInt(c.appCalls),
      fmtInt(c.busiestSecond),
      fmtInt(c.busiestMinute),
      fmtInt(c.overApp),
      fmtInt(c.refused),
    ]),
  );
}
