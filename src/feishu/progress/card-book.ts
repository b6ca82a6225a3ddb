import type { PendingAsk } from "../../asks/pending.ts";
import type { AskRegistry } from "../../asks/registry.ts";
import type { GoneQuestion } from "../../cards/ask-words.ts";
import type { FormDraft } from "../../cards/form-value.ts";
import type { Card } from "../../cards/model.ts";
import { buildProgressCard } from "../../cards/progress.ts";
import type { Rendering } from "../../cards/progress-body.ts";
import type { ProgressView } from "../../cards/progress-view.ts";
import type { SessionRuns } from "../../domain/ports.ts";
import type { CardPlacement, RunFeed } from "../../domain/run-feed.ts";
import { type ChatType, isTerminal, type RunView, type SessionTopic } from "../../domain/types.ts";
import { oneLine, truncate } from "../../util/text.ts";
import { type AskTimes, deadlineView } from "../ask-deadline.ts";
import type { ReminderState } from "../ask-reminder.ts";
import type { CardPublisher, CardShape } from "../publisher.ts";

/**
 * The card book: which progress card shows which run, and what a card shows. Every render reads the pending
 * asks from the registry and the run from its feed's memory while it is active here; otherwise (a run that
 * ended, or one this process only shows) from the latest state the feed announced, kept on the card
 * (`run`, refreshed by every run event). The rest belongs to the card itself (its message, publisher, drafts,
 * reminder, whether it is gone). Rendering reads nothing from the database: a card is drawn within a
 * callback's 3 s whatever the database does.
 */

export interface ActiveCard {
  runId: string;
  /** The run as last announced (run_started, run_updated, or read when the card was found again). */
  run: RunView;
  sessionId: string;
  chatId: string;
  senderId: string;
  sourceMessageId: string;
  messageId: string | undefined;
  publisher: CardPublisher | undefined;
  /** Whose answer the card waits for is worded by chat type: `等待 @Alice 回答` in a group. */
  chatType: ChatType | undefined;
  /** The topic its session is, as recorded on the session: every reply about the card goes into it (topics.ts). */
  topic: SessionTopic | undefined;
  /** The @-mention reminder: at most one per card, in groups only (ask-reminder.ts). */
  reminder: ReminderState;
  /** What a submit that did not complete an ask carried, by request id: its form renders pre-filled. */
  drafts: Map<string, FormDraft>;
  /** Recalled, deleted or unknown to the platform: the run was ended and the chat told. */
  gone: boolean;
  /**
   * A task of an outside agent (its run names the agent): its card names the agent and spends from the
   * agents' budget; `to` is where it is sent (the feed's `send` placement), not replying to a message.
   */
  agent?: { name: string; to?: SendTo };
  /** Why the run's last question is gone, once it ended without a card answer; each language words it. */
  notice?: GoneQuestion;
  /** The run asked something on this card (a reply after its question ended is told so: card-replies.ts). */
  asked?: true;
}

/** Where a card that replies to no message is sent: a person or a group. */
export type SendTo = Extract<CardPlacement, { kind: "send" }>["to"];

export interface CardBookDeps {
  /** Every run, the bot's and outside agents' (core.runs): what a card shows. */
  runs: Pick<RunFeed, "activeRun">;
  /** The bot's queue, counted on a waiting card (取消并处理新消息). */
  runner: Pick<SessionRuns, "queued">;
  registry: Pick<AskRegistry, "getPendingForSession">;
  times: AskTimes;
  now: () => number;
  /** CARD_FOOTER (default on): ended cards show the run's usage (tokens, model) where its agent reported it. */
  footer?: boolean;
  /**
   * Base of the 会话详情 link, asked at each render (PORT=0 knows its port only after listen); without it
   * cards carry none (feishu mode without PUBLIC_URL).
   */
  publicUrl?: () => string;
}

export class CardBook {
  readonly #deps: CardBookDeps;
  readonly #cards = new Map<string, ActiveCard>();
  readonly #byMessage = new Map<string, ActiveCard>();
  /** How many messages wait in each session's queue, as the last queue event said (or a read at open). */
  readonly #queued = new Map<string, number>();

