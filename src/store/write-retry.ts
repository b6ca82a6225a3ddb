import { DatabaseUnavailableError } from "../cluster/errors.ts";
import { describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { isStorageError } from "./db.ts";

/** Backoff between attempts, then the last delay again until the write lands. */
const DELAYS_MS = [100, 250, 500, 1000, 2000];

/** A write: synchronous (a better-sqlite3 statement), or one that returns a promise (the query layer, store/sql.ts). */
export type Write = () => unknown;

interface Entry {
  write: Write;
  what: string;
}

/**
 * Writes the database refused (locked by another process, disk full, Postgres unreachable) that must not be
 * lost and must not stop the work they record: the caller goes on as if written, and the write is tried again
 * with backoff until it lands. In order, one at a time: a write that is a promise holds the ones after it until
 * it settles (a card's record lands before the mark that it is gone). Keyed: a newer write for the same key
 * replaces the one still waiting. Timers are unref'd; `close()` tries once more and drops the rest (a restart
 * then finds the platform's state, as after a crash).
 */
export class RetriedWrites {
  readonly #log: Logger;
  /** What waits, in order; the first one may be running (`#busy`). */
  readonly #pending = new Map<string, Entry>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #attempt = 0;
  /** A write that is a promise is running: what comes meanwhile waits behind it. */
  #busy: Promise<void> | undefined;
  /** The database refused one of what waits: the ones that land later say so. */
  #refused = false;
  #closed = false;
  /** The last write that landed synchronously (write() says whether its own did). */
  #landedNow: Entry | undefined;

  constructor(log: Logger) {
    this.#log = log;
  }

  /**
   * Writes now if nothing waits and the database takes it; otherwise keeps it, in order, and keeps trying.
   * True when it was written now (a synchronous write that landed).
   */
  write(key: string, what: string, write: Write): boolean {
    const entry = { write, what };
    const queued = this.#pending.size > 0;
    this.#pending.set(key, entry);
    if (queued) return false;
    this.#drain();
    return this.#landedNow === entry;
  }

  /** Writes still waiting for the database. */
  get waiting(): number {
    return this.#pending.size;
  }

  /**
   * Tries what is waiting once more, then drops the rest (logged): shutdown does not wait for a lock. Resolves
   * once that last try settled (at once when every write is synchronous).
   */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#busy === undefined) this.#drain();
    while (this.#busy !== undefined) await this.#busy;
    for (const [key, { what }] of this.#pending)
      this.#log.warn({ key }, `${what} not saved before shutdown: the database still refused it`);
    this.#pending.clear();
  }

  /**
   * Writes what waits, in order, until it is all written, the database refuses (then waits its backoff, or
   * after close gives up), or a write is a promise (then goes on once it settles).
   */
  #drain(): void {
    for (const [key, entry] of this.#pending) {
      let result: unknown;
      try {
        result = entry.write();
      } catch (error) {
        if (this.#failed(key, entry, error)) continue;
        return this.#backOff();
      }
      if (result instanceof Promise) {
        this.#busy = result.then(
          () => {
            this.#busy = undefined;
            this.#landed(key, entry);
            this.#drain();
          },
          (error: unknown) => {
            this.#busy = undefined;
            if (this.#failed(key, entry, error)) this.#drain();
            else this.#backOff();
          },
        );
        return;
      }
      this.#landed(key, entry);
      this.#landedNow = entry;
    }
    this.#attempt = 0;
    this.#refused = false;
  }

  #landed(key: string, entry: Entry): void {
    // A newer write for the key came while this one ran: it is still to be written.
    if (this.#pending.get(key) === entry) this.#pending.delete(key);
    if (this.#refused) this.#log.info({ key }, `${entry.what} saved after the database refused it`);
  }

  /** True when the write is dropped (not the database's refusal: a bug would fail the same way every time). */
  #failed(key: string, entry: Entry, error: unknown): boolean {
    if (!isStorageError(error) && !(error instanceof DatabaseUnavailableError)) {
      if (this.#pending.get(key) === entry) this.#pending.delete(key);
      this.#log.error({ err: describeError(error), key }, `${entry.what} not saved`);
      return true;
    }
    if (!this.#refused)
      this.#log.warn(
        { err: describeError(error), key },
        `${entry.what} not saved: the database refused; retrying`,
      );
    this.#refused = true;
    return false;
  }

  /** Still refused: the rest would meet the same lock; wait longer (not after close). */
  #backOff(): void {
    if (this.#closed || this.#timer !== undefined) return;
    const delay = DELAYS_MS[Math.min(this.#attempt, DELAYS_MS.length - 1)] ?? 2000;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#attempt += 1;
      this.#drain();
    }, delay);
    this.#timer.unref();
  }
}
