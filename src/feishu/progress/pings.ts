import type { AskOutcome, PendingAsk } from "../../asks/pending.ts";
import type { AskRegistry } from "../../asks/registry.ts";
import { REPLY_SURFACE } from "../../asks/reply-answer.ts";
import { describeError } from "../../errors.ts";
import type { Logger } from "../../logger.ts";
import type { FeishuStore } from "../../store/feishu.ts";
import type { RetriedWrites } from "../../store/write-retry.ts";
import { strings } from "../../strings.ts";
import { type AskTimes, deadlineInZone } from "../ask-deadline.ts";
import { afterSend, shouldRemind } from "../ask-reminder.ts";
import { ExpiryReminders } from "../expiry-reminder.ts";
import { agentsLane, type Limiter } from "../limits.ts";
import { type FeishuMessenger, mentionTag } from "../messenger.ts";
import { threadReply } from "../topics.ts";
import type { Background } from "./background.ts";
import type { ActiveCard, CardBook } from "./card-book.ts";

/**
 * The short messages that point people at a card, because a PATCH notifies nobody: the @-mention when a
 * form appears (groups only, once per card), and the reminder before each deadline (issue 16). Once the
 * questions they point at have ended, each is edited to say how (answered, by whom; expired; cancelled),
 * so the chat does not end on 有 2 个问题等你回答… after the task is done. Edited, never recalled: a recall
 * leaves 撤回了一条消息 in everyone's chat (feishu-platform §3.6).
 *
 * Which message points at which questions is kept in memory: after a restart the bot no longer edits the
 * messages it sent before it.
 */
export interface PingDeps {
  book: CardBook;
  registry: Pick<AskRegistry, "get">;
  messenger: Pick<FeishuMessenger, "sendText" | "editText">;
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

/** A sent ping or reminder: its message, the questions it points at, and how the chat words a person. */
interface Pointer {
  messageId: string | undefined;
  /** The asks it is about that are still open; once none is, the message is edited. */
  open: Set<string>;
  group: boolean;
  /** The last of its asks to end, for the edit of a message still on its way. */
  ended?: AskOutcome;
}

export class Pings {
  readonly #deps: PingDeps;
  readonly #expiry: ExpiryReminders;
  /** The first ping of a card, by run id. */
  readonly #pings = new Map<string, Pointer>();
  /** The expiry reminders of each ask (one per deadline: a 延长 makes another), by request id. */
  readonly #reminders = new Map<string, Pointer[]>();

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
    // A question that comes while the card's ping is out is one more it points at.
    this.#pings.get(card.runId)?.open.add(ask.requestId);
    if (shouldRemind({ enabled: this.#deps.askPing, chatType: card.chatType, state: card.reminder })) {
      card.reminder = "sending";
      this.#deps.background.track(this.#remind(card));
    }
  }

  /** The deadline moved (延长): the reminder follows it. */
  extended(card: ActiveCard, ask: PendingAsk): void {
    this.#expiry.arm(card.runId, ask);
  }

  /** An ask ended: its reminder, and the card's ping once none of its questions is open, say how. */
  settled(ask: PendingAsk, outcome: AskOutcome): void {
    this.#expiry.disarm(ask.requestId);
    for (const reminder of this.#reminders.get(ask.requestId) ?? [])
      this.#ended(reminder, outcome, () => this.#dropReminder(ask.requestId, reminder), ask.requestId);
    const ping = this.#pings.get(ask.runId);
    if (ping) this.#ended(ping, outcome, () => this.#pings.delete(ask.runId), ask.requestId);
  }

  #dropReminder(requestId: string, pointer: Pointer): void {
    const left = (this.#reminders.get(requestId) ?? []).filter((p) => p !== pointer);
    if (left.length > 0) this.#reminders.set(requestId, left);
    else this.#reminders.delete(requestId);
  }

  #ended(pointer: Pointer, outcome: AskOutcome, drop: () => void, requestId: string): void {
    pointer.open.delete(requestId);
    pointer.ended = outcome;
    if (pointer.open.size > 0 || pointer.messageId === undefined) return;
    drop();
    this.#edit(pointer.messageId, endedText(outcome, pointer.group));
  }

  /** A message that arrived on the platform after its questions ended is edited at once. */
  #landed(pointer: Pointer, messageId: string, drop: () => void): void {
    pointer.messageId = messageId;
    if (pointer.open.size > 0 || pointer.ended === undefined) return;
    drop();
    this.#edit(messageId, endedText(pointer.ended, pointer.group));
  }

