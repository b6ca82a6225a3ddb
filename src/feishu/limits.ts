import pThrottle from "p-throttle";

/** The budget a job was given. A job that decides at its turn not to call the platform says so. */
export interface Slot {
  /** No Open API call was made: the slot does not count against the rate limit. */
  unused(): void;
}

/**
 * Runs `fn` when a rate limit allows it; `urgent` work (terminal states, form changes) goes first. Urgency may
 * be a function: asked again while the job waits, so work that becomes urgent in the queue overtakes then.
 */
export type Limiter = <T>(
  fn: (slot: Slot) => Promise<T>,
  options?: { urgent?: boolean | (() => boolean) },
) => Promise<T>;

/** For a limiter that has no budget to give back (tests, a per-message gate). */
export const IGNORED_SLOT: Slot = { unused: () => undefined };

interface Job {
  run: () => void;
  /** Set for plain work whose urgency may change while it waits. */
  urgentNow?: () => boolean;
}

/**
 * The app-wide Open API budget (feishu-platform §3.2: 50/s and 1000/min per app), shared by every card and
 * message. Strict sliding windows, and two queues: when the budget is short, a card reaching its terminal
 * state or gaining/losing a form overtakes plain progress ticks of other cards (DESIGN §5). Within a queue,
 * first come first served, so no card starves.
 */
export function createAppLimiter(
  options: {
    perSecond?: number;
    perMinute?: number;
    now?: () => number;
    /** Told how long each job waited for its turn (for `/metrics`). */
    onWait?: (waitMs: number, urgent: boolean) => void;
  } = {},
): Limiter & { pending(): number } {
  const perSecond = options.perSecond ?? 50;
  const perMinute = options.perMinute ?? 1000;
  const now = options.now ?? Date.now;
  // A call holds its slot from when it starts until 1 s (or 1 min) after it settles: Feishu counts a call when
  // it arrives, which may be well after it started, so counting starts alone let a window overfill (429s).
  let inFlight = 0;
  const settled: number[] = [];
  const urgent: Job[] = [];
  const normal: Job[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** Plain jobs queued with an urgency function: only then is the plain queue searched for promotions. */
  let changeable = 0;

  const waitMs = (t: number): number => {
    while (settled.length > 0 && (settled[0] ?? 0) <= t - 60_000) settled.shift();
    if (inFlight + settled.length >= perMinute)
      return settled.length > 0 ? (settled[0] ?? t) + 60_000 - t : 50;
    const inLastSecond = inFlight + settled.length - firstAfter(settled, t - 1000);
    if (inLastSecond < perSecond) return 0;
    // The oldest settled call still counted in this second frees a slot when it leaves the window.
    const index = firstAfter(settled, t - 1000);
    return index < settled.length ? (settled[index] ?? t) + 1000 - t : 50;
  };

  const pump = (): void => {
    timer = undefined;
    while (urgent.length > 0 || normal.length > 0) {
      const wait = waitMs(now());
      if (wait > 0) {
        timer = setTimeout(pump, wait);
        return;
      }
      inFlight += 1;
      (urgent.shift() ?? promoted() ?? normal.shift())?.run();
    }
  };

  /** The first plain job that has become urgent while it waited, taken out of the plain queue. */
  const promoted = (): Job | undefined => {
    if (changeable === 0) return undefined;
    const index = normal.findIndex((job) => job.urgentNow?.() === true);
    if (index < 0) return undefined;
    return normal.splice(index, 1)[0];
  };

  const release = (used: boolean): void => {
    inFlight -= 1;
    // A job that made no call (its card already showed that state, its question was answered) costs nothing:
    // its slot is free at once, for whoever waits.
    if (used) settled.push(now());
    else if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (timer === undefined && (urgent.length > 0 || normal.length > 0)) pump();
  };

  const limiter = (<T>(
    fn: (slot: Slot) => Promise<T>,
    opts?: { urgent?: boolean | (() => boolean) },
  ): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const urgency = opts?.urgent;
      const isUrgent = typeof urgency === "function" ? urgency() : urgency === true;
      const urgentNow = typeof urgency === "function" && !isUrgent ? urgency : undefined;
      if (urgentNow) changeable += 1;
      const queuedAt = now();
      (isUrgent ? urgent : normal).push({
        ...(urgentNow ? { urgentNow } : {}),
        run: () => {
          if (urgentNow) changeable -= 1;
          options.onWait?.(now() - queuedAt, isUrgent || urgentNow?.() === true);
          let used = true;
          const slot: Slot = {
            unused: () => {
              used = false;
            },
          };
          Promise.resolve()
            .then(() => fn(slot))
            .then(
              (value) => {
                release(used);
                resolve(value);
              },
              (error: unknown) => {
                release(used);
                reject(error);
              },
            );
        },
      });
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
    return fn(IGNORED_SLOT);
  };
}
