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
  options?: { urgent?: boolean | (() => boolean); lane?: Lane },
) => Promise<T>;

/** Calls per second and per minute the limiter may make. */
export interface AppLimits {
  perSecond: number;
  perMinute: number;
}

export interface LimitWindows {
  secondMs: number;
  minuteMs: number;
}

export const PLATFORM_WINDOWS: LimitWindows = { secondMs: 1000, minuteMs: 60_000 };

/** For a limiter that has no budget to give back (tests, a per-message gate). */
export const IGNORED_SLOT: Slot = { unused: () => undefined };

/** Who a job is for: people (a chat's own runs: the default) or the outside agents (agents-api). */
export type Lane = "people" | "agents";

interface Job {
  run: () => void;
  lane: Lane;
  /** Set for plain work whose urgency may change while it waits. */
  urgentNow?: () => boolean;
}

/** Calls counted in the windows: in flight, and settled within the last minute (ascending). */
interface Usage {
  inFlight: number;
  settled: number[];
}

/**
 * The app-wide Open API budget (feishu-platform §3.2: 50/s and 1000/min per app), shared by every card and
 * message. Strict sliding windows, and two queues: when the budget is short, a card reaching its terminal
 * state or gaining/losing a form overtakes plain progress ticks of other cards (DESIGN §5). Within a queue,
 * first come first served, so no card starves.
 *
 * Two shares on top (issue 24 item 7: one agent token, within its limits, made another user's first card wait
 * 9.2 s): the outside agents' cards together use at most `agentShare` of each window, whatever their urgency,
 * so people always have the rest; and plain ticks (anyone's) leave `urgentHeadroom` of each window to urgent
 * work, so a first reply or a form never waits for a window that progress ticks filled.
 */
