import type { PendingAsk } from "../asks/pending.ts";
import { describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import type { FeishuStore } from "../store/feishu.ts";

/**
 * One reminder before each deadline (ask-deadline.ts says why it differs from the first ping). Timers are
 * plain setTimeout (fake clocks drive them in tests); a reminder is marked sent before it goes out, under a
 * key of request id and deadline, so a restart, a second timer or another instance never sends it twice.
 */
export interface ExpiryReminderDeps {
  remindBeforeMs: number;
  now: () => number;
  store: Pick<FeishuStore, "markReminded">;
  /** The ask as it is now, if still pending. */
  pending: (requestId: string) => PendingAsk | undefined;
  send: (runId: string, ask: PendingAsk) => void;
  log: Logger;
}

export class ExpiryReminders {
  readonly #deps: ExpiryReminderDeps;
  readonly #timers = new Map<string, ReturnType<typeof setTimeout>>();
  #closed = false;

  constructor(deps: ExpiryReminderDeps) {
    this.#deps = deps;
  }

  arm(runId: string, ask: PendingAsk): void {
    this.disarm(ask.requestId);
    const { remindBeforeMs, now } = this.#deps;
    if (remindBeforeMs <= 0) return;
    const at = ask.expiresAt - remindBeforeMs;
    if (at <= ask.createdAt) return;
    const timer = setTimeout(
      () => {
        this.#timers.delete(ask.requestId);
        void this.#fire(runId, ask);
      },
      Math.max(0, at - now()),
    );
    timer.unref?.();
    this.#timers.set(ask.requestId, timer);
  }

  /** Marked, then sent: the mark is one insert, so of two tries (a restart, another timer) one sends. */
  async #fire(runId: string, ask: PendingAsk): Promise<void> {
    const still = () => {
      const current = this.#deps.pending(ask.requestId);
      return !this.#closed && current?.expiresAt === ask.expiresAt ? current : undefined;
    };
    if (!still()) return;
    try {
      if (!(await this.#deps.store.markReminded(reminderKey(ask), this.#deps.now()))) return;
    } catch (error) {
      // Sent unmarked: a reminder the database could not record may come again after a restart, which is
      // better than none before the deadline.
      this.#deps.log.warn(
        { err: describeError(error), requestId: ask.requestId },
        "expiry reminder not marked sent: the database refused; sending it anyway",
      );
    }
    // Answered, extended or closed while the mark was written: nothing to remind of.
    const current = still();
    if (current) this.#deps.send(runId, current);
  }

  disarm(requestId: string): void {
    clearTimeout(this.#timers.get(requestId));
    this.#timers.delete(requestId);
  }

  close(): void {
    this.#closed = true;
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }
}

/** Shares ask_reminders with the first ping (keyed by run id there): a different key space, by prefix. */
function reminderKey(ask: PendingAsk): string {
  return `expiry:${ask.requestId}@${ask.expiresAt}`;
}
