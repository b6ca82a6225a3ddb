import type { PendingAsk } from "../asks/pending.ts";
import { describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import type { FeishuStore } from "../store/feishu.ts";

/**
 * One reminder before each deadline (ask-deadline.ts says why it differs from the first ping). Timers are
 * plain setTimeout (fake clocks drive them in tests); a reminder is marked sent before it goes out, under a
 * key of request id and deadline, so a restart or a second timer never sends it twice.
 */
export interface ExpiryReminderDeps {
  remindBeforeMs: number;
  now: () => number;
  store: Pick<FeishuStore, "markReminded" | "wasReminded">;
  /** The ask as it is now, if still pending. */
  pending: (requestId: string) => PendingAsk | undefined;
  send: (runId: string, ask: PendingAsk) => void;
  log: Logger;
}

export class ExpiryReminders {
  readonly #deps: ExpiryReminderDeps;
  readonly #timers = new Map<string, ReturnType<typeof setTimeout>>();

  constructor(deps: ExpiryReminderDeps) {
    this.#deps = deps;
  }

  arm(runId: string, ask: PendingAsk): void {
    this.disarm(ask.requestId);
    const { remindBeforeMs, now, store } = this.#deps;
    if (remindBeforeMs <= 0) return;
    const at = ask.expiresAt - remindBeforeMs;
    if (at <= ask.createdAt) return;
    const key = reminderKey(ask);
    if (store.wasReminded(key)) return;
    const timer = setTimeout(
      () => {
        this.#timers.delete(ask.requestId);
        const current = this.#deps.pending(ask.requestId);
        if (!current || current.expiresAt !== ask.expiresAt || store.wasReminded(key)) return;
        try {
          store.markReminded(key, this.#deps.now());
        } catch (error) {
          // A timer must not throw (it would end the process). Sent unmarked: a reminder the database could
          // not record may come again after a restart, which is better than none before the deadline.
          this.#deps.log.warn(
            { err: describeError(error), requestId: ask.requestId },
            "expiry reminder not marked sent: the database refused; sending it anyway",
          );
        }
        this.#deps.send(runId, current);
      },
      Math.max(0, at - now()),
    );
    timer.unref?.();
    this.#timers.set(ask.requestId, timer);
  }

  disarm(requestId: string): void {
    clearTimeout(this.#timers.get(requestId));
    this.#timers.delete(requestId);
  }

  close(): void {
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }
}

/** Shares ask_reminders with the first ping (keyed by run id there): a different key space, by prefix. */
function reminderKey(ask: PendingAsk): string {
  return `expiry:${ask.requestId}@${ask.expiresAt}`;
}
