import type { Card } from "../src/cards/model.ts";
import { buildProgressCard, type ProgressStepView } from "../src/cards/progress.ts";
import { createAppLimiter } from "../src/feishu/limits.ts";
import { FeishuApiError, type FeishuMessenger } from "../src/feishu/messenger.ts";
import { CardPublisher } from "../src/feishu/publisher.ts";
import { naiveStrategy, queueAllStrategy, type UpdateStrategy } from "./baselines.ts";
import { all, atLeast, type Check, within, zero } from "./checks.ts";
import {
  type BenchFeishu,
  type BenchOptions,
  clock,
  fmtInt,
  fmtMs,
  maxOf,
  percentile,
  printTable,
  seededRandom,
  silentLogger,
  startBenchFeishu,
} from "./common.ts";
import { type Plan, planBursts, type StreamResult, staleness } from "./streams.ts";

/**
 * Benchmark 1: one card under bursts of 5, 20 and 100 changes per second. For each rate, our publisher and
 * the two baselines follow the same seeded burst plans at the same instants, each card in its own emulator
 * (the emulator's app limit is per instance), all over the real SDK messenger.
 */

const STRATEGIES = ["publisher", "naive", "queue-all"] as const;
type StrategyName = (typeof STRATEGIES)[number];
const RATES = [5, 20, 100] as const;
/** How long the queue-all baseline may keep draining after the stream ends before it is cut off. */
const DRAIN_GRACE_MS = 5000;

export interface OneCardRow {
  rate: number;
  strategy: StrategyName;
  changes: number;
  patches: number;
  rateLimited: number;
  finals: number;
  finalsLanded: number;
  finalP50: number;
  finalP99: number;
  /** Worst staleness of any change; `worstIsLowerBound` when some change never landed. */
  worst: number;
  worstIsLowerBound: boolean;
  backlog: number;
}

interface LaneStats {
  /** Card states in the order the emulator applied them. */
  applied: number[];
  /** When each state's successful PATCH was acknowledged (clock ms). */
  ackedAt: Map<number, number>;
  patches: number;
  rateLimited: number;
}

interface Lane {
  strategy: StrategyName;
  feishu: BenchFeishu;
  update: UpdateStrategy;
  stats: LaneStats;
}

type LaneResult = StreamResult & { strategy: StrategyName; stats: LaneStats };

/**
 * The publisher's rows against the targets: no call refused, every burst's end shown, nothing left queued,
 * at least 10× fewer PATCHes than naive from 20 changes/s on; p99 of the burst ends within the interval +
 * 200 ms (timing). The baselines' rows are what the publisher exists to avoid and are not checked.
 */
export function oneCardChecks(rows: readonly OneCardRow[], intervalMs: number): Check[] {
  const b = "one-card";
  return rows
    .filter((r) => r.strategy === "publisher")
    .flatMap((r) => {
      const row = `publisher, ${r.rate} changes/s`;
      const naive = rows.find((x) => x.rate === r.rate && x.strategy === "naive");
      return [
        zero(b, `rate-limited (${row})`, r.rateLimited),
        all(b, `finals landed (${row})`, r.finalsLanded, r.finals),
        zero(b, `backlog (${row})`, r.backlog),
        ...(naive && r.rate >= 20
          ? [atLeast(b, `naive÷this (${row})`, naive.patches / Math.max(1, r.patches), 10, "×")]
          : []),
        within(b, `final p99 (${row})`, r.finalP99, intervalMs + 200),
      ];
    });
}

export async function runOneCard(options: BenchOptions): Promise<Check[]> {
  const cardsPerStrategy = options.quick ? 1 : 3;
  const rows: OneCardRow[] = [];
  for (const rate of RATES) {
    const plans = Array.from({ length: cardsPerStrategy }, (_, k) =>
      planBursts({ rate, seconds: options.seconds, random: seededRandom(1000 * rate + k) }),
    );
    const results = await Promise.all(plans.map((plan) => runPlan(plan, options)));
    for (const strategy of STRATEGIES) {
      const mine = results.flatMap((r) => r.filter((x) => x.strategy === strategy));
      rows.push(summarize(rate, strategy, mine));
    }
  }
  printOneCard(rows, options);
  return oneCardChecks(rows, options.cardPatchIntervalMs);
}

/** One plan, followed at the same instants by one card per strategy. */
async function runPlan(plan: Plan, options: BenchOptions): Promise<LaneResult[]> {
  let state = 0;
  const render = () => burstCard(state);
  const lanes = await Promise.all(STRATEGIES.map((s) => startLane(s, render, options)));
  const changedAt: number[] = [];
  const startedAt = clock();
  for (const offset of plan.offsets) {
    const wait = startedAt + offset - clock();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    state += 1;
    changedAt.push(clock());
    for (const lane of lanes) lane.update.changed(render);
  }
  const deadline = clock() + DRAIN_GRACE_MS;
  const settled = await Promise.all(lanes.map((lane) => lane.update.settle(deadline, clock)));
  const observedUntil = clock();
  await Promise.all(lanes.map((lane) => lane.feishu.close()));
  return lanes.map((lane, i) => ({
    strategy: lane.strategy,
    stats: lane.stats,
    ...staleness({
      changedAt,
      finals: plan.finals,
      applied: lane.stats.applied,
      ackedAt: lane.stats.ackedAt,
      observedUntil,
      backlog: settled[i]?.backlog ?? 0,
    }),
  }));
}