export function createAppLimiter(
  options: {
    perSecond?: number;
    perMinute?: number;
    now?: () => number;
    /** Told how long each job waited for its turn (for `/metrics`). */
    onWait?: (waitMs: number, urgent: boolean) => void;
    /** The most the agents' lane may use of each window (default 0.3). */
    agentShare?: number;
    /** Of each window, what plain work leaves to urgent work (default 0.1). */
    urgentHeadroom?: number;
    /**
     * The two limits read afresh at each decision, instead of perSecond and perMinute: this instance's share
     * of the app's budget when several share it (feishu/cluster-budget.ts). Read from memory, so it must be
     * cheap; after it grows, call wake() so a job waiting on the old limit goes at once.
     */
    limits?: () => AppLimits;
    /** The two windows' lengths (default 1 s and 1 min, the platform's); tests shorten them. */
    windows?: LimitWindows;
  } = {},
): Limiter & { pending(): number; wake(): void; used(): number } {
  const fixed: AppLimits = { perSecond: options.perSecond ?? 50, perMinute: options.perMinute ?? 1000 };
  const now = options.now ?? Date.now;
  const { secondMs, minuteMs } = options.windows ?? PLATFORM_WINDOWS;
  const share = options.agentShare ?? 0.3;
  const headroom = options.urgentHeadroom ?? 0.1;
  // A share of 0 (a newcomer's first moments) allows nothing: the floor of 1 applies only above it.
  const atLeastOne = (limit: number, part: number) => (limit <= 0 ? 0 : Math.max(1, part));
  let derivedFrom: AppLimits | undefined;
  let derived = derive(fixed);
  function derive(limits: AppLimits) {
    const { perSecond, perMinute } = limits;
    return {
      urgent: { second: perSecond, minute: perMinute },
      agents: {
        second: atLeastOne(perSecond, Math.floor(perSecond * share)),
        minute: atLeastOne(perMinute, Math.floor(perMinute * share)),
      },
      plain: {
        second: atLeastOne(perSecond, perSecond - Math.floor(perSecond * headroom)),
        minute: atLeastOne(perMinute, perMinute - Math.floor(perMinute * headroom)),
      },
    };
  }
  const current = () => {
    if (!options.limits) return derived;
    const limits = options.limits();
    if (limits.perSecond !== derivedFrom?.perSecond || limits.perMinute !== derivedFrom.perMinute) {
      derivedFrom = limits;
      derived = derive(limits);
    }
    return derived;
  };
  // A call holds its slot from when it starts until 1 s (or 1 min) after it settles: Feishu counts a call when
  // it arrives, which may be well after it started, so counting starts alone let a window overfill (429s).
  const all: Usage = { inFlight: 0, settled: [] };
  const agents: Usage = { inFlight: 0, settled: [] };
  const queues = {
    people: { urgent: [] as Job[], normal: [] as Job[] },
    agents: { urgent: [] as Job[], normal: [] as Job[] },
  };
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** Plain jobs queued with an urgency function: only then is the plain queue searched for promotions. */
  let changeable = 0;
  const queued = () =>
    queues.people.urgent.length +
    queues.people.normal.length +
    queues.agents.urgent.length +
    queues.agents.normal.length;

  /** How long until `usage` is below `limit` in the window of `windowMs` at `t`; 0 when it is now. */
  const waitIn = (usage: Usage, t: number, windowMs: number, limit: number): number => {
    const from = firstAfter(usage.settled, t - windowMs);
    if (usage.inFlight + usage.settled.length - from < limit) return 0;
    // The oldest settled call still counted frees a slot when it leaves the window; calls in flight: poll.
    const needed = usage.inFlight + usage.settled.length - from - limit;
    const index = from + needed;
    return index < usage.settled.length ? (usage.settled[index] ?? t) + windowMs - t : 50;
  };

  const waitFor = (lane: Lane, urgent: boolean, t: number): number => {
    const rules = current();
    const limits = urgent ? rules.urgent : rules.plain;
    let wait = Math.max(waitIn(all, t, minuteMs, limits.minute), waitIn(all, t, secondMs, limits.second));
    if (lane === "agents")
      wait = Math.max(
        wait,
        waitIn(agents, t, minuteMs, rules.agents.minute),
        waitIn(agents, t, secondMs, rules.agents.second),
      );
    return wait;
  };

  const forget = (t: number): void => {
    for (const usage of [all, agents])
      while (usage.settled.length > 0 && (usage.settled[0] ?? 0) <= t - minuteMs) usage.settled.shift();
  };

  /**
   * The next job allowed now, taken from its queue; else how long until one may be. Urgent work first, people's
   * before the agents'; then plain work in the same order.
   */
  const next = (t: number): Job | number => {
    let soonest = Number.POSITIVE_INFINITY;
    for (const urgent of [true, false])
      for (const lane of ["people", "agents"] as const) {
        const queue = queues[lane];
        const waiting = urgent ? queue.urgent.length > 0 || changeable > 0 : queue.normal.length > 0;
        if (!waiting) continue;
        const wait = waitFor(lane, urgent, t);
        if (wait > 0) {
          if (urgent ? queue.urgent.length > 0 : true) soonest = Math.min(soonest, wait);
          continue;
        }
        const job = urgent ? (queue.urgent.shift() ?? promoted(queue.normal)) : queue.normal.shift();
        if (job) return job;
      }
    return Number.isFinite(soonest) ? soonest : 50;
  };

  const pump = (): void => {
    timer = undefined;
    while (queued() > 0) {
      const t = now();
      forget(t);
      const job = next(t);
      if (typeof job === "number") {
        timer = setTimeout(pump, Math.max(1, job));
        return;
      }
      all.inFlight += 1;
      if (job.lane === "agents") agents.inFlight += 1;
      job.run();
    }
  };

  /** The first plain job that has become urgent while it waited, taken out of the plain queue. */
  const promoted = (normal: Job[]): Job | undefined => {
    if (changeable === 0) return undefined;
    const index = normal.findIndex((job) => job.urgentNow?.() === true);
    if (index < 0) return undefined;
    return normal.splice(index, 1)[0];
  };

  const release = (used: boolean, lane: Lane): void => {
    all.inFlight -= 1;
    if (lane === "agents") agents.inFlight -= 1;
    // A job that made no call (its card already showed that state, its question was answered) costs nothing:
    // its slot is free at once, for whoever waits.
    if (used) {
      const t = now();
      all.settled.push(t);
      if (lane === "agents") agents.settled.push(t);
    } else if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (timer === undefined && queued() > 0) pump();
  };

  const limiter = (<T>(
    fn: (slot: Slot) => Promise<T>,
    opts?: { urgent?: boolean | (() => boolean); lane?: Lane },
  ): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const urgency = opts?.urgent;
      const lane = opts?.lane ?? "people";
      const isUrgent = typeof urgency === "function" ? urgency() : urgency === true;
      const urgentNow = typeof urgency === "function" && !isUrgent ? urgency : undefined;
      if (urgentNow) changeable += 1;
      const queuedAt = now();
      const queue = queues[lane];
      (isUrgent ? queue.urgent : queue.normal).push({
        lane,
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
                release(used, lane);
                resolve(value);
              },
              (error: unknown) => {
                release(used, lane);
                reject(error);
              },
            );
        },
      });
      // A job waiting on a window may not bind this one (another lane, or urgent past the headroom): look again.
      if (timer !== undefined) {
        clearTimeout(timer);
        timer = undefined;
      }
      pump();
    })) as Limiter & { pending(): number; wake(): void; used(): number };
  limiter.pending = queued;
  // The calls the minute's limit counts now (in flight, and settled within the last minute): what an instance
  // among several publishes in its heartbeat, for a newcomer to know what is still in the window.
  limiter.used = () => all.inFlight + all.settled.length - firstAfter(all.settled, now() - minuteMs);
  limiter.wake = () => {
    if (timer === undefined) return; // not waiting: nothing queued, or a pump is running
    clearTimeout(timer);
    pump();
  };
  return limiter;
}

/** The same limiter with every job in the agents' lane: an outside agent's card, its pings. */
export function agentsLane(limiter: Limiter): Limiter {
  return (fn, options) => limiter(fn, { ...options, lane: "agents" });
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
