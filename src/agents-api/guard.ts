import { AppError } from "../errors.ts";
import { RateLimiter, type RateRule } from "./rate-limit.ts";
import type { AgentPrincipal } from "./token.ts";

/**
 * Whether an agent may show something to someone now: its token's allow-list first, then the rate limits per
 * agent and per person or chat. Runs before any card or form exists, so a refusal shows nothing to anyone;
 * a call is counted only when every check allowed it (a refused one costs no budget).
 */
export class AgentGuard {
  readonly #perAgent: RateLimiter;
  readonly #perTarget: RateLimiter;

  constructor(options: { perAgent?: RateRule; perTarget?: RateRule; now: () => number }) {
    this.#perAgent = new RateLimiter(options.perAgent ?? { max: 30, windowMs: 60_000 }, options.now);
    this.#perTarget = new RateLimiter(options.perTarget ?? { max: 10, windowMs: 60_000 }, options.now);
  }

  /** The allow-list alone: a call that shows nothing new (joining an open question) costs no budget. */
  mayReach(who: AgentPrincipal, where: string): void {
    if (!who.mayAsk.has(where)) {
      const allowed = [...who.mayAsk].join(", ") || "nobody";
      throw new AppError(
        "FORBIDDEN",
        `agent "${who.agent}" may not ask ${where}: its token allows ${allowed}`,
      );
    }
  }

  /** `where`: the chat the card goes to (an open_id or a chat id); `person`: who is asked to answer. */
  mayShow(who: AgentPrincipal, where: string, person: string): void {
    this.mayReach(who, where);
    const agentKey = `agent:${who.agent}`;
    const targetKeys = [...new Set([where, person])];
    const waitMs = Math.max(
      this.#perAgent.retryAfterMs(agentKey),
      ...targetKeys.map((key) => this.#perTarget.retryAfterMs(key)),
    );
    if (waitMs > 0)
      throw new AppError(
        "RATE_LIMITED",
        `too many cards and questions: try again in ${Math.ceil(waitMs / 1000)} s`,
      );
    this.#perAgent.take(agentKey);
    for (const key of targetKeys) this.#perTarget.take(key);
  }
}