  #edit(messageId: string, text: string): void {
    const { appLimiter, messenger, log, background } = this.#deps;
    background.track(
      appLimiter(() => messenger.editText(messageId, text)).catch((error: unknown) => {
        // Best effort: the message keeps its old words (too old to edit, recalled by someone, the budget).
        log.info({ err: describeError(error), messageId }, "could not edit an ended question's ping");
      }),
    );
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
    const pointer: Pointer = { messageId: undefined, open: new Set(), group: true };
    const drop = () => {
      if (this.#pings.get(card.runId) === pointer) this.#pings.delete(card.runId);
    };
    try {
      outcome = await appLimiter(async (slot) => {
        const asks = book.asksOf(card);
        const questions = asks.reduce((n, ask) => n + ask.questions.length, 0);
        if (questions === 0) {
          slot.unused();
          return "skipped" as const;
        }
        for (const ask of asks) pointer.open.add(ask.requestId);
        this.#pings.set(card.runId, pointer);
        const sent = await messenger.sendText({ chatId: card.chatId }, strings.feishu.askPing(questions), {
          mentionOpenIds: [card.senderId],
          replyTo: card.messageId ?? card.sourceMessageId,
          ...threadReply(card),
        });
        this.#landed(pointer, sent.messageId, drop);
        return "sent" as const;
      });
    } catch (error) {
      drop();
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
    const deadline = deadlineInZone(ask.expiresAt, times.timeZone, this.#deps.now());
    const text = strings.asks.remind(ask.questions.length, deadline);
    const group = card.chatType === "group";
    const pointer: Pointer = { messageId: undefined, open: new Set([ask.requestId]), group };
    const drop = () => this.#dropReminder(ask.requestId, pointer);
    this.#reminders.set(ask.requestId, [...(this.#reminders.get(ask.requestId) ?? []), pointer]);
    background.track(
      appLimiter(() =>
        messenger.sendText({ chatId: card.chatId }, text, {
          ...(group ? { mentionOpenIds: [card.senderId] } : {}),
          replyTo: card.messageId ?? card.sourceMessageId,
          ...threadReply(card),
        }),
      ).then(
        (sent) => this.#landed(pointer, sent.messageId, drop),
        (error: unknown) => {
          drop();
          throw error;
        },
      ),
    );
  }
}

/** What an ended question's ping says now: answered (by whom, where), declined, expired or cancelled. */
export function endedText(outcome: AskOutcome, group: boolean): string {
  const s = strings.asks;
  switch (outcome.kind) {
    case "answered": {
      const who = group ? mentionTag(outcome.userId) : s.ended.you;
      if (outcome.surface === "mcp") return s.ended.answeredByCaller;
      if (outcome.response && outcome.response.action !== "accept") return s.ended.declined(who);
      if (outcome.surface === REPLY_SURFACE) return s.ended.answeredByReply(who);
      return outcome.surface === "websocket" ? s.ended.answeredOnWeb(who) : s.ended.answered(who);
    }
    case "timeout":
      return s.goneLine(s.gone.timeout);
    case "declined":
      return s.ended.declined(group ? mentionTag(outcome.userId) : s.ended.you);
    case "cancelled":
      return s.goneLine(s.gone.cancelled);
  }
}
