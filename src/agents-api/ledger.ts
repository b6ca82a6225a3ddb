import type { AskOutcome, AskRegistry } from "../asks/registry.ts";
import type { AskResult } from "./schemas.ts";
import { pendingHint } from "./schemas.ts";
import type { AgentStore } from "./store.ts";

/**
 * Which agent asked what, and how each of its asks ended. The registry forgets an ask the moment it settles;
 * an agent may come for the answer later (get_answers after a pending result), so settled outcomes are kept
 * here for `keepMs`. `settledOutcome` is the one function to switch to the durable ask rows once they can be
 * read by id (durable branch); everything else asks through it.
 *
 * An answer to an ask whose id never reached the agent (the client's own timeout cut the call that asked) is
 * never lost: until some result of that ask is handed to a caller still there (`handed`), asking the same
 * questions again (`twinKey`) finds it here.
 */

export interface AgentAsk {
  askId: string;
  agent: string;
  taskId: string;
  answererId: string;
  createdAt: number;
  expiresAt: number;
  outcome?: AskOutcome;
  settledAt?: number;
  /** The same agent, scope (task or person) and questions: what makes a repeated ask the same one. */
  twinKey?: string;
  /** A result of this ask (so its id) reached a caller still there. */
  handed?: boolean;
}

export class AskLedger {
  readonly #asks = new Map<string, AgentAsk>();
  readonly #now: () => number;
  readonly #keepMs: number;
  readonly #off: () => void;
  readonly #store: AgentStore | undefined;
  /** twinKey → the answered ask whose id the agent was never handed. */
  readonly #undelivered = new Map<string, string>();

  constructor(registry: AskRegistry, options: { now: () => number; keepMs?: number; store?: AgentStore }) {
    this.#now = options.now;
    this.#store = options.store;
    this.#keepMs = options.keepMs ?? 24 * 60 * 60 * 1000;
    this.#off = registry.on("settled", ({ ask, outcome }) => {
      const entry = this.#asks.get(ask.requestId);
      if (!entry) return;
      entry.outcome = outcome;
      entry.settledAt = this.#now();
      this.#store?.settleAsk(entry.askId, outcome, entry.settledAt);
      if (outcome.kind === "answered" && entry.twinKey && !entry.handed)
        this.#undelivered.set(entry.twinKey, entry.askId);
    });
  }

  #added = 0;

  add(entry: AgentAsk): void {
    this.#added += 1;
    if (this.#added % 256 === 0) this.#sweep();
    this.#asks.set(entry.askId, entry);
    this.#store?.saveAsk(entry);
  }

  /** The ask if `agent` made it; another agent's ask is as unknown as one that never was. */
  get(agent: string, askId: string): AgentAsk | undefined {
    const entry = this.#asks.get(askId) ?? this.#load(askId);
    return entry && entry.agent === agent ? entry : undefined;
  }

  /** An ask from before a restart, read back from the store. */
  #load(askId: string): AgentAsk | undefined {
    const row = this.#store?.ask(askId);
    if (!row) return undefined;
    const entry: AgentAsk = { askId, ...row };
    this.#asks.set(askId, entry);
    return entry;
  }

  /**
   * A pending ask the registry no longer knows was lost with the process that held it (before durable asks):
   * its form is gone from the card, so it ends as cancelled rather than pending for ever.
   */
  markLost(askId: string): void {
    const entry = this.#asks.get(askId);
    if (!entry || entry.outcome) return;
    entry.outcome = { kind: "cancelled", reason: "the bot restarted while the question was open" };
    entry.settledAt = this.#now();
    this.#store?.settleAsk(askId, entry.outcome, entry.settledAt);
  }

  /** A result of the ask reached the agent: it knows the id, so asking the same again is a new question. */
  handed(askId: string): void {
    const entry = this.#asks.get(askId);
    if (!entry) return;
    entry.handed = true;
    if (entry.twinKey && this.#undelivered.get(entry.twinKey) === askId)
      this.#undelivered.delete(entry.twinKey);
  }

  /** The answered ask with this twinKey whose id never reached the agent, if any. */
  undeliveredTwin(twinKey: string): string | undefined {
    const askId = this.#undelivered.get(twinKey);
    return askId !== undefined && this.#asks.get(askId)?.handed !== true ? askId : undefined;
  }

  /** How the ask ended, or undefined while it is pending. */
  settledOutcome(askId: string): AskOutcome | undefined {
    return this.#asks.get(askId)?.outcome;
  }

  /** The tool result for an ask as it is now. */
  result(askId: string): AskResult {
    const outcome = this.settledOutcome(askId);
    if (!outcome) return { status: "pending", ask_id: askId, hint: pendingHint(askId) };
    if (outcome.kind === "answered")
      return {
        status: "answered",
        ask_id: askId,
        answers: outcome.answers,
        answered_by: outcome.userId,
        answered_via: outcome.surface,
      };
    return { status: outcome.kind, ask_id: askId };
  }

  get size(): number {
    return this.#asks.size;
  }

  close(): void {
    this.#off();
  }

  #sweep(): void {
    const now = this.#now();
    for (const [id, entry] of this.#asks)
      if (entry.settledAt !== undefined && now - entry.settledAt > this.#keepMs) {
        this.#asks.delete(id);
        if (entry.twinKey && this.#undelivered.get(entry.twinKey) === id)
          this.#undelivered.delete(entry.twinKey);
      }
  }
}
