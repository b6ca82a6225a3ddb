import { setImmediate as nextTurn } from "node:timers";
import type { AskStore } from "../store/asks.ts";
import type { AskOutcome, PendingAsk } from "./pending.ts";
import { outcomeOfRow, settleOf } from "./rows.ts";

/**
 * The asks one registry holds (registry.ts) and how each ends: the pending asks of this process, by id and
 * by session, each with the promise its waiting call holds and its deadline's timer. Rows decide (the
 * compare-and-set in `settle`); this is the cache, the waiters and the one way an ask leaves them.
 */

export interface HeldAsk {
  ask: PendingAsk;
  promise: Promise<AskOutcome>;
  resolve: (outcome: AskOutcome) => void;
  /** The deadline's; none for a copy. */
  timer: ReturnType<typeof setTimeout> | undefined;
  /**
   * Held to be shown and answered here while another instance waits on it (issue 27: registry.mirror). Its
   * deadline is that instance's, judged by the clock that set it, so a copy never times out by itself: its end
   * comes from the row (a wake-up or a poll). Owned (`own`) once a call here waits on it.
   */
  copy?: true;
  /** When it was asked among asks of the same millisecond: the order `register` was called in. */
  order: number;
  /** The settle whose row write is under way: a second one waits for it (one `settled` event per ask). */
  settling?: Promise<boolean>;
}

export interface HeldAsksDeps {
  now: () => number;
  /** The ask rows; without it asks live in memory only. */
  store: AskStore | undefined;
  onError: (error: unknown, event: string) => void;
  /** An ask ended here, with the outcome its waiting call gets. */
  onReleased: (ask: PendingAsk, outcome: AskOutcome) => void;
  /** Our compare-and-set moved the ask's row out of pending. */
  onWritten: (requestId: string) => void;
  /** The deadline moved, read from the row at the old one (延长 on another instance whose wake-up was lost). */
  onMoved: (ask: PendingAsk) => void;
}

/** How soon a settle whose row could not be written is tried again. */
const RETRY_MS = 1_000;

export class HeldAsks {
  readonly #entries = new Map<string, HeldAsk>();
  #order = 0;
  /** Request ids of the pending asks of each session, in the order they were asked. */
  readonly #bySession = new Map<string, Set<string>>();
  readonly #deps: HeldAsksDeps;

