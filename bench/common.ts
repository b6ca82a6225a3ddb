import { execFileSync } from "node:child_process";
import os from "node:os";
import { loadConfig } from "../src/config.ts";
import { createLarkMessenger } from "../src/feishu/lark-messenger.ts";
import type { FeishuMessenger } from "../src/feishu/messenger.ts";
import { type Emulator, type EmulatorOptions, startEmulator } from "../src/local/emulator/index.ts";
import { createLogger, type Logger } from "../src/logger.ts";

/** Shared by every benchmark: options, statistics, tables, the emulator with a real SDK messenger. */

export interface BenchOptions {
  /** `--quick`: a smoke run (short streams, fewer cards and connections). */
  quick: boolean;
  /** Length of each update stream in the one-card benchmark (BENCH_SECONDS, default 30; 5 with --quick). */
  seconds: number;
  /** CARD_PATCH_INTERVAL_MS as the bot would read it (default 1000). */
  cardPatchIntervalMs: number;
}

export function benchOptions(argv: readonly string[], env: NodeJS.ProcessEnv): BenchOptions {
  const quick = argv.includes("--quick");
  const seconds = Number(env.BENCH_SECONDS ?? (quick ? 5 : 30));
  if (!(seconds > 0)) throw new Error(`BENCH_SECONDS must be a positive number, got ${env.BENCH_SECONDS}`);
  const { cardPatchIntervalMs } = loadConfig({ CARD_PATCH_INTERVAL_MS: env.CARD_PATCH_INTERVAL_MS });
  return { quick, seconds, cardPatchIntervalMs };
}

export const silentLogger: Logger = createLogger({ level: "silent" });

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Milliseconds on a monotonic clock; every benchmark timestamp uses it. */
export const clock = () => performance.now();

/** Nearest-rank percentile of unsorted values (NaN when empty). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] ?? Number.NaN;
}

export function maxOf(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : values.reduce((a, b) => Math.max(a, b), -Infinity);
}

export function fmtMs(value: number): string {
  if (!Number.isFinite(value)) return value === Number.POSITIVE_INFINITY ? "never" : "–";
  if (value >= 10_000) return `${(value / 1000).toFixed(1)} s`;
  if (value >= 100) return `${Math.round(value)} ms`;
  return `${value.toFixed(1)} ms`;
}

export function fmtInt(value: number): string {
  return Number.isFinite(value) ? Math.round(value).toLocaleString("en-US") : "–";
}

export function fmtBytes(value: number): string {
  if (Math.abs(value) >= 1024 * 1024) return `${(value / 1024 / 1024).toFixed(1)} MiB`;
  if (Math.abs(value) >= 1024) return `${(value / 1024).toFixed(1)} KiB`;
  return `${Math.round(value)} B`;
}

/** A compact table on stdout, in Markdown so it can go into BENCHMARKS.md as printed; the first `textColumns` are left-aligned. */
export function printTable(
  title: string,
  headers: readonly string[],
  rows: readonly (readonly string[])[],
  textColumns = 1,
) {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const left = (i: number) => i < textColumns;
  const line = (cells: readonly string[]) =>
    `| ${cells.map((c, i) => (left(i) ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join(" | ")} |`;
  console.log(`\n${title}\n`);
  console.log(line(headers));
  console.log(`|${widths.map((w, i) => `${"-".repeat(w + 1)}${left(i) ? "-" : ":"}`).join("|")}|`);
  for (const row of rows) console.log(line(row));
}

/** Deterministic pseudo-random numbers (mulberry32), so every run sees the same bursts. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Heap in use after a full collection (needs node --expose-gc; otherwise an uncollected figure). */
export function heapUsed(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc) {
    gc();
    gc();
  }
  return process.memoryUsage().heapUsed;
}

export function hasGc(): boolean {
  return typeof (globalThis as { gc?: unknown }).gc === "function";
}

export interface BenchFeishu {
  emulator: Emulator;
  messenger: FeishuMessenger;
  close(): Promise<void>;
}

/** An emulator and the real SDK messenger over HTTP to it: what the bot runs against in local mode. */
export async function startBenchFeishu(options: EmulatorOptions = {}): Promise<BenchFeishu> {
  const emulator = await startEmulator(options);
  const messenger = createLarkMessenger({
    appId: emulator.appId,
    appSecret: emulator.appSecret,
    domain: emulator.url,
    logger: silentLogger,
    timeoutMs: 10_000,
  });
  return { emulator, messenger, close: () => emulator.close() };
}

/**
 * Sends `count` cards to a chat as the bot would, `perSecond` at a time, moving the emulator's clock past its
 * app window between batches instead of waiting: setting up is not what is measured.
 */
export async function sendCards(
  feishu: BenchFeishu,
  count: number,
  card: (index: number) => Parameters<FeishuMessenger["sendCard"]>[1],
  perSecond = 50,
): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < count; start += perSecond) {
    const batch = Array.from({ length: Math.min(perSecond, count - start) }, (_, i) => start + i);
    const sent = await Promise.all(
      batch.map((i) => feishu.messenger.sendCard({ chatId: `oc_bench_${i % 100}` }, card(i))),
    );
    ids.push(...sent.map((s) => s.messageId));
    feishu.emulator.clock.advance(1001);
  }
  return ids;
}

export function machine(): { date: string; cpus: number; cpuModel: string; node: string; memory: string } {
  return {
    date: new Date().toISOString(),
    cpus: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model ?? "unknown",
    node: process.version,
    memory: fmtBytes(os.totalmem()),
  };
}

/**
 * What a figure needs beside it to be read (issue 32): the commit it measured (marked when the work tree had
 * changes), when, quick or full, and how busy the machine already was. Every run prints it first.
 */
export interface RunInfo {
  commit: string;
  date: string;
  mode: "--quick" | "full";
  /** 1, 5 and 15 minute load averages when the run started. */
  loadAverage: [number, number, number];
}

export function runInfo(options: Pick<BenchOptions, "quick">): RunInfo {
  const [one = 0, five = 0, fifteen = 0] = os.loadavg();
  return {
    commit: commitOf(),
    date: new Date().toISOString(),
    mode: options.quick ? "--quick" : "full",
    loadAverage: [one, five, fifteen],
  };
}

export function formatRunInfo(info: RunInfo): string {
  const load = info.loadAverage.map((n) => n.toFixed(2)).join(" / ");
  return `run: commit ${info.commit}, ${info.date}, ${info.mode}, load average at start ${load} (1 / 5 / 15 min)`;
}

function commitOf(): string {
  const git = (...args: string[]) =>
    execFileSync("git", args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  try {
    const head = git("rev-parse", "--short", "HEAD");
    // Untracked files (a node_modules link) do not change what was measured; edits to tracked ones do.
    return git("status", "--porcelain", "--untracked-files=no") === ""
      ? head
      : `${head} + uncommitted changes`;
  } catch {
    return "unknown (not a git checkout)";
  }
}
