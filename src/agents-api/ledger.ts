import type { AskOutcome } from "../asks/pending.ts";
import type { AskRegistry } from "../asks/registry.ts";
import type { AskResult } from "./schemas.ts";
import { DECLINED_HINT, pendingHint } from "./schemas.ts";
import type { AgentStore } from "./store.ts";

/**
 * Which agent asked what, and how each of its asks ended. How an ask ended is read from the durable `asks`
 * row (the registry's `state`), whichever process settled it and whenever: an ask answered on a restarted bot
 * before the agent called again is answered, not lost (issue 24 item 9). Memory-only registries (unit tests,
 * no store) forget an ask once it settles, so the outcome seen here is kept for `keepMs` as a fallback.
 *
 * An answer to an ask whose id never reached the agent (the client's own timeout cut the call that asked) is
 * never lost: until some result of that ask is handed to a caller still there (`handed`), asking the same
 * questions again (`twinKey`) finds it here.
 */

export interface AgentAsk {
  askId: string;
  agent: string;
  /** The token that asked (undefined for asks from before token ids). */
  tokenId?: string;
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
  readonly #registry: AskRegistry;
  /** twinKey → the answered ask whose id the agent was never handed. */
  readonly #undelivered = new Map<string, string>();

  constructor(registry: AskRegistry, options: { now: () => number; keepMs?: number; store?: AgentStore }) {
    this.#registry = registry;
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

  /** The ask if `who`'s token made it; anyone else's is as unknown as one that never was. */
  get(who: { agent: string; tokenId: string }, askId: string): AgentAsk | undefined {
    const entry = this.#asks.get(askId) ?? this.#load(askId);
    if (!entry || entry.agent !== who.agent) return undefined;
    return entry.tokenId === undefined || entry.tokenId === who.tokenId ? entry : undefined;
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
   * A pending ask the registry does not know at all — no pending entry and no `asks` row — was lost with the
   * process that held it (before durable asks): its form is gone from the card, so it ends as cancelled
   * rather than pending for ever. An ask with a row is never marked lost: the row says how it ended.
   */
  async markLost(askId: string): Promise<void> {
    const entry = this.#asks.get(askId);
    if (!entry || entry.outcome || (await this.#registry.state(askId))) return;
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

  /** How the ask ended, or undefined while it is pending: the durable row first, then what was seen here. */
  async settledOutcome(askId: string): Promise<AskOutcome | undefined> {
    return (await this.#registry.state(askId))?.outcome ?? this.#asks.get(askId)?.outcome;
  }

  /** The tool result for an ask as it is now. */
  async result(askId: string): Promise<AskResult> {
    const outcome = await this.settledOutcome(askId);
    if (!outcome) return { status: "pending", ask_id: askId, hint: pendingHint(askId) };
    if (outcome.kind === "answered")
      return {
        status: "answered",
        ask_id: askId,
        answers: outcome.answers,
        answered_by: outcome.userId,
        answered_via: outcome.surface,
      };
    if (outcome.kind === "declined")
      return {
        status: "declined",
        ask_id: askId,
        declined_by: outcome.userId,
        declined_via: outcome.surface,
        hint: DECLINED_HINT,
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
