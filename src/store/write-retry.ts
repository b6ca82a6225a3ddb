import { describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { isStorageError } from "./db.ts";

/** Backoff between attempts, then the last delay again until the write lands. */
const DELAYS_MS = [100, 250, 500, 1000, 2000];

type Write = () => unknown;

/**
 * Writes that must not be lost and must not stop the work they record: the caller goes on as if written.
 * They land one at a time, in the order given (a card's record before the mark that it is gone; a run's
 * states never overtaking each other on a pool of connections). Keyed: a newer write for a key replaces the
 * one still waiting. A write the database refuses (locked by another process, disk full, Postgres away) is
 * tried again with backoff until it lands, the rest waiting behind it. Timers are unref'd; `close()` tries
 * once more and drops the rest (a restart then finds the platform's state, as after a crash).
 */
export class RetriedWrites {
  readonly #log: Logger;
  /** Waiting, in order; Map keeps a replaced key's place. */
  readonly #pending = new Map<string, { write: Write; what: string; refused: boolean }>();
  #flowing: Promise<void> | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #attempt = 0;
  #closed = false;

  constructor(log: Logger) {
    this.#log = log;
  }

  /** Queues the write and starts writing; resolves true when it landed without being refused. */
  write(key: string, what: string, write: Write): Promise<boolean> {
    // Queued behind a refused write: it, too, lands only once the database takes writes again.
    const entry = { write, what, refused: this.#timer !== undefined };
    const replaced = this.#pending.get(key);
    if (replaced) settle(replaced, false);
    this.#pending.set(key, entry);
    const landed = new Promise<boolean>((resolve) => {
      Object.assign(entry, { resolve });
    });
    if (this.#timer === undefined) this.#flow();
    return landed;
  }

  /** Writes still waiting for the database (the one being written included). */
  get waiting(): number {
    return this.#pending.size;
  }

  /** Something the database refused waits for its next try (`waiting` stays above 0 meanwhile). */
  get retrying(): boolean {
    return this.#timer !== undefined;
  }

  /** Resolves once nothing is being written (what waits for a retry may still be waiting). */
  async flushed(): Promise<void> {
    while (this.#flowing) await this.#flowing;
  }

  /** Tries what is waiting once more, then drops the rest (logged): shutdown does not wait for a lock. */
  async close(): Promise<void> {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#closed = true;
    await this.flushed();
    await this.#drain();
    for (const [key, entry] of this.#pending) {
      this.#log.warn({ key }, `${entry.what} not saved before shutdown: the database still refused it`);
      settle(entry, false);
    }
    this.#pending.clear();
  }

  #flow(): void {
    if (this.#flowing) return;
    this.#flowing = this.#drain().finally(() => {
      this.#flowing = undefined;
    });
  }

  /** Writes what waits, in order, until it is all written or the database refuses one. */
  async #drain(): Promise<void> {
    for (;;) {
      const next = this.#pending.entries().next();
      if (next.done) {
        this.#attempt = 0;
        return;
      }
      const [key, entry] = next.value;
      try {
        await entry.write();
        if (this.#pending.get(key) === entry) this.#pending.delete(key);
        if (entry.refused) this.#log.info({ key }, `${entry.what} saved after the database refused it`);
        settle(entry, !entry.refused);
      } catch (error) {
        if (!isStorageError(error)) {
          // Only the database's refusals are worth waiting out; anything else is a bug another try repeats.
          if (this.#pending.get(key) === entry) this.#pending.delete(key);
          this.#log.error({ err: describeError(error), key }, `${entry.what} not saved`);
          settle(entry, false);
          continue;
        }
        if (!entry.refused)
          this.#log.warn(
            { err: describeError(error), key },
            `${entry.what} not saved: the database refused; retrying`,
          );
        entry.refused = true;
        // Still refused: the rest would meet the same lock; wait longer.
        this.#schedule();
        return;
      }
    }
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#closed) return;
    const delay = DELAYS_MS[Math.min(this.#attempt, DELAYS_MS.length - 1)] ?? 2000;
    this.#attempt += 1;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#flow();
    }, delay);
    this.#timer.unref();
  }
}

function settle(entry: object, landed: boolean): void {
  (entry as { resolve?: (landed: boolean) => void }).resolve?.(landed);
}
