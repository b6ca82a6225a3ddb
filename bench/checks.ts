/**
 * The benchmarks' own verdict: each correctness figure a table prints (rate-limited calls, burst ends that
 * never landed, unexpected answers, forms lost or sent twice…) against its target. A benchmark that prints
 * an error count nobody reads is a check that cannot fail (issue 32): `npm run bench` exits non-zero when
 * any of these misses, and says which and why.
 *
 * Timing targets (a p99 under 50 ms, every terminal state within 25 s) are printed as met or missed but never
 * fail the run: on a shared machine they measure the neighbours too. Counts do not depend on the load.
 * Pure: no I/O, so test/bench-checks.test.ts can feed it rows that regressed.
 */

export interface Check {
  benchmark: string;
  /** What is counted, and in which row: `rate-limited (publisher, 20/s)`. */
  what: string;
  actual: string;
  target: string;
  ok: boolean;
  /** A timing target: reported, not a failure of the run. */
  timing?: true;
}

/** A count whose target is zero. */
export function zero(benchmark: string, what: string, actual: number): Check {
  return { benchmark, what, actual: String(actual), target: "0", ok: actual === 0 };
}

/** `got` of `of` must all be there (landed, answered, shown). */
export function all(benchmark: string, what: string, got: number, of: number): Check {
  return { benchmark, what, actual: `${got}/${of}`, target: `${of}/${of}`, ok: of > 0 && got === of };
}

export function exactly(benchmark: string, what: string, actual: number, target: number): Check {
  return { benchmark, what, actual: String(actual), target: String(target), ok: actual === target };
}

export function atLeast(benchmark: string, what: string, actual: number, min: number, unit = ""): Check {
  const show = (n: number) => `${Number.isInteger(n) ? n : n.toFixed(1)}${unit}`;
  return { benchmark, what, actual: show(actual), target: `≥ ${show(min)}`, ok: actual >= min };
}

/** A count (or ratio) under a bound that does not depend on the machine. */
export function atMost(benchmark: string, what: string, actual: number, max: number, unit = ""): Check {
  const show = (n: number) => `${Number.isInteger(n) ? n : n.toFixed(2)}${unit}`;
  return { benchmark, what, actual: show(actual), target: `≤ ${show(max)}`, ok: actual <= max };
}

/** A time under a bound: reported, never failing the run. */
export function within(benchmark: string, what: string, ms: number, maxMs: number): Check {
  const show = (n: number) => (Number.isFinite(n) ? `${Math.round(n)} ms` : "never");
  return { benchmark, what, actual: show(ms), target: `≤ ${maxMs} ms`, ok: ms <= maxMs, timing: true };
}

export interface Verdict {
  /** 0 when every correctness check holds, 1 otherwise. */
  exitCode: 0 | 1;
  /** One line per check that missed, correctness first: what, the figure, the target. */
  lines: string[];
}

export function verdict(checks: readonly Check[]): Verdict {
  const failed = checks.filter((c) => !c.ok && !c.timing);
  const slow = checks.filter((c) => !c.ok && c.timing);
  const line = (c: Check) => `${c.benchmark}: ${c.what} is ${c.actual}, target ${c.target}`;
  const lines = [
    ...failed.map((c) => `FAILED ${line(c)}`),
    ...slow.map((c) => `missed (timing, not a failure) ${line(c)}`),
  ];
  const correctness = checks.filter((c) => !c.timing).length;
  const timing = slow.length > 0 ? `; ${slow.length} timing target(s) missed` : "";
  lines.push(
    failed.length === 0
      ? `checks: all ${correctness} correctness checks met${timing}`
      : `checks: ${failed.length} of ${correctness} correctness checks FAILED${timing}`,
  );
  return { exitCode: failed.length === 0 ? 0 : 1, lines };
}
