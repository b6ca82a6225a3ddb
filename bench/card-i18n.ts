import { DEMO_QUESTIONS } from "../src/asks/demo-questions.ts";
import { buildProgressCard, type CardAsk } from "../src/cards/progress.ts";
import type { ProgressView } from "../src/cards/progress-view.ts";
import { cardSize } from "../src/cards/rules.ts";
import { zh } from "../src/strings/index.ts";
import { all, type Check } from "./checks.ts";
import { type BenchOptions, clock, fmtBytes, fmtMs, percentile, printTable } from "./common.ts";

/**
 * `npm run bench -- card-i18n`: what bilingual cards (issue 19) cost per render against the one-language card
 * of the same state, in the same run: the builder renders each locale and overlays them (cards/i18n.ts), and
 * the publisher renders on every PATCH. Figures: time per render (median, p99) and bytes sent, with ratios.
 */

const T0 = Date.UTC(2026, 11, 1, 4, 0, 0);
const steps = Array.from({ length: 12 }, (_, i) => ({
  title: `第 ${i + 1} 步：处理数据块`,
  status: "done" as const,
  summary: `处理了 ${100 + i} 条记录`,
}));
const base: ProgressView = {
  sessionId: "feishu-cli_bench-group-oc_team",
  runId: "run_bench",
  senderId: "ou_alice000000000000000000000000000",
  title: "整理本周的数据报表",
  status: "running",
  steps,
  startedAt: T0,
  detailsUrl: "https://bot.example.com/sessions/x/runs/run_bench",
  chatType: "group",
};
const ask: CardAsk = { requestId: "req_b", questions: [DEMO_QUESTIONS.deploy, DEMO_QUESTIONS.features] };

const STATES: { name: string; view: ProgressView; asks: CardAsk[] }[] = [
  { name: "running, 12 steps", view: { ...base, text: "正在汇总…".repeat(40) }, asks: [] },
  { name: "waiting, one form", view: base, asks: [ask] },
  { name: "waiting, 4 forms", view: base, asks: [0, 1, 2, 3].map((i) => ({ ...ask, requestId: `r${i}` })) },
  {
    name: "completed, 6 KB answer",
    view: { ...base, status: "completed", endedAt: T0 + 90_000, text: "结果。".repeat(2000) },
    asks: [],
  },
];

function timeRenders(render: () => unknown, count: number): number[] {
  const times: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const started = clock();
    render();
    times.push(clock() - started);
  }
  return times;
}

/** Every measured state fits the card budget in both languages (else the figures compare zh with zh). */
export function cardI18nChecks(languages: readonly string[]): Check[] {
  return [
    all(
      "card-i18n",
      "states rendered in zh+en",
      languages.filter((l) => l === "zh+en").length,
      languages.length,
    ),
  ];
}

export async function runCardI18n(options: BenchOptions): Promise<Check[]> {
  const count = options.quick ? 50 : 400;
  const rows = STATES.map(({ name, view, asks }) => {
    const one = () => buildProgressCard(view, asks, { strings: zh });
    const both = () => buildProgressCard(view, asks);
    // Warm up both paths (zod compiles schemas on first use) before measuring.
    timeRenders(one, 10);
    timeRenders(both, 10);
    const oneTimes = timeRenders(one, count);
    const bothTimes = timeRenders(both, count);
    const oneMedian = percentile(oneTimes, 50);
    const bothMedian = percentile(bothTimes, 50);
    const card = both();
    const bytesOne = cardSize(one());
    const bytesBoth = cardSize(card);
    return [
      name,
      fmtMs(oneMedian),
      fmtMs(bothMedian),
      `${(bothMedian / oneMedian).toFixed(2)}×`,
      fmtMs(percentile(bothTimes, 99)),
      fmtBytes(bytesOne),
      fmtBytes(bytesBoth),
      `${(bytesBoth / bytesOne).toFixed(2)}×`,
      card.config.locales ? "zh+en" : "zh only (over budget)",
    ];
  });
  printTable(
    `Bilingual cards: one render, one language vs both (${count} renders each)`,
    [
      "card state",
      "zh only p50",
      "zh+en p50",
      "time ratio",
      "zh+en p99",
      "zh only bytes",
      "zh+en bytes",
      "size ratio",
      "languages",
    ],
    rows,
  );
  return cardI18nChecks(rows.map((row) => row[row.length - 1] ?? ""));
}