  constructor(deps: HeldAsksDeps) {
    this.#deps = deps;
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

  /** A session's pending asks, in the order they were asked. */
  pendingOf(sessionId: string): PendingAsk[] {
    const held = this.idsOf(sessionId).flatMap((id) => this.#entries.get(id) ?? []);
    // Two asks of one turn are written side by side and their rows may land in either order.
    held.sort((a, b) => a.ask.createdAt - b.ask.createdAt || a.order - b.order);
    return held.map((entry) => entry.ask);
  }

  values(): IterableIterator<HeldAsk> {
    return this.#entries.values();
  }

  get size(): number {
    return this.#entries.size;
  }

  /** A place in the order of asking, taken when an ask is asked (before its row is written). */
  nextOrder(): number {
    this.#order += 1;
    return this.#order;
  }

  track(ask: PendingAsk, order = this.nextOrder(), copy = false): void {
    let resolve!: (outcome: AskOutcome) => void;
    const promise = new Promise<AskOutcome>((r) => {
      resolve = r;
    });
    const timer = copy ? undefined : this.#timer(ask);
    this.#entries.set(ask.requestId, { ask, promise, resolve, timer, order, ...(copy ? { copy } : {}) });
    const ids = this.#bySession.get(ask.sessionId) ?? new Set<string>();
    ids.add(ask.requestId);
    this.#bySession.set(ask.sessionId, ids);
  }

  /** A call here waits on the ask now (its run was adopted, or resumed here): its deadline is ours from here. */
  own(entry: HeldAsk): void {
    if (!entry.copy || !this.holds(entry)) return;
    delete entry.copy;
    entry.timer = this.#timer(entry.ask);
  }

  /** The call waiting on the ask went to another instance (its run did): a copy here, its deadline theirs. */
  disown(entry: HeldAsk): void {
    if (entry.copy || !this.holds(entry)) return;
    clearTimeout(entry.timer);
    entry.timer = undefined;
    entry.copy = true;
  }

  /** 延长, here or (read from the row) on another instance: the deadline moves, and its timer with it. */
  moveDeadline(entry: HeldAsk, expiresAt: number, extendedMs: number): void {
    entry.ask.expiresAt = expiresAt;
    entry.ask.extendedMs = extendedMs;
    clearTimeout(entry.timer);
    entry.timer = entry.copy ? undefined : this.#timer(entry.ask);
  }

  /** The deadline is absolute (from the moment of asking, resume seed D3): a restart does not restart it. */
  #timer(ask: PendingAsk): ReturnType<typeof setTimeout> {
    const delay = Math.max(0, ask.expiresAt - this.#deps.now());
    const timer = setTimeout(() => void this.#due(ask.requestId), delay);
    timer.unref?.();
    return timer;
  }

  /**
   * The deadline came. Another instance may have moved it (延长 on a page it serves) and its wake-up been lost,
   * so the row is read first: a later deadline there is the deadline. Unread (the store away), it times out.
   */
  async #due(requestId: string): Promise<void> {
    const entry = this.#entries.get(requestId);
    const { store } = this.#deps;
    if (!entry) return;
    if (store && !entry.ask.elicitation) {
      const row = await store.get(requestId).catch(() => undefined);
      if (row?.status === "pending" && row.expiresAt > entry.ask.expiresAt && this.holds(entry)) {
        this.moveDeadline(entry, row.expiresAt, row.extendedMs);
        this.#deps.onMoved(entry.ask);
        return;
      }
    }
    await this.settleRetrying(requestId, { kind: "timeout" });
  }

  /**
   * A settle the bot makes itself. The row could not be written (a full disk, a locked file, Postgres away):
   * the ask stays pending and the settle is tried again shortly, rather than rejecting into a caller that
   * cannot wait (a timer, an abort listener). Resolves to whether this settle won, never rejects.
   */
  async settleRetrying(requestId: string, outcome: AskOutcome): Promise<boolean> {
    for (;;) {
      try {
        return await this.settle(requestId, outcome);
      } catch (error) {
        this.#deps.onError(error, outcome.kind);
        if (!this.#entries.has(requestId)) return false;
        await new Promise<void>((resolve) => setTimeout(resolve, RETRY_MS).unref?.());
      }
    }
  }

  /** Ends a held ask with `outcome` if its row takes it; true only for the settle that won. */
  async settle(requestId: string, outcome: AskOutcome): Promise<boolean> {
    const entry = this.#entries.get(requestId);
    if (!entry) return false;
    // One write at a time per ask: a second settle waits for the first, then finds the ask gone.
    if (entry.settling) {
      await entry.settling.catch(() => false);
      return this.settle(requestId, outcome);
    }
    const { store } = this.#deps;
    if (!store || entry.ask.elicitation) return this.release(entry, outcome);
    const written = this.#write(store, entry, outcome);
    entry.settling = written;
    try {
      return await written;
    } finally {
      if (entry.settling === written) delete entry.settling;
    }
  }

  /**
   * The compare-and-set decides. A row another process or instance settled first wins over this call: the
   * waiting call gets that outcome, and this caller is told it lost. A write that throws leaves the ask pending.
   */
  async #write(store: AskStore, entry: HeldAsk, outcome: AskOutcome): Promise<boolean> {
    const requestId = entry.ask.requestId;
    if (await store.settle(requestId, settleOf(outcome, this.#deps.now()))) {
      this.release(entry, outcome);
      this.#deps.onWritten(requestId);
      return true;
    }
    this.release(entry, outcomeOfRow(await store.get(requestId)));
    return false;
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
    // Surfaces hear of it at once; the waiting tool call resumes on the event loop's next turn, so the
    // answer's own response (a card callback, a WebSocket ack) and others already waiting go out before the
    // run's next step takes the CPU. (node:timers, not the global: fake clocks in tests leave it alone.)
    nextTurn(() => entry.resolve(final));
    this.#deps.onReleased(entry.ask, final);
    return true;
  }
}
