/**
 * Fixed-window counters per key ("no spamming a user with cards"): each agent, and each person or chat, may
 * be shown at most `max` new cards and questions per `windowMs`. Pure apart from the clock it is handed.
 */

export interface RateRule {
  max: number;
  windowMs: number;
}

export class RateLimiter {
  readonly #rule: RateRule;
  readonly #now: () => number;
  readonly #windows = new Map<string, { startedAt: number; count: number }>();

  constructor(rule: RateRule, now: () => number) {
    this.#rule = rule;
    this.#now = now;
  }

  /** How many ms until `key` may act again; 0 when it may now. Does not count. */
  retryAfterMs(key: string): number {
    const window = this.#current(key);
    if (!window || window.count < this.#rule.max) return 0;
    return window.startedAt + this.#rule.windowMs - this.#now();
  }

  /** Counts one action for `key`. Call only after every limiter involved allowed it (nothing half-counted). */
  take(key: string): void {
    const window = this.#current(key) ?? { startedAt: this.#now(), count: 0 };
    window.count += 1;
    this.#windows.set(key, window);
    // Forget old windows now and then, so a stream of one-off keys does not grow the map for ever.
    if (this.#windows.size > 10_000) this.#sweep();
  }

  #current(key: string) {
    const window = this.#windows.get(key);
    if (!window || this.#now() - window.startedAt >= this.#rule.windowMs) return undefined;
    return window;
  }

  #sweep(): void {
    for (const [key, window] of this.#windows)
      if (this.#now() - window.startedAt >= this.#rule.windowMs) this.#windows.delete(key);
  }
}
