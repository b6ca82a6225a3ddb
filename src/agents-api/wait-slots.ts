import { AppError } from "../errors.ts";

/**
 * How many calls may wait at once (issue 24 item 2). A long poll or an MCP call waiting for an answer holds an
 * HTTP connection for up to 300 s: one token's 1,000 waits held every connection of the server for five
 * minutes at a time. So each agent may have `perAgent` waits in flight, and all agents together `total`,
 * a bounded share of the server's connections (main.ts: a quarter of the cap). A wait past either is refused
 * at once (429 over HTTP, a tool error over MCP) before anything is shown, and says what to do instead.
 */

export interface WaitLimits {
  perAgent: number;
  total: number;
}

export const DEFAULT_WAIT_LIMITS: WaitLimits = { perAgent: 8, total: 250 };

/** A wait's place; released once, when the wait returns however it ends. */
export interface WaitHold {
  release(): void;
}

const NO_HOLD: WaitHold = { release: () => undefined };

export class WaitSlots {
  readonly #limits: WaitLimits;
  readonly #perAgent = new Map<string, number>();
  #total = 0;

  constructor(limits: Partial<WaitLimits> = {}) {
    this.#limits = { ...DEFAULT_WAIT_LIMITS, ...limits };
  }

  /** Takes a place for `agent`'s wait of `waitMs`, or throws RATE_LIMITED. A wait of 0 needs none. */
  hold(agent: string, waitMs: number): WaitHold {
    if (waitMs <= 0) return NO_HOLD;
    const mine = this.#perAgent.get(agent) ?? 0;
    if (mine >= this.#limits.perAgent)
      throw new AppError(
        "RATE_LIMITED",
        `agent "${agent}" already has ${mine} calls waiting for answers (at most ${this.#limits.perAgent}): ` +
          "wait for one to return, or call with wait_s: 0 and poll get_answers later",
      );
    if (this.#total >= this.#limits.total)
      throw new AppError(
        "RATE_LIMITED",
        `the bot already has ${this.#total} calls waiting for answers: call with wait_s: 0, or try again in a minute`,
      );
    this.#perAgent.set(agent, mine + 1);
    this.#total += 1;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.#total -= 1;
        const left = (this.#perAgent.get(agent) ?? 1) - 1;
        if (left > 0) this.#perAgent.set(agent, left);
        else this.#perAgent.delete(agent);
      },
    };
  }

  /** Calls waiting now: all, or one agent's. */
  waiting(agent?: string): number {
    return agent === undefined ? this.#total : (this.#perAgent.get(agent) ?? 0);
  }
}
