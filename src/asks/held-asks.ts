import { setImmediate as nextTurn } from "node:timers";
import type { AskOutcome, PendingAsk } from "./pending.ts";

/**
 * The asks one registry holds (registry.ts): the pending asks of this process, by id and by session, each with
 * the promise its waiting call holds and its deadline's timer. Rows decide; this is the cache and the waiters.
 */

export interface HeldAsk {
  ask: PendingAsk;
  promise: Promise<AskOutcome>;
  resolve: (outcome: AskOutcome) => void;
  timer: ReturnType<typeof setTimeout>;
  /** The settle whose row write is under way: a second one waits for it (one `settled` event per ask). */
  settling?: Promise<boolean>;
}

export class HeldAsks {
  readonly #entries = new Map<string, HeldAsk>();
  /** Request ids of the pending asks of each session, in the order they were asked. */
  readonly #bySession = new Map<string, Set<string>>();
  readonly #now: () => number;
  readonly #onDeadline: (requestId: string) => void;

  constructor(now: () => number, onDeadline: (requestId: string) => void) {
    this.#now = now;
    this.#onDeadline = onDeadline;
  }

  get(requestId: string): HeldAsk | undefined {
    return this.#entries.get(requestId);
  }

  has(requestId: string): boolean {
    return this.#entries.has(requestId);
  }

  /** Whether `entry` is still the one held under its id (a settle that waited may find it gone). */
  holds(entry: HeldAsk): boolean {
    return this.#entries.get(entry.ask.requestId) === entry;
  }

  idsOf(sessionId: string): string[] {
    return [...(this.#bySession.get(sessionId) ?? [])];
  }

  values(): IterableIterator<HeldAsk> {
    return this.#entries.values();
  }

  /** A session's pending asks, in the order they were asked. */
  pendingOf(sessionId: string): PendingAsk[] {
    const asks = this.idsOf(sessionId).flatMap((id) => this.#entries.get(id)?.ask ?? []);
    return asks.sort((a, b) => a.createdAt - b.createdAt);
  }

  get size(): number {
    return this.#entries.size;
  }

  track(ask: PendingAsk): void {
    let resolve!: (outcome: AskOutcome) => void;
    const promise = new Promise<AskOutcome>((r) => {
      resolve = r;
    });
    this.#entries.set(ask.requestId, { ask, promise, resolve, timer: this.timer(ask) });
    const ids = this.#bySession.get(ask.sessionId) ?? new Set<string>();
    ids.add(ask.requestId);
    this.#bySession.set(ask.sessionId, ids);
  }

  /** The deadline is absolute (from the moment of asking, resume seed D3): a restart does not restart it. */
  timer(ask: PendingAsk): ReturnType<typeof setTimeout> {
    const delay = Math.max(0, ask.expiresAt - this.#now());
    const timer = setTimeout(() => this.#onDeadline(ask.requestId), delay);
    timer.unref?.();
    return timer;
  }

  /** Lets go of `entry` with its final outcome; false when it was no longer held (settled by someone else). */
  release(entry: HeldAsk, final: AskOutcome): boolean {
    const { requestId } = entry.ask;
    if (!this.holds(entry)) return false;
    this.#entries.delete(requestId);
    const ids = this.#bySession.get(entry.ask.sessionId);
    ids?.delete(requestId);
    if (ids?.size === 0) this.#bySession.delete(entry.ask.sessionId);
    clearTimeout(entry.timer);
    // The waiting tool call resumes on the event loop's next turn, so the answer's own response (a card
    // callback, a WebSocket ack) and others already waiting go out before the run's next step takes the CPU.
    // (node:timers, not the global: fake clocks in tests leave it alone.)
    nextTurn(() => entry.resolve(final));
    return true;
  }
}
