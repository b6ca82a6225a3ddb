import pThrottle from "p-throttle";

/** Runs `fn` when a rate limit allows it; `urgent` work (terminal states, form changes) goes first. */
export type Limiter = <T>(fn: () => Promise<T>, options?: { urgent?: boolean }) => Promise<T>;

interface Job {
  run: () => void;
}

/**
 * The app-wide Open API budget (feishu-platform §3.2: 50/s and 1000/min per app), shared by every card and
 * message. Strict sliding windows, and two queues: when the budget is short, a card reaching its terminal
 * state or gaining/losing a form overtakes plain progress ticks of other cards (DESIGN §5). Within a queue,
 * first come first served, so no card starves.
 */
export function createAppLimiter(
  options: { perSecond?: number; perMinute?: number; now?: () => number } = {},
): Limiter & { pending(): number } {
  const perSecond = options.perSecond ?? 50;
  const perMinute = options.perMinute ?? 1000;
  const now = options.now ?? Date.now;
  const started: number[] = [];
  const urgent: Job[] = [];
  const normal: Job[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;

  const waitMs = (t: number): number => {
    while (started.length > 0 && (started[0] ?? 0) <= t - 60_000) started.shift();
    if (started.length >= perMinute) return (started[0] ?? t) + 60_000 - t;
    const inLastSecond = started.length - firstAfter(started, t - 1000);
    if (inLastSecond >= perSecond) return (started[started.length - perSecond] ?? t) + 1000 - t;
    return 0;
  };

  const pump = (): void => {
    timer = undefined;
    while (urgent.length > 0 || normal.length > 0) {
      const t = now();
      const wait = waitMs(t);
      if (wait > 0) {
        timer = setTimeout(pump, wait);
        return;
      }
      started.push(t);
      (urgent.shift() ?? normal.shift())?.run();
    }
  };

  const limiter = (<T>(fn: () => Promise<T>, opts?: { urgent?: boolean }): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      (opts?.urgent ? urgent : normal).push({ run: () => fn().then(resolve, reject) });
      if (timer === undefined) pump();
    })) as Limiter & { pending(): number };
  limiter.pending = () => urgent.length + normal.length;
  return limiter;
}

/** Index of the first timestamp greater than `t` (timestamps are ascending). */
function firstAfter(sorted: readonly number[], t: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((sorted[mid] ?? 0) > t) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** A hard cap for one message: the platform allows 5 PATCHes per second per message; never go above it. */
export function createMessageLimiter(perSecond = 5): Limiter {
  const gate = pThrottle({ limit: Math.min(perSecond, 5), interval: 1000, strict: true })(() => undefined);
  return async (fn) => {
    await gate();
    return fn();
  };
}
