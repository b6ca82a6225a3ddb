/**
 * At most one call per key per `intervalMs`, and never a change left unsaid: the first change of a quiet key is
 * said at once; changes within the interval after a call are folded into one more call at its end (a trailing
 * edge), so the last change of a burst is always followed by a call. The wake-ups between instances use it to
 * announce a busy run a few times a second rather than at every step (harness/run-wakeups.ts).
 */
export class KeyedThrottle {
  readonly #intervalMs: number;
  readonly #call: (key: string) => void;
  /** Keys called within the last interval, and whether a change came since that call. */
  readonly #open = new Map<string, { timer: ReturnType<typeof setTimeout>; again: boolean }>();

  constructor(intervalMs: number, call: (key: string) => void) {
    if (!(intervalMs > 0))
      throw new RangeError(`a throttle's interval must be above 0 ms, got ${intervalMs}`);
    this.#intervalMs = intervalMs;
    this.#call = call;
  }

  /** `key` changed. */
  touch(key: string): void {
    const open = this.#open.get(key);
    if (open) open.again = true;
    else this.#callNow(key);
  }

  /** Keys whose trailing call is still to come. */
  get waiting(): number {
    return [...this.#open.values()].filter((open) => open.again).length;
  }

  /** Makes every trailing call now and forgets the rest (a shutdown: the last changes are said before it ends). */
  flush(): void {
    const open = [...this.#open.entries()];
    this.#open.clear();
    for (const [key, entry] of open) {
      clearTimeout(entry.timer);
      if (entry.again) this.#call(key);
    }
  }

  #callNow(key: string): void {
    const timer = setTimeout(() => {
      const open = this.#open.get(key);
      this.#open.delete(key);
      if (open?.again) this.#callNow(key);
    }, this.#intervalMs);
    timer.unref?.();
    // Open before the call: a change the call itself causes is folded into the trailing edge.
    this.#open.set(key, { timer, again: false });
    this.#call(key);
  }
}