  constructor(deps: CardBookDeps) {
    this.#deps = deps;
  }

  /**
   * A new card for `run` in `where.chatId` (replying to `where.sourceMessageId`, if any). `reminded`: the run's
   * card had its @-mention reminder before a restart (store/feishu.ts wasReminded; a new run's never did).
   * `session`: its chat type and topic, as the run's start announced them (or as read when found again).
   */
  open(
    run: RunView,
    where: { chatId: string; sourceMessageId: string; reminded?: boolean },
    session: { chatType?: ChatType | "none"; topic?: SessionTopic } | undefined,
  ) {
    const card = this.#card(run, where, session);
    this.#cards.set(run.id, card);
    if (!this.#queued.has(run.sessionId)) this.#countQueue(card);
    return card;
  }

  /**
   * A card of a run another instance runs (several instances), as the rows have it, kept nowhere here: a click
   * on it is answered with it (card-actions.ts), and its own instance stays its only writer.
   */
  detached(
    run: RunView,
    where: { chatId: string; sourceMessageId: string; messageId: string },
    session: { chatType?: ChatType | "none"; topic?: SessionTopic } | undefined,
  ): ActiveCard {
    return { ...this.#card(run, where, session), messageId: where.messageId };
  }

  #card(
    run: RunView,
    where: { chatId: string; sourceMessageId: string; reminded?: boolean },
    session: { chatType?: ChatType | "none"; topic?: SessionTopic } | undefined,
  ): ActiveCard {
    return {
      runId: run.id,
      run,
      sessionId: run.sessionId,
      chatId: where.chatId,
      senderId: run.senderId,
      sourceMessageId: where.sourceMessageId,
      messageId: undefined,
      publisher: undefined,
      chatType: session?.chatType === "none" ? undefined : session?.chatType,
      topic: session?.topic,
      // Once per card, a restart included: a resumed run that asks again is not reminded a second time.
      reminder: where.reminded ? "sent" : "none",
      drafts: new Map(),
      gone: false,
      ...(run.agent !== undefined ? { agent: { name: run.agent } } : {}),
    };
  }

  /** The queue of a card's session read once (after a restart no queue event has said it yet). */
  #countQueue(card: ActiveCard): void {
    this.#deps.runner.queued(card.sessionId).then(
      (queued) => {
        // A queue event since is newer than this read.
        if (this.#queued.has(card.sessionId) || queued.length === 0) return;
        this.queueChanged(card.sessionId, queued.length);
        card.publisher?.request();
      },
      // Unread, the card shows no queue until the next queue event: nothing else depends on it.
      () => undefined,
    );
  }

  get(runId: string): ActiveCard | undefined {
    return this.#cards.get(runId);
  }

  byMessage(messageId: string): ActiveCard | undefined {
    return this.#byMessage.get(messageId);
  }

  all(): IterableIterator<ActiveCard> {
    return this.#cards.values();
  }

  /** The card's message on the platform is known: clicks on it find the card. */
  placed(card: ActiveCard, messageId: string): void {
    card.messageId = messageId;
    this.#byMessage.set(messageId, card);
  }

