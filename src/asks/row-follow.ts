import type { AskRow, AskStore } from "../store/asks.ts";
import type { HeldAsks } from "./held-asks.ts";
import type { AskOutcome, PendingAsk } from "./pending.ts";
import { outcomeOfRow, pendingFromRow } from "./rows.ts";

/** An ask held here that another instance settled, as its row says (`settledAt` by that instance's clock). */
export interface SettledElsewhere {
  ask: PendingAsk;
  outcome: AskOutcome;
  settledAt?: number;
}

/**
 * The registry's asks as other instances change their rows (issue 27, registry.ts): an ask another instance
 * settled or extended is followed here from its row, and one another instance asked is held here as a copy,
 * so every instance's surfaces show every pending question and any of them may answer it, the row's
 * compare-and-set deciding. Wake-ups and polls call these (ask-wakeups.ts); nothing here writes a row.
 */
export class RowFollow {
  readonly #held: HeldAsks;
  readonly #store: AskStore | undefined;
  readonly #emit: (event: "mirrored" | "extended", ask: PendingAsk) => void;
  readonly #elsewhere: (settled: SettledElsewhere) => void;

  constructor(
    held: HeldAsks,
    store: AskStore | undefined,
    emit: (event: "mirrored" | "extended", ask: PendingAsk) => void,
    elsewhere: (settled: SettledElsewhere) => void = () => undefined,
  ) {
    this.#held = held;
    this.#store = store;
    this.#emit = emit;
    this.#elsewhere = elsewhere;
  }

  /** Every pending ask of the run is held here, owned: a copy held before becomes this instance's to time out. */
  async holdRun(runId: string): Promise<void> {
    for (const row of (await this.#store?.pending()) ?? []) {
      if (row.runId !== runId) continue;
      const copy = this.#held.get(row.requestId);
      if (copy) this.#held.own(copy);
      else this.#held.track(pendingFromRow(row));
    }
  }

  /** The run went to another instance: every ask of it held here is a copy from now on (no timer). */
  letGoRun(runId: string): void {
    for (const entry of this.#held.values()) if (entry.ask.runId === runId) this.#held.disown(entry);
  }

  async mirror(requestId: string): Promise<PendingAsk | undefined> {
    const row = this.#held.has(requestId) ? undefined : await this.#store?.get(requestId);
    return row?.status === "pending" ? this.#copy(row) : undefined;
  }

  async mirrorPending(): Promise<number> {
    const rows = (await this.#store?.pending()) ?? [];
    return rows.filter((row) => this.#copy(row) !== undefined).length;
  }

  async reconcile(requestId: string): Promise<boolean> {
    const entry = this.#held.get(requestId);
    if (!entry || entry.ask.elicitation || !this.#store) return false;
    const row = await this.#store.get(requestId);
    if (row?.status === "pending" && row.expiresAt > entry.ask.expiresAt && this.#held.holds(entry)) {
      this.#held.moveDeadline(entry, row.expiresAt, row.extendedMs);
      this.#emit("extended", entry.ask);
    }
    return this.#settledElsewhere(row) === 1;
  }

  async reconcileAll(): Promise<number> {
    const held = [...this.#held.values()].filter((entry) => !entry.ask.elicitation);
    if (!this.#store || held.length === 0) return 0;
    const settled = await this.#store.settledAmong(held.map((entry) => entry.ask.requestId));
    return settled.reduce((count, row) => count + this.#settledElsewhere(row), 0);
  }

  /** A pending row not held here, held from now on as a copy (no timer: held-asks.ts). */
  #copy(row: AskRow): PendingAsk | undefined {
    if (this.#held.has(row.requestId)) return undefined;
    const ask = pendingFromRow(row);
    this.#held.track(ask, undefined, true);
    this.#emit("mirrored", ask);
    return ask;
  }

  /** A row another instance settled: the held ask ends with its outcome (unless a settle of ours is writing). */
  #settledElsewhere(row: AskRow | undefined): 0 | 1 {
    const entry = row && row.status !== "pending" ? this.#held.get(row.requestId) : undefined;
    if (!row || !entry || entry.settling || !this.#held.holds(entry)) return 0;
    const outcome = outcomeOfRow(row);
    // Told before the settle's own event: a card answered on another instance holds its PATCH first.
    this.#elsewhere({
      ask: entry.ask,
      outcome,
      ...(row.settledAt !== undefined ? { settledAt: row.settledAt } : {}),
    });
    this.#held.release(entry, outcome);
    return 1;
  }
}
