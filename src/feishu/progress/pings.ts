import type { AskRegistry, PendingAsk } from "../../asks/registry.ts";
import { describeError } from "../../errors.ts";
import type { Logger } from "../../logger.ts";
import type { FeishuStore } from "../../store/feishu.ts";
import type { RetriedWrites } from "../../store/write-retry.ts";
import { strings } from "../../strings.ts";
import { type AskTimes, formatDeadline } from "../ask-deadline.ts";
import { afterSend, shouldRemind } from "../ask-reminder.ts";
import { ExpiryReminders } from "../expiry-reminder.ts";
import { agentsLane, type Limiter } from "../limits.ts";
import type { FeishuMessenger } from "../messenger.ts";
import { threadReply } from "../topics.ts";
import type { Background } from "./background.ts";
import type { ActiveCard, CardBook } from "./card-book.ts";

/**
 * The short messages that point people at a card, because a PATCH notifies nobody: the @-mention when a
 * form appears (groups only, once per card), and the reminder before each deadline (issue 16).
 */
export interface PingDeps {
  book: CardBook;
  registry: Pick<AskRegistry, "get">;
  messenger: Pick<FeishuMessenger, "sendText">;
  store: Pick<FeishuStore, "markReminded" | "wasReminded">;
  /** The reminder's mark: a write the database refuses is retried (the reminder was sent). */
  writes: RetriedWrites;
  appLimiter: Limiter;
  times: AskTimes;
  /** ASK_PING: send the @-mention when a form appears. */
  askPing: boolean;
  now: () => number;
  log: Logger;
  background: Background;
}

export class Pings {
  readonly #deps: PingDeps;
  readonly #expiry: ExpiryReminders;

  constructor(deps: PingDeps) {
    this.#deps = deps;
    this.#expiry = new ExpiryReminders({
      remindBeforeMs: deps.times.remindBeforeMs,
      now: deps.now,
      store: deps.store,
      pending: (requestId) => deps.registry.get(requestId),
      send: (runId, ask) => this.#remindExpiry(runId, ask),
      log: deps.log,
    });
  }

  /** A question appeared on `card`: its deadline reminder is armed, and the first ping sent if due. */
  asked(card: ActiveCard, ask: PendingAsk): void {
    this.#expiry.arm(card.runId, ask);
    if (shouldRemind({ enabled: this.#deps.askPing, chatType: card.chatType, state: card.reminder })) {
      card.reminder = "sending";
      this.#deps.background.track(this.#remind(card));
    }
  }

  /** The deadline moved (延长): the reminder follows it. */
  extended(card: ActiveCard, ask: PendingAsk): void {
    this.#expiry.arm(card.runId, ask);
  }

  settled(requestId: string): void {
    this.#expiry.disarm(requestId);
  }

  close(): void {
    this.#expiry.close();
  }

  /**
   * In a group, one short new message @-mentions the sender (peer-survey I1). Under load it waits for the
   * app-wide budget; if every question was answered meanwhile, it is not sent at all. It is never recalled:
   * a recall leaves 撤回了一条消息 in the chat.
   */
  async #remind(card: ActiveCard): Promise<void> {
    const { messenger, book, log, store, writes, now } = this.#deps;
    // An outside agent's ping spends from the agents' share, as its card does (placement.ts).
    const appLimiter = card.agent ? agentsLane(this.#deps.appLimiter) : this.#deps.appLimiter;
    let outcome: "sent" | "skipped" | "failed" = "failed";
    try {
      outcome = await appLimiter(async (slot) => {
        const questions = book.asksOf(card).reduce((n, ask) => n + ask.questions.length, 0);
        if (questions === 0) {
          slot.unused();
          return "skipped" as const;
        }
        await messenger.sendText({ chatId: card.chatId }, strings.feishu.askPing(questions), {
          mentionOpenIds: [card.senderId],
          replyTo: card.messageId ?? card.sourceMessageId,
          ...threadReply(card),
        });
        return "sent" as const;
      });
    } catch (error) {
      log.warn({ err: describeError(error), runId: card.runId }, "ask reminder failed");
    }
    card.reminder = afterSend(outcome);
    const at = now();
    if (outcome === "sent")
      writes.write(`reminded:${card.runId}`, "reminder mark", () => store.markReminded(card.runId, at));
  }

  /**
   * The reminder before a deadline: unlike the first ping it goes to private chats too, as a short message,
   * and in groups @-mentions the sender; one per deadline (ask-deadline.ts says why).
   */
  #remindExpiry(runId: string, ask: PendingAsk): void {
    const { book, messenger, times, background } = this.#deps;
    const card = book.get(runId);
    if (!card) return;
    const appLimiter = card.agent ? agentsLane(this.#deps.appLimiter) : this.#deps.appLimiter;
    const text = strings.asks.remind(ask.questions.length, formatDeadline(ask.expiresAt, times.timeZone));
    const group = card.chatType === "group";
    background.track(
      appLimiter(() =>
        messenger.sendText({ chatId: card.chatId }, text, {
          ...(group ? { mentionOpenIds: [card.senderId] } : {}),
          replyTo: card.messageId ?? card.sourceMessageId,
          ...threadReply(card),
        }),
      ),
    );
  }
}
