import fs from "node:fs";
import os from "node:os";

/**
 * The reliability suite runs in two sizes: the default (CI, every `npm test`) and the long variant
 * (`RELIABILITY_LONG=1`), whose last figures are recorded in RELIABILITY.md.
 */
export const LONG = process.env.RELIABILITY_LONG === "1";

/** `ci` in the default run, `long` with RELIABILITY_LONG=1. */
export function size<T>(ci: T, long: T): T {
  return LONG ? long : ci;
}

/** Generated cases per property: 10,000 in the long variant (the floor), a few hundred in CI. */
export const PROPERTY_RUNS = size(300, 10_000);

/** A per-test timeout that grows with the variant. */
export function timeoutMs(ciMs: number, longMs: number): number {
  return size(ciMs, longMs);
}

/**
 * Figures a test measured (counts, durations, memory). With RELIABILITY_REPORT=<file> they are appended to
 * that file as JSON lines, so the long run's numbers can be copied into RELIABILITY.md; otherwise dropped.
 */
export function record(name: string, figures: Record<string, unknown>): void {
  const file = process.env.RELIABILITY_REPORT;
  if (!file) return;
  const line = {
    name,
    variant: LONG ? "long" : "ci",
    at: new Date().toISOString(),
    machine: `${os.cpus().length} cores ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB node ${process.version}`,
    ...figures,
  };
  fs.appendFileSync(file, `${JSON.stringify(line)}\n`);
}

/** A bounded wait that names what it waited for: the suite's one polling loop (../../helpers/wait.ts). */
export { until } from "../../helpers/wait.ts";

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Percentile of a list of numbers (nearest rank); 0 for an empty list. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}
