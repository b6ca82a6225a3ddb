import type { AskStore } from "../store/asks.ts";
import type { HeldAsks } from "./held-asks.ts";
import type { AnswerResult, AskState } from "./pending.ts";
import { stateFromRow } from "./rows.ts";

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
