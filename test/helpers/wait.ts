import { vi } from "vitest";

/**
 * The one polling wait of the test suite, on vitest's own loop (`vi.waitFor`) instead of a hand-written
 * one per file. For state that has no event to await (a child process's output, another server's
 * bookkeeping); where an event exists, await the event instead.
 *
 * Under fake timers vi.waitFor advances the fake clock by `intervalMs` on every check (so a wait for a
 * timer-driven change cannot hang); callers that step the clock themselves keep their steps large.
 */

/** What a probe returns when the thing is not there yet. */
type NotYet = undefined | false | null;

/**
 * Resolves with `probe()`'s first value that is not undefined, false or null; a probe may be async. Fails
 * naming `what` after `timeoutMs`. A probe that throws fails the wait at once (a broken probe is not
 * "not yet"), so the error says what went wrong instead of a timeout.
 */
export async function until<R>(
  probe: () => R,
  what: string,
  timeoutMs = 10_000,
  intervalMs = 10,
): Promise<Exclude<Awaited<R>, NotYet>> {
  type T = Exclude<Awaited<R>, NotYet>;
  const pending = new NotYetError(what, timeoutMs);
  if (!insideVitest()) return (await pollOutsideVitest(probe, pending, timeoutMs, intervalMs)) as T;
  const outcome = await vi.waitFor(
    async (): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> => {
      let result: T | NotYet;
      try {
        result = (await probe()) as T | NotYet;
      } catch (error) {
        return { ok: false, error };
      }
      if (result === undefined || result === false || result === null) throw pending;
      return { ok: true, value: result };
    },
    { timeout: timeoutMs, interval: intervalMs },
  );
  if (!outcome.ok) throw outcome.error;
  return outcome.value as T;
}

/** Waits until `check` stops throwing (an `expect(...)` usually), then resolves; its last error on timeout. */
export async function eventually(
  check: () => void | Promise<void>,
  timeoutMs = 10_000,
  intervalMs = 5,
): Promise<void> {
  await vi.waitFor(check, { timeout: timeoutMs, interval: intervalMs });
}

/**
 * The benchmarks (`npm run bench`, plain Node) share the test rigs, and vi.waitFor needs a vitest worker. Vitest
 * sets VITEST in its workers; outside them the same wait runs on a plain loop of real timers.
 */
function insideVitest(): boolean {
  return process.env.VITEST !== undefined;
}

async function pollOutsideVitest<T>(
  probe: () => T | NotYet | Promise<T | NotYet>,
  pending: NotYetError,
  timeoutMs: number,
  intervalMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await probe();
    if (result !== undefined && result !== false && result !== null) return result;
    if (Date.now() > deadline) throw pending;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

class NotYetError extends Error {
  constructor(what: string, timeoutMs: number) {
    super(`timed out after ${timeoutMs} ms waiting for ${what}`);
    this.name = "NotYetError";
  }
}
