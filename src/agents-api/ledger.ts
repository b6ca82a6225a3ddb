import type { AskOutcome } from "../asks/pending.ts";
import type { AskRegistry } from "../asks/registry.ts";
import type { Logger } from "../logger.ts";
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
 *
 * The `agent_asks` row follows: written when the ask is added, its outcome when the ask settles (after the
 * row's own write, so on Postgres the outcome never lands before the row it sets).
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
  /** The row's first write, which its outcome's write follows. */
  saved?: Promise<void>;
}

export class AskLedger {
  readonly #asks = new Map<string, AgentAsk>();
  readonly #now: () => number;
  readonly #keepMs: number;
  readonly #off: () => void;
  readonly #store: AgentStore | undefined;
  readonly #registry: AskRegistry;
  readonly #logger: Logger | undefined;
  /** twinKey → the answered ask whose id the agent was never handed. */
  readonly #undelivered = new Map<string, string>();

  constructor(
    registry: AskRegistry,
    options: { now: () => number; keepMs?: number; store?: AgentStore; logger?: Logger },
  ) {
    this.#registry = registry;
    this.#now = options.now;
    this.#store = options.store;
    this.#logger = options.logger;
    this.#keepMs = options.keepMs ?? 24 * 60 * 60 * 1000;
    this.#off = registry.on("settled", ({ ask, outcome }) => {
      const entry = this.#asks.get(ask.requestId);
      if (!entry) return;
      entry.outcome = outcome;
      entry.settledAt = this.#now();
      this.#background(this.#settle(entry, outcome, entry.settledAt), entry.askId);
      if (outcome.kind === "answered" && entry.twinKey && !entry.handed)
        this.#undelivered.set(entry.twinKey, entry.askId);
    });
  }

  #added = 0;

  /** Held at once (a settle from now on finds it); resolves once its row is written. */
  async add(entry: AgentAsk): Promise<void> {
    this.#added += 1;
    if (this.#added % 256 === 0) this.#sweep();
    this.#asks.set(entry.askId, entry);
    if (!this.#store) return;
    entry.saved = this.#store.saveAsk(entry);
    await entry.saved;
  }

  /** The ask if `who`'s token made it; anyone else's is as unknown as one that never was. */
  async get(who: { agent: string; tokenId: string }, askId: string): Promise<AgentAsk | undefined> {
    const entry = this.#asks.get(askId) ?? (await this.#load(askId));
    if (!entry || entry.agent !== who.agent) return undefined;
    return entry.tokenId === undefined || entry.tokenId === who.tokenId ? entry : undefined;
  }

  /** An ask from before a restart, read back from the store. */
  async #load(askId: string): Promise<AgentAsk | undefined> {
    const row = await this.#store?.ask(askId);
    if (!row) return undefined;
    // Read twice at once, the first read back is the one held.
    const held = this.#asks.get(askId);
    if (held) return held;
    const entry: AgentAsk = { askId, ...row };
    this.#asks.set(askId, entry);
    return entry;
  }

  /** Writes the outcome after the row's first write (which may have failed: the outcome is tried anyway). */
  #settle(entry: AgentAsk, outcome: AskOutcome, at: number): Promise<void> {
    const store = this.#store;
    if (!store) return Promise.resolve();
    const write = () => store.settleAsk(entry.askId, outcome, at).then(() => undefined);
    return (entry.saved ?? Promise.resolve()).then(write, write);
  }

  /** A write nobody waits for (a settled event): a failure is logged; without a logger it is left unhandled. */
  #background(write: Promise<void>, askId: string): void {
    const logger = this.#logger;
    if (logger) write.catch((err: unknown) => logger.error({ err, askId }, "agent ask outcome not written"));
    else void write;
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
    await this.#settle(entry, entry.outcome, entry.settledAt);
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