  /** The card is no longer live (its run ended and landed, or it is gone); only this card, not a newer one. */
  forget(card: ActiveCard): void {
    if (this.#cards.get(card.runId) === card) this.#cards.delete(card.runId);
    if (card.messageId && this.#byMessage.get(card.messageId) === card)
      this.#byMessage.delete(card.messageId);
  }

  /** The run as it is now: the live state while it runs here, else as last announced. */
  runOf(card: ActiveCard): RunView {
    const active = this.#deps.runs.activeRun(card.sessionId);
    return active?.id === card.runId ? active : card.run;
  }

  /** The run changed (a run event): what its card shows from now on. */
  runChanged(run: RunView): ActiveCard | undefined {
    const card = this.#cards.get(run.id);
    if (card) card.run = run;
    return card;
  }

  /** A session's queue changed: how many wait in it now. */
  queueChanged(sessionId: string, count: number): void {
    if (count > 0) this.#queued.set(sessionId, count);
    else this.#queued.delete(sessionId);
  }

  #queuedIn(sessionId: string): number {
    return this.#queued.get(sessionId) ?? 0;
  }

  /** The run's pending questions, oldest first, as the registry holds them now. */
  asksOf(card: Pick<ActiveCard, "sessionId" | "runId">): PendingAsk[] {
    return this.#deps.registry.getPendingForSession(card.sessionId).filter((ask) => ask.runId === card.runId);
  }

  /**
   * What the publisher compares to decide whether a change must go out now. Deadlines and a message queued
   * behind the question are for the reader too (issue 16): they go out even while a form is open.
   */
  shape(card: ActiveCard): CardShape {
    const run = this.runOf(card);
    const asks = this.asksOf(card);
    const queued = asks.length > 0 ? this.#queuedIn(card.sessionId) : 0;
    return {
      key: `${run.status}|${asks.map((a) => `${a.requestId}@${a.expiresAt}`).join(",")}|${queued}`,
      formOpen: run.status === "running" && asks.length > 0,
      final: isTerminal(run),
    };
  }

  /**
   * The whole card, from the run and its pending asks as they are now, at the card's degrade level and
   * redaction (its publisher's, unless told).
   */
  render(
    card: ActiveCard,
    rung: Rendering = {
      level: card.publisher?.degradeLevel ?? 0,
      redaction: card.publisher?.redaction ?? "none",
    },
    status?: RunView["status"],
  ) {
    const asks = this.asksOf(card);
    // A question shown on the card, however it got there (a card sent after its first ask included).
    if (asks.some((ask) => !ask.elicitation)) card.asked = true;
    const withDrafts = asks.map((ask) => {
      const draft = card.drafts.get(ask.requestId);
      return draft ? { ...ask, draft } : ask;
    });
    const run = this.runOf(card);
    return buildProgressCard(this.#view(status ? { ...run, status } : run, card, asks), withDrafts, {
      degraded: rung.level,
      redaction: rung.redaction,
    });
  }

  /** 任务正在恢复执行, without forms: what a restarted run that waits on nothing shows first (seed §4.7). */
  recovering(card: ActiveCard): Card {
    return buildProgressCard(this.#view({ ...this.runOf(card), status: "recovering" }, card, []), []);
  }

  #view(run: RunView, card: ActiveCard, asks: PendingAsk[]): ProgressView {
    const { publicUrl } = this.#deps;
    return {
      ...deadlineView(asks, this.#deps.times, this.#queuedIn(run.sessionId), card.notice, this.#deps.now()),
      sessionId: run.sessionId,
      runId: run.id,
      senderId: run.senderId,
      title: truncate(oneLine(run.input), 40),
      status: run.status,
      steps: run.steps,
      ...(run.text !== undefined ? { text: run.text } : {}),
      ...(run.error !== undefined ? { error: run.error } : {}),
      ...(run.errorWords !== undefined ? { errorWords: run.errorWords } : {}),
      startedAt: run.startedAt,
      ...(run.endedAt !== undefined ? { endedAt: run.endedAt } : {}),
      ...(card.agent ? { agent: card.agent.name } : {}),
      // Each card links to its own run: an old card keeps showing the task it was sent for. No link without a
      // PUBLIC_URL in feishu mode: a localhost link on a real tenant is dead. An agent's task links to its
      // session page too (agents-api/sessions.ts shows it there).
      ...(publicUrl !== undefined
        ? {
            detailsUrl: `${publicUrl()}/sessions/${encodeURIComponent(run.sessionId)}/runs/${encodeURIComponent(run.id)}`,
          }
        : {}),
      ...(card.chatType === "group" ? { chatType: "group" as const } : {}),
      // The channel takes text replies quoting its cards as answers (card-replies.ts).
      replyToAnswer: true,
      ...(this.#deps.footer !== false && run.usage !== undefined ? { usage: run.usage } : {}),
    };
  }
}
