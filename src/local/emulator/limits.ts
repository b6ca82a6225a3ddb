/**
 * Sliding-window rate limits measured on the emulator clock, so tests advance time instead of sleeping.
 * Only admitted calls take a slot: a rejected call does not extend the wait.
 */
export class SlidingWindow {
  readonly #limit: number;
  readonly #windowMs: number;
  #hits: number[] = [];

  constructor(limit: number, windowMs = 1000) {
    this.#limit = limit;
    this.#windowMs = windowMs;
  }

  /** Takes a slot if one is free at `now`; otherwise returns how long (ms) until one frees up. */
  tryTake(now: number): { ok: true } | { ok: false; retryAfterMs: number } {
    this.#prune(now);
    if (this.#hits.length < this.#limit) {
      this.#hits.push(now);
      return { ok: true };
    }
    const oldest = this.#hits[0] ?? now;
    return { ok: false, retryAfterMs: Math.max(1, oldest + this.#windowMs - now) };
  }

  /** Takes a slot regardless of the limit (for updates that count but are not refused). */
  record(now: number): void {
    this.#prune(now);
    this.#hits.push(now);
  }

  get limit(): number {
    return this.#limit;
  }

  #prune(now: number): void {
    // Hits are appended in arrival order, but a test may move the clock backwards: filter, don't shift.
    this.#hits = this.#hits.filter((at) => at > now - this.#windowMs && at <= now);
  }
}

/** One window per key, created on first use. */
export class KeyedWindows {
  readonly #windows = new Map<string, SlidingWindow>();
  readonly #limit: number;

  constructor(limit: number) {
    this.#limit = limit;
  }

  for(key: string): SlidingWindow {
    let window = this.#windows.get(key);
    if (!window) {
      window = new SlidingWindow(this.#limit);
      this.#windows.set(key, window);
    }
    return window;
  }
}
