import type { AskStore } from "../store/asks.ts";
import type { HeldAsks } from "./held-asks.ts";
import type { AnswerResult, AskState, PendingAsk } from "./pending.ts";
import { pendingFromRow, stateFromRow } from "./rows.ts";

/**
 * Reading asks (registry.ts): a held ask is pending as memory says; any other is what its row says (settled,
 * or pending on another instance). Memory-only registries know only what they hold.
 */
export class AskLookups {
  readonly #held: HeldAsks;
  readonly #store: AskStore | undefined;

  constructor(held: HeldAsks, store: AskStore | undefined) {
    this.#held = held;
    this.#store = store;
  }

  /**
   * A pending ask, held here or, with several instances, only in its row (another instance waits on it): what an
   * answer from a card, a page or a socket checks before it is decided by the row's compare-and-set.
   */
  async open(requestId: string): Promise<PendingAsk | undefined> {
    const held = this.#held.get(requestId)?.ask;
    if (held || !this.#store) return held;
    const row = await this.#store.get(requestId);
    return row?.status === "pending" ? pendingFromRow(row) : undefined;
  }

  /** The run's pending asks: those held here, else (another instance holds them) their rows. */
  async pendingOfRun(sessionId: string, runId: string): Promise<PendingAsk[]> {
    const held = this.#held.pendingOf(sessionId).filter((ask) => ask.runId === runId);
    if (held.length > 0 || !this.#store) return held;
    return (await this.#store.pending()).filter((row) => row.runId === runId).map(pendingFromRow);
  }

  /** 延长 of an ask only its row holds here: the row moves within its bound; the ask as it is now. */
  async extendRow(requestId: string, byMs: number, maxTotalMs: number): Promise<PendingAsk | undefined> {
    const row = await this.#store?.get(requestId);
    if (!this.#store || row?.status !== "pending" || !(await this.#store.extend(requestId, byMs, maxTotalMs)))
      return undefined;
    return { ...pendingFromRow(row), expiresAt: row.expiresAt + byMs, extendedMs: row.extendedMs + byMs };
  }

  /** An ask by id, pending or settled. */
  async state(requestId: string): Promise<AskState | undefined> {
    const entry = this.#held.get(requestId);
    if (entry) return { ask: entry.ask, status: "pending", outcome: undefined };
    const row = await this.#store?.get(requestId);
    return row ? stateFromRow(row) : undefined;
  }

  /** The ask a tool call made, if it made one (a resumed turn's call finds its ask again). */
  async forToolCall(runId: string, toolCallId: string): Promise<AskState | undefined> {
    for (const entry of this.#held.values())
      if (entry.ask.runId === runId && entry.ask.toolCallId === toolCallId)
        return { ask: entry.ask, status: "pending", outcome: undefined };
    const row = await this.#store?.byToolCall(runId, toolCallId);
    return row ? stateFromRow(row) : undefined;
  }

  /** The run's most recent ask, pending or settled (the card's one-line reason once an ask is gone). */
  async latestOfRun(runId: string): Promise<AskState | undefined> {
    const row = await this.#store?.latestOfRun(runId);
    if (!row) return undefined;
    const entry = this.#held.get(row.requestId);
    return entry ? { ask: entry.ask, status: "pending", outcome: undefined } : stateFromRow(row);
  }

  /**
   * Whether `by` may answer an ask this registry does not hold, by its row: refused (gone, forbidden), or
   * `open` when the row is pending in that session for that person (the settle's compare-and-set decides).
   */
  async answerableRow(
    sessionId: string,
    requestId: string,
    by: { userId: string },
  ): Promise<AnswerResult | "open"> {
    const row = await this.#store?.get(requestId);
    if (row?.status !== "pending" || row.sessionId !== sessionId) return { ok: false, reason: "gone" };
    return row.answererId === by.userId ? "open" : { ok: false, reason: "forbidden" };
  }
}
