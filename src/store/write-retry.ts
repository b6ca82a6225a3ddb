import { describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { isStorageError } from "./db.ts";

/** Backoff between attempts, then the last delay again until the write lands. */
const DELAYS_MS = [100, 250, 500, 1000, 2000];

/**
 * Writes the database refused (locked by another process, disk full) that must not be lost and must not
 * stop the work they record: the caller goes on as if written, and the write is tried again with backoff
 * until it lands. Keyed: a newer write for the same key replaces the one still waiting. Timers are unref'd;
 * `close()` tries once more and drops the rest (a restart then finds the platform's state, as after a crash).
 */
export class RetriedWrites {
  readonly #log: Logger;
  readonly #pending = new Map<string, { write: () => void; what: string }>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #attempt = 0;

  constructor(log: Logger) {
    this.#log = log;
  }

  /** Writes now if the database takes it; otherwise logs once and keeps trying. True when written now. */
  write(key: string, what: string, write: () => void): boolean {
    // Behind what is waiting, in order: a card's record lands before the mark that it is gone.
    if (this.#pending.size > 0) {
      this.#pending.set(key, { write, what });
      return false;
    }
    try {
      write();
      return true;
    } catch (error) {
      // Only the database's refusals are worth waiting out; anything else is a bug another try repeats.
      if (!isStorageError(error)) {
        this.#log.error({ err: describeError(error), key }, `${what} not saved`);
        return false;
      }
      this.#log.warn({ err: describeError(error), key }, `${what} not saved: the database refused; retrying`);
      this.#pending.set(key, { write, what });
      this.#schedule();
      return false;
    }
  }

  /** Writes still waiting for the database. */
  get waiting(): number {
    return this.#pending.size;
  }

  /** Tries what is waiting once more, then drops the rest (logged): shutdown does not wait for a lock. */
  close(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#retry(false);
    for (const [key, { what }] of this.#pending)
      this.#log.warn({ key }, `${what} not saved before shutdown: the database still refused it`);
    this.#pending.clear();
  }

  #schedule(): void {
    if (this.#timer !== undefined) return;
    const delay = DELAYS_MS[Math.min(this.#attempt, DELAYS_MS.length - 1)] ?? 2000;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#retry();
    }, delay);
    this.#timer.unref();
  }

  #retry(again = true): void {
    for (const [key, { write, what }] of this.#pending) {
      try {
        write();
        this.#pending.delete(key);
        this.#log.info({ key }, `${what} saved after the database refused it`);
      } catch (error) {
        if (!isStorageError(error)) {
          this.#pending.delete(key);
          this.#log.error({ err: describeError(error), key }, `${what} not saved`);
          continue;
        }
        // Still refused: the rest would meet the same lock; wait longer.
        break;
      }
    }
    if (this.#pending.size === 0) {
      this.#attempt = 0;
      return;
    }
    if (!again) return;
    this.#attempt += 1;
    this.#schedule();
  }
}
