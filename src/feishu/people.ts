import { describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import type { Limiter } from "./limits.ts";
import type { FeishuMessenger } from "./messenger.ts";

/**
 * People's names, for the texts that cannot @-mention (a toast is plain text: 仅 @Bob 可以回答此问题). A
 * callback is answered from memory within 3 s, so names are learned ahead, in the background, when someone
 * asks the bot something in a group (the one place another member can click their card); a name not known
 * yet (no contact permission, out of scope, the lookup still on its way) leaves the text without one.
 */

/** Names kept at most; the oldest learned is forgotten first. */
const MAX_NAMES = 5_000;
/** A lookup that failed (no permission, someone outside the contact scope) is not tried again before this. */
const RETRY_AFTER_MS = 30 * 60_000;

export interface PeopleNamesDeps {
  messenger: Pick<FeishuMessenger, "userName">;
  appLimiter: Limiter;
  log: Logger;
  now: () => number;
  /** Keeps the lookup with the channel's background work (shutdown and tests wait for it). */
  track: (work: Promise<unknown>) => void;
}

export class PeopleNames {
  readonly #names = new Map<string, string>();
  readonly #failedAt = new Map<string, number>();
  readonly #pending = new Set<string>();
  readonly deps: PeopleNamesDeps;

  constructor(deps: PeopleNamesDeps) {
    this.deps = deps;
  }

  nameOf(openId: string): string | undefined {
    return this.#names.get(openId);
  }

  /** Starts a lookup of `openId`'s name unless it is known, on its way, or failed a short while ago. */
  learn(openId: string): void {
    if (this.#names.has(openId) || this.#pending.has(openId)) return;
    const failed = this.#failedAt.get(openId);
    if (failed !== undefined && this.deps.now() - failed < RETRY_AFTER_MS) return;
    this.#pending.add(openId);
    const lookup = this.deps
      .appLimiter(() => this.deps.messenger.userName(openId))
      .then(
        (name) => {
          this.#failedAt.delete(openId);
          if (name.trim() === "") return;
          this.#names.set(openId, name);
          if (this.#names.size > MAX_NAMES) this.#names.delete(this.#names.keys().next().value ?? "");
        },
        (error: unknown) => {
          this.#failedAt.set(openId, this.deps.now());
          if (this.#failedAt.size > MAX_NAMES)
            this.#failedAt.delete(this.#failedAt.keys().next().value ?? "");
          this.deps.log.debug(
            { err: describeError(error), openId },
            "no name for a user (toasts go without it)",
          );
        },
      )
      .finally(() => this.#pending.delete(openId));
    this.deps.track(lookup);
  }
}
