import type { AskOutcome, PendingAsk } from "../../asks/pending.ts";
import type { AskRegistry } from "../../asks/registry.ts";
import { REPLY_SURFACE } from "../../asks/reply-answer.ts";
import { describeError } from "../../errors.ts";
import type { Logger } from "../../logger.ts";
import { CARD_PATCHABLE_MS, type FeishuStore } from "../../store/feishu.ts";
import type { RetriedWrites } from "../../store/write-retry.ts";
import { strings } from "../../strings/index.ts";
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
 * Which message points at which questions is recorded (`ask_pings`, store/feishu.ts) once it landed, and
 * its row goes once the message was edited. On start (`recover`) the rows come back: a message whose
 * questions are still pending is edited when they end, as before the restart; one whose questions ended
 * while the bot was down (expired, answered through another instance) is edited then.
 */
export interface PingDeps {
  book: CardBook;
  registry: Pick<AskRegistry, "get" | "state">;
  messenger: Pick<FeishuMessenger, "sendText" | "editText">;
  store: Pick<FeishuStore, "markReminded" | "wasReminded" | "savePing" | "pingsSince" | "deletePing">;
  /** The reminder's mark and the messages' records: a write the database refuses is retried (it was sent). */
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
  kind: "ping" | "reminder";
  runId: string;
  /** The asks it is about that are still open; once none is, the message is edited. */
  open: Set<string>;
  /** Every ask it is about, ended ones too: what its record names. */
  asks: Set<string>;
  group: boolean;
  sentAt: number;
  /** The last of its asks to end, for the edit of a message still on its way. */
  ended?: AskOutcome;
}

/** How long after sending a ping is still worth editing after a restart: as long as a card can be PATCHed. */
const PING_EDITABLE_MS = CARD_PATCHABLE_MS;

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
    const ping = this.#pings.get(card.runId);
    if (ping) {
      ping.open.add(ask.requestId);
      ping.asks.add(ask.requestId);
      this.#record(ping);
    }
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

  /**
   * A message that arrived on the platform: recorded, so that a restart still edits it; one whose questions
   * ended meanwhile is edited at once.
   */
  #landed(pointer: Pointer, messageId: string, drop: () => void): void {
    pointer.messageId = messageId;
    this.#record(pointer);
    if (pointer.open.size > 0 || pointer.ended === undefined) return;
    drop();
    this.#edit(messageId, endedText(pointer.ended, pointer.group));
  }

  /** The message's record, with every ask it points at now (the sent message is there whatever the database says). */
  #record(pointer: Pointer): void {
    const { messageId } = pointer;
    if (messageId === undefined) return;
    const { writes, store } = this.#deps;
    const row = {
      messageId,
      kind: pointer.kind,
      runId: pointer.runId,
      requestIds: [...pointer.asks],
      group: pointer.group,
      sentAt: pointer.sentAt,
    };
    void writes.write(`ping:${messageId}`, "ping record", () => store.savePing(row));
  }

  /** Edited (or refused for good): its record goes, so a restart leaves it alone. A kill before keeps it. */
  #edit(messageId: string, text: string): void {
    const { appLimiter, messenger, log, background, writes, store } = this.#deps;
    background.track(
      appLimiter(() => messenger.editText(messageId, text))
        .catch((error: unknown) => {
          // Best effort: the message keeps its old words (too old to edit, recalled by someone, the budget).
          log.info({ err: describeError(error), messageId }, "could not edit an ended question's ping");
        })
        .then(() => {
          void writes.write(`ping:${messageId}`, "ended ping record", () => store.deletePing(messageId));
        }),
    );
  }

  /**
   * On start: the pings and reminders sent before the restart point at their questions again. A message
   * whose questions are all over (expired while the bot was down, answered through another instance, or
   * before the edit landed) is edited now, saying how the last of them ended; the others wait for theirs.
   * Returns how many were edited now.
   */
  async recover(): Promise<number> {
    const { store, registry, now, log } = this.#deps;
    let rows: Awaited<ReturnType<FeishuStore["pingsSince"]>>;
    try {
      rows = await store.pingsSince(now() - PING_EDITABLE_MS);
    } catch (error) {
      log.warn({ err: describeError(error) }, "the pings sent before the restart could not be read");
      return 0;
    }
    // Every pointer with an open question is in place before the first read below: a settle that comes
    // while the states are read finds its pointer (one that came while the rows were read left its ask out
    // of the registry, so its message is among the ended).
    const ended: typeof rows = [];
    for (const row of rows) {
      const pointer: Pointer = {
        messageId: row.messageId,
        kind: row.kind,
        runId: row.runId,
        open: new Set(row.requestIds.filter((requestId) => registry.get(requestId) !== undefined)),
        asks: new Set(row.requestIds),
        group: row.group,
        sentAt: row.sentAt,
      };
      if (pointer.open.size === 0) ended.push(row);
      else if (row.kind === "ping") this.#pings.set(row.runId, pointer);
      else
        for (const requestId of pointer.open)
          this.#reminders.set(requestId, [...(this.#reminders.get(requestId) ?? []), pointer]);
    }
    let edited = 0;
    for (const row of ended) {
      let last: { outcome: AskOutcome; at: number } | undefined;
      for (const requestId of row.requestIds) {
        // Ended; one the rows do not know (an outside agent's elicitation lives in memory only) is gone.
        const state = await registry.state(requestId);
        const outcome = state?.outcome ?? { kind: "cancelled" as const, reason: "gone" };
        const at = state?.settledAt ?? 0;
        if (!last || at >= last.at) last = { outcome, at };
      }
      if (last) {
        this.#edit(row.messageId, endedText(last.outcome, row.group));
        edited += 1;
      } else
        void this.#deps.writes.write(`ping:${row.messageId}`, "ended ping record", () =>
          store.deletePing(row.messageId),
        );
    }
    if (edited > 0)
      log.info({ messages: edited }, "editing pings whose questions ended while the bot was down");
    return edited;
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
    const pointer: Pointer = {
      messageId: undefined,
      kind: "ping",
      runId: card.runId,
      open: new Set(),
      asks: new Set(),
      group: true,
      sentAt: now(),
    };
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
        for (const ask of asks) {
          pointer.open.add(ask.requestId);
          pointer.asks.add(ask.requestId);
        }
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
      void writes.write(`reminded:${card.runId}`, "reminder mark", () => store.markReminded(card.runId, at));
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
    const pointer: Pointer = {
      messageId: undefined,
      kind: "reminder",
      runId,
      open: new Set([ask.requestId]),
      asks: new Set([ask.requestId]),
      group,
      sentAt: this.#deps.now(),
    };
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
