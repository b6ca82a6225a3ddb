import type { ConsoleEvent, LogEntry, NewLogEntry } from "./view.ts";

/**
 * The console's live state: the log (Open API calls, deliveries, callbacks; bounded, oldest dropped first),
 * a revision per message, and the subscribers of the event stream. A subscriber that throws is dropped;
 * it never affects the emulator or the other subscribers.
 */
export class ConsoleFeed {
  readonly #log: LogEntry[] = [];
  readonly #revs = new Map<string, number>();
  readonly #subscribers = new Set<(event: ConsoleEvent) => void>();
  readonly #limit: number;
  #seq = 0;

  /** `firstSeq`: entries are numbered after it (see ConsoleOptions.logSeqStart). */
  constructor(options: { logLimit?: number; firstSeq?: number } = {}) {
    this.#limit = options.logLimit ?? 2000;
    this.#seq = options.firstSeq ?? 0;
  }

  /** The log so far, oldest first. */
  entries(): LogEntry[] {
    return [...this.#log];
  }

  log(entry: NewLogEntry): LogEntry {
    const recorded: LogEntry = { ...entry, seq: ++this.#seq };
    this.#log.push(recorded);
    if (this.#log.length > this.#limit) this.#log.splice(0, this.#log.length - this.#limit);
    this.publish({ type: "log", entry: recorded });
    return recorded;
  }

  rev(messageId: string): number {
    return this.#revs.get(messageId) ?? 0;
  }

  /** Counts a change of a message; returns its new revision. */
  bump(messageId: string): number {
    const rev = this.rev(messageId) + 1;
    this.#revs.set(messageId, rev);
    return rev;
  }

  publish(event: ConsoleEvent): void {
    for (const subscriber of [...this.#subscribers]) {
      try {
        subscriber(event);
      } catch {
        this.#subscribers.delete(subscriber); // a broken stream; its connection is being torn down
      }
    }
  }

  subscribe(subscriber: (event: ConsoleEvent) => void): () => void {
    this.#subscribers.add(subscriber);
    return () => {
      this.#subscribers.delete(subscriber);
    };
  }

  get subscriberCount(): number {
    return this.#subscribers.size;
  }
}