async function startLane(strategy: StrategyName, render: () => Card, options: BenchOptions): Promise<Lane> {
  const feishu = await startBenchFeishu();
  const { messageId } = await feishu.messenger.sendCard({ chatId: "oc_bench" }, render());
  const stats: LaneStats = { applied: [], ackedAt: new Map(), patches: 0, rateLimited: 0 };
  feishu.emulator.on("message_patched", ({ message }) => {
    if (message.messageId === messageId) stats.applied.push(stateOf(message.content));
  });
  const patchCard: FeishuMessenger["patchCard"] = async (id, card) => {
    stats.patches += 1;
    try {
      await feishu.messenger.patchCard(id, card);
      stats.ackedAt.set(stateOf(card.header?.title.content ?? ""), clock());
    } catch (error) {
      if (error instanceof FeishuApiError && error.rateLimited) stats.rateLimited += 1;
      throw error;
    }
  };
  return { strategy, feishu, stats, update: strategyFor(strategy, messageId, patchCard, render, options) };
}

function strategyFor(
  strategy: StrategyName,
  messageId: string,
  patchCard: FeishuMessenger["patchCard"],
  render: () => Card,
  options: BenchOptions,
): UpdateStrategy {
  if (strategy === "naive") return naiveStrategy(messageId, patchCard);
  if (strategy === "queue-all") return queueAllStrategy(messageId, patchCard);
  const publisher = new CardPublisher({
    messageId,
    messenger: { patchCard },
    // Plain progress only: no status change, no form.
    shape: () => ({ key: "running|", formOpen: false }),
    render,
    intervalMs: options.cardPatchIntervalMs,
    appLimiter: createAppLimiter(),
    now: Date.now,
    logger: silentLogger,
  });
  return {
    changed: () => publisher.request(),
    settle: async () => {
      await publisher.idle();
      return { backlog: 0 };
    },
  };
}

const STARTED_AT = Date.now();

/** A realistic progress card: the title carries the state number, the last 8 steps are listed. */
function burstCard(state: number): Card {
  const steps: ProgressStepView[] = [];
  for (let k = Math.max(1, state - 7); k <= state; k += 1) {
    steps.push(
      k === state
        ? { title: `process chunk ${k}`, status: "running" }
        : { title: `process chunk ${k}`, status: "done", summary: `chunk ${k} ok` },
    );
  }
  return buildProgressCard(
    {
      sessionId: "feishu-bench-private-ou_bench",
      runId: "run-bench",
      senderId: "ou_bench",
      title: `Burst #${state}`,
      status: "running",
      steps,
      startedAt: STARTED_AT,
      detailsUrl: "http://localhost:3000/sessions/bench",
    },
    [],
  );
}

function stateOf(content: string): number {
  return Number(/Burst #(\d+)/.exec(content)?.[1] ?? 0);
}

function summarize(rate: number, strategy: StrategyName, lanes: LaneResult[]): OneCardRow {
  const finals = lanes.flatMap((l) => l.finalStaleness);
  const worst = maxOf(lanes.map((l) => l.worst));
  return {
    rate,
    strategy,
    changes: lanes.reduce((n, l) => n + l.changes, 0),
    patches: lanes.reduce((n, l) => n + l.stats.patches, 0),
    rateLimited: lanes.reduce((n, l) => n + l.stats.rateLimited, 0),
    finals: finals.length,
    finalsLanded: finals.filter(Number.isFinite).length,
    finalP50: percentile(finals, 50),
    finalP99: percentile(finals, 99),
    worst,
    worstIsLowerBound: lanes.some((l) => l.worstIsLowerBound),
    backlog: lanes.reduce((n, l) => n + l.backlog, 0),
  };
}

function printOneCard(rows: OneCardRow[], options: BenchOptions): void {
  const naive = new Map(rows.filter((r) => r.strategy === "naive").map((r) => [r.rate, r.patches]));
  printTable(
    `1. One card under bursts (${options.seconds} s streams; CARD_PATCH_INTERVAL_MS=${options.cardPatchIntervalMs})`,
    [
      "changes/s",
      "strategy",
      "changes",
      "PATCHes",
      "naive÷this",
      "rate-limited",
      "finals landed",
      "final p50",
      "final p99",
      "worst",
      "backlog",
    ],
    rows.map((r) => [
      String(r.rate),
      r.strategy,
      fmtInt(r.changes),
      fmtInt(r.patches),
      `${((naive.get(r.rate) ?? 0) / Math.max(1, r.patches)).toFixed(1)}×`,
      fmtInt(r.rateLimited),
      `${r.finalsLanded}/${r.finals}`,
      fmtMs(r.finalP50),
      fmtMs(r.finalP99),
      `${r.worstIsLowerBound ? "≥ " : ""}${fmtMs(r.worst)}`,
      fmtInt(r.backlog),
    ]),
    2,
  );
  console.log(
    "  finals: the last change of each burst; final/worst: from a change until a PATCH showing it (or later) was acknowledged",
  );
}
