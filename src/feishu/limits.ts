import pThrottle from "p-throttle";

/** Runs `fn` when a rate limit allows it. */
export type Limiter = <T>(fn: () => Promise<T>) => Promise<T>;

/**
 * The app-wide Open API budget (feishu-platform §3.2: 50/s and 1000/min per app). Every call the channel
 * makes goes through one of these, shared by all cards.
 */
export function createAppLimiter(options: { perSecond?: number; perMinute?: number } = {}): Limiter {
  const perSecond = pThrottle({ limit: options.perSecond ?? 50, interval: 1000, strict: true });
  const perMinute = pThrottle({ limit: options.perMinute ?? 1000, interval: 60_000 });
  const gate = perMinute(perSecond(() => undefined));
  return async (fn) => {
    await gate();
    return fn();
  };
}

/** A hard cap for one message: the platform allows 5 PATCHes per second per message; never go above it. */
export function createMessageLimiter(perSecond = 5): Limiter {
  const gate = pThrottle({ limit: Math.min(perSecond, 5), interval: 1000, strict: true })(() => undefined);
  return async (fn) => {
    await gate();
    return fn();
  };
}
