import type { AgentCardTarget } from "../agents-api/service.ts";
import type { AskOutcome, AskRegistry, PendingAsk } from "../asks/registry.ts";
import type { FormDraft } from "../cards/form-value.ts";
import type { Card } from "../cards/model.ts";
import { buildProgressCard, type DegradeLevel, type ProgressView } from "../cards/progress.ts";
import { oneLine, truncate } from "../cards/text.ts";
import type { AskSurface, SessionRuns } from "../domain/ports.ts";
import { feishuGroupSessionId } from "../domain/session-id.ts";
import { type ChatType, isTerminal, type RunView } from "../domain/types.ts";
import { describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import type { FeishuStore } from "../store/feishu.ts";
import { strings } from "../strings.ts";
import { type AskTimes, askTimes, deadlineView, formatDeadline, goneNotice } from "./ask-deadline.ts";
import { afterSend, type ReminderState, shouldRemind } from "./ask-reminder.ts";
import { type InboundMessage, parseMessageEvent, stripMentions } from "./events.ts";
import { ExpiryReminders } from "./expiry-reminder.ts";
import { checkCard, provesGone, suggestsGone, tellChatCardGone } from "./gone-cards.ts";
import type { Limiter } from "./limits.ts";
import { DEFAULT_REQUEST_TIMEOUT_MS, FeishuApiError, type FeishuMessenger } from "./messenger.ts";
import type { FeishuMetrics } from "./metrics.ts";
import { CardPublisher } from "./publisher.ts";
import { QueuedCards } from "./queued-cards.ts";
import { isSignInCommand, signInReply } from "./sign-in.ts";
import { routeInbound, threadReply } from "./topics.ts";

/**
 * The Feishu channel: messages in, one live progress card per run out, and the run's questions as forms on
 * that card (seed feishu-card-ask). It is an ask surface: a run with an active card can always be asked.
 */

export interface FeishuChannelOptions {
  messenger: FeishuMessenger;
  runner: SessionRuns;
  registry: AskRegistry;
  store: FeishuStore;
  appLimiter: Limiter;
  logger: Logger;
  now: () => number;
  /** The app id names sessions: `feishu-{appId}-private-{openId}`. */
  appId: string;
  dataDir: string;
  /** Base of the 会话详情 link; without it cards carry none (feishu mode without PUBLIC_URL). */
  publicUrl?: string;
  cardPatchIntervalMs: number;
  /** Send a short message that @-mentions the sender when a form appears (a PATCH notifies nobody). */
  askPing: boolean;
  /** The messenger's per-call timeout: a PATCH left without an answer is confirmed this long after (10 s). */
  requestTimeoutMs?: number;
  /** A personal sign-in link for the session pages, sent on /login in a private chat (sign-in.ts). */
  signInLink?: (userId: string) => { url: string; expiresAt: number };
  /** PATCH outcomes of every progress card, for `/metrics`. */
  metrics?: Pick<FeishuMetrics, "patch">;
  /** Deadlines, reminders and 延长 (issue 16; defaults in ask-deadline.ts). */
  asks?: Partial<AskTimes>;
  /** FEISHU_REPLY_IN_THREAD: a task from a plain group message answers in a new thread under it (topics.ts). */
  replyInThread?: boolean;
}

export interface ActiveCard {
  runId: string;
  sessionId: string;
  chatId: string;
  senderId: string;
  sourceMessageId: string;
  messageId: string | undefined;
  publisher: CardPublisher | undefined;
  run: RunView;
  asks: PendingAsk[];
  /** Whose answer the card waits for is worded by chat type: `等待 @Alice 回答` in a group. */
  chatType: ChatType | undefined;
  /** The @-mention reminder: at most one per card, in groups only (ask-reminder.ts). */
  reminder: ReminderState;
  /** What a submit that did not complete an ask carried, by request id: its form renders pre-filled. */
  drafts: Map<string, FormDraft>;
  /** Recalled, deleted or unknown to the platform: the run was ended and the chat told. */
  gone: boolean;
  /** A task of an outside agent (agents-api): sent to `target`, not replying to a message; names the agent. */
  agent?: { name: string; target: AgentCardTarget["target"] };
  /** Why the run's last question is gone (问题已失效:已超时), once it ended without a card answer. */
  notice?: string;
}

export class FeishuChannel implements AskSurface {
  readonly name = "feishu";
  readonly #o: FeishuChannelOptions;
  readonly #log: Logger;
  readonly #cards = new Map<string, ActiveCard>();
  readonly #byMessage = new Map<string, ActiveCard>();
  readonly #off: (() => void)[] = [];
  readonly #background = new Set<Promise<unknown>>();
  /** Runs whose card is being looked up (one lookup at a time per card). */
  readonly #checking = new Set<string>();
  #botOpenId: string | undefined;
  readonly queuedCards: QueuedCards;
  readonly times: AskTimes;
  readonly #expiry: ExpiryReminders;

  constructor(options: FeishuChannelOptions) {
    this.#o = options;
    this.#log = options.logger.child({ module: "feishu" });
    this.queuedCards = new QueuedCards({ ...options, logger: this.#log });
    this.times = askTimes(options.asks);
    this.#expiry = new ExpiryReminders({
      remindBeforeMs: this.times.remindBeforeMs,
      now: options.now,
      store: options.store,
      pending: (requestId) => options.registry.get(requestId),
      send: (runId, ask) => this.#remindExpiry(runId, ask),
    });
  }

  get options(): FeishuChannelOptions {
    return this.#o;
  }

  async start(): Promise<void> {
    // Through the app limiter like every call: a restart's burst of recovery PATCHes must not make it the 51st.
    const bot = await this.#o.appLimiter(() => this.#o.messenger.botInfo(), { urgent: true });
    this.#botOpenId = bot.openId;
    const { runner, registry } = this.#o;
    this.#off.push(
      runner.on("run_started", (event) => this.#onRunStarted(event)),
      runner.on("run_updated", (run) => this.#onRunUpdated(run)),
      runner.on("queue_changed", ({ sessionId, queued }) => {
        this.#track(this.queuedCards.reorder(queued));
        // A waiting card says a message is queued behind its question (and offers 取消并处理新消息).
        for (const card of this.#cards.values()) if (card.sessionId === sessionId) card.publisher?.request();
      }),
      registry.on("registered", (ask) => this.#onAskRegistered(ask)),
      registry.on("settled", ({ ask, outcome }) => this.#onAskSettled(ask, outcome)),
      registry.on("extended", (ask) => {
        const card = this.#cards.get(ask.runId);
        if (card) this.#expiry.arm(card.runId, ask);
        card?.publisher?.request();
      }),
    );
    this.#log.info({ botOpenId: bot.openId, name: bot.name }, "feishu channel ready");
  }

  /** Waits for every card to land what it has (shutdown, tests). */
  async idle(): Promise<void> {
    while (this.#background.size > 0) await Promise.allSettled([...this.#background]);
    await Promise.all([...this.#cards.values()].map((card) => card.publisher?.idle()));
    while (this.#background.size > 0) await Promise.allSettled([...this.#background]);
  }

  close(): void {
    this.#expiry.close();
    for (const off of this.#off.splice(0)) off();
    for (const card of this.#cards.values()) card.publisher?.stop();
  }

  canReach(target: { runId: string }): boolean {
    const card = this.#cards.get(target.runId);
    return card !== undefined && !card.gone && card.publisher?.stopped !== true;
  }

  activeCard(runId: string): ActiveCard | undefined {
    return this.#cards.get(runId);
  }

  cardByMessage(messageId: string): ActiveCard | undefined {
    return this.#byMessage.get(messageId);
  }

  // inbound ------------------------------------------------------------------------------------------

  /** im.message.receive_v1. Returns at once (Feishu redelivers what is not acknowledged within 3 s). */
  handleMessage(data: Record<string, unknown>): void {
    const parsed = parseMessageEvent(data);
    if (!parsed.ok) {
      this.#log.warn({ error: parsed.error }, "unsupported message event ignored");
      return;
    }
    const message = parsed.value;
    if (message.senderType !== "user") return;
    if (
      message.chatType === "group" &&
      !message.mentions.some((m) => m.openId !== undefined && m.openId === this.#botOpenId)
    ) {
      return; // in groups the bot answers only when @-mentioned
    }
    // De-duplicate by message_id (not event_id), persisted: redeliveries come up to 6 h later. The id is
    // recorded in the same transaction as the run or queue row (runner.accept): a write that fails throws
    // from here, the transport refuses the delivery, and Feishu sends it again with nothing half-recorded.
    const markInbound = () => this.#o.store.markInbound(message.messageId);
    const text = message.rawText === undefined ? undefined : stripMentions(message.rawText, message.mentions);
    if (text === undefined || text === "") {
      if (!markInbound()) return this.#redelivered(message);
      this.#track(
        this.#replyText(message, text === undefined ? strings.feishu.nonText : strings.feishu.emptyText),
      );
      return;
    }
    const { signInLink } = this.#o;
    if (signInLink && isSignInCommand(text)) {
      if (!markInbound()) return this.#redelivered(message);
      const reply = signInReply(
        message.chatType,
        () => signInLink(message.senderOpenId),
        this.#o.now(),
        strings,
      );
      this.#track(this.#replyText(message, reply));
      this.#log.info({ userId: message.senderOpenId, chatType: message.chatType }, "sign-in link requested");
      return;
    }
    const source = { channel: "feishu", messageId: message.messageId, chatId: message.chatId };
    // topics: a message in a topic (or, with FEISHU_REPLY_IN_THREAD, any group message) has its own session.
    const route = routeInbound(message, text, {
      appId: this.#o.appId,
      dataDir: this.#o.dataDir,
      replyInThread: this.#o.replyInThread ?? false,
    });
    const { session } = route;
    if (route.kind === "topic") this.noteChatMember(message.chatId, message.senderOpenId);
    const result = this.#o.runner.accept(
      { session, senderId: message.senderOpenId, text, source },
      markInbound,
    );
    if (result === undefined) return this.#redelivered(message);
    if (result.kind === "queued") {
      const { sessionId } = result.queued;
      this.#track(
        (async () => {
          await this.queuedCards.post(result.queued, result.position, {
            sourceMessageId: message.messageId,
            chatId: message.chatId,
          });
          // While a form is open nothing is PATCHed, so a recalled card would go unnoticed and this message
          // would wait for the ask's timeout: make sure what it waits behind is still there.
          await this.#checkActiveCard(sessionId);
        })(),
      );
    } else if (result.kind === "full") {
      const limit = result.limit;
      this.#track(this.#o.appLimiter(() => this.#replyText(message, strings.feishu.queueFull(limit))));
    }
  }

  #redelivered(message: InboundMessage): void {
    this.#log.info({ messageId: message.messageId }, "redelivered message ignored");
  }

  async #replyText(message: InboundMessage, text: string): Promise<void> {
    // topics: an answer to a message inside a topic stays in the topic.
    const inThread = message.threadId !== undefined;
    await this.#o.messenger.sendText({ chatId: message.chatId }, text, {
      replyTo: message.messageId,
      ...(inThread ? { inThread } : {}),
    });
  }

  /**
   * Someone clicked one of the bot's cards in `chatId`: they are in that chat. Noted under the group's id even
   * when only its topics have sessions (a topic group), since the group's members may view its topics (access.ts).
   */
  noteChatMember(chatId: string, userId: string): void {
    this.#o.runner.noteInChat(feishuGroupSessionId(this.#o.appId, chatId), userId);
  }

  // cards --------------------------------------------------------------------------------------------

  /**
   * An outside agent's task (agents-api): the same card, publisher and asks as a run's, but sent to a chat
   * (no message to reply to) and updated by the agent's calls instead of the runner's events.
   */
  openAgentCard(run: RunView, where: AgentCardTarget): void {
    const chatId = "chatId" in where.target ? where.target.chatId : "";
    const card = this.#newCard(run, { chatId, sourceMessageId: "" });
    card.chatType = where.chatType;
    card.agent = { name: where.agent, target: where.target };
    // A question card is opened with its question already registered: the first send carries the form.
    card.asks = this.#pendingOf(run);
    this.#track(this.#reply(card, { fresh: true }));
  }

  /** After a restart: the recorded card gets the task's state by PATCH; one never recorded is sent again. */
  resumeAgentCard(run: RunView, where: AgentCardTarget): void {
    const row = this.#o.store.cardForRun(run.id);
    if (row?.gone) return;
    if (!row) {
      this.openAgentCard(run, where);
      return;
    }
    const card = this.#newCard(run, { chatId: row.chatId, sourceMessageId: "" });
    card.chatType = where.chatType;
    card.agent = { name: where.agent, target: where.target };
    // Questions the registry still holds (durable asks, restored before this) keep their forms.
    card.asks = this.#pendingOf(run);
    this.#attach(card, row.messageId);
  }

  #pendingOf(run: RunView): PendingAsk[] {
    return this.#o.registry.getPendingForSession(run.sessionId).filter((ask) => ask.runId === run.id);
  }

  updateAgentRun(run: RunView): void {
    const card = this.#cards.get(run.id);
    // In a group the answerer changes with each question: the @-reminder goes to the current one.
    if (card?.agent) card.senderId = run.senderId;
    this.#onRunUpdated(run);
  }

  #onRunStarted(event: {
    run: RunView;
    source: Record<string, unknown> | undefined;
    queueId?: string;
    resumed: boolean;
  }): void {
    const { run } = event;
    if (event.resumed) {
      const row = this.#o.store.cardForRun(run.id);
      if (row) {
        if (row.gone) {
          // Marked gone before the restart, but the run was not ended then: end it now, visibly.
          const card = this.#newCard(run, { chatId: row.chatId, sourceMessageId: row.sourceMessageId });
          card.messageId = row.messageId;
          this.#cardGone(card);
          return;
        }
        const card = this.#newCard(run, { chatId: row.chatId, sourceMessageId: row.sourceMessageId });
        // Questions the run was waiting on are still pending (durable asks): their forms come back with it.
        card.asks = this.#o.registry
          .getPendingForSession(run.sessionId)
          .filter((ask) => ask.runId === run.id);
        this.#track(this.#recover(card, row.messageId));
        return;
      }
      // The process died before the card was recorded (its reply may have reached Feishu or not): reply
      // again. The same uuid gives back the card Feishu created, if it did, within the hour.
      if (event.source?.channel !== "feishu") return;
      this.#log.info({ runId: run.id }, "resumed run had no card recorded; replying again");
    }
    if (event.source?.channel !== "feishu") return;
    const chatId = String(event.source.chatId ?? "");
    const sourceMessageId = String(event.source.messageId ?? "");
    const card = this.#newCard(run, { chatId, sourceMessageId });
    if (event.queueId) {
      this.#track(
        this.queuedCards.started(event.queueId, {
          senderId: run.senderId,
          text: run.input,
          sessionId: run.sessionId,
        }),
      );
    }
    this.#track(this.#reply(card, { fresh: !event.resumed }));
  }

  /**
   * The first PATCH after a restart: a run that was waiting on questions shows their forms again (the asks
   * are durable, the same request ids answer them); any other run shows 任务正在恢复执行 without forms,
   * which wipes forms nobody can answer any more (seed §4.7). Then the publisher takes over.
   */
  async #recover(card: ActiveCard, messageId: string): Promise<void> {
    const recovering =
      card.asks.length > 0
        ? this.render({ ...card, run: { ...card.run, status: "running" } })
        : buildProgressCard(this.#view({ ...card.run, status: "recovering" }, card), []);
    let shown: string | undefined;
    try {
      await this.#o.appLimiter(() => this.#o.messenger.patchCard(messageId, recovering));
      // What the card shows now: the publisher does not send the same content again (one call per card on a
      // restart, not two: 1,000 waiting cards stay within Feishu's 1,000 calls per minute).
      shown = JSON.stringify(recovering);
    } catch (error) {
      card.messageId = messageId;
      if (provesGone(error) || (suggestsGone(error) && (await checkCard(this.#o, messageId)).gone)) {
        this.#cardGone(card);
        return;
      }
      if (error instanceof FeishuApiError && error.messageGone) {
        // Older than 14 days: the card is there but frozen. The run goes on; it can no longer ask on it.
        this.#o.store.markCardGone(card.runId);
        this.#cards.delete(card.runId);
        return;
      }
      this.#log.warn({ err: describeError(error), runId: card.runId }, "recovery card could not be sent");
    }
    this.#attach(card, messageId, shown);
  }

  #newCard(run: RunView, where: { chatId: string; sourceMessageId: string }): ActiveCard {
    const card: ActiveCard = {
      runId: run.id,
      sessionId: run.sessionId,
      chatId: where.chatId,
      senderId: run.senderId,
      sourceMessageId: where.sourceMessageId,
      messageId: undefined,
      publisher: undefined,
      run,
      asks: [],
      chatType: this.#o.runner.getSession(run.sessionId)?.chatType,
      // Once per card, a restart included: a resumed run that asks again is not reminded a second time.
      reminder: this.#o.store.wasReminded(run.id) ? "sent" : "none",
      drafts: new Map(),
      gone: false,
    };
    this.#cards.set(run.id, card);
    return card;
  }

  async #reply(card: ActiveCard, options: { fresh: boolean }): Promise<void> {
    try {
      // The run id as uuid: a retried reply never posts a second card, so retrying is safe.
      // What the new card shows, when that is certain: a first attempt of a fresh run. A repeated uuid (a retry
      // here, or a run resumed after a crash) gives back the card an earlier attempt created, content unknown.
      let attempts = 0;
      let shown: string | undefined;
      // A refused card (230099/230025) is sent again degraded, and the card stays degraded from then on. Same
      // uuid: a refused reply created no message (assumed: the docs say nothing of uuids on failed sends).
      let level: DegradeLevel = 0;
      const degrade = () => {
        if (level === 2) return false;
        level = level === 0 ? 1 : 2;
        return true;
      };
      const sent = await withRetries(
        () =>
          this.#o.appLimiter(
            () => {
              const content = this.render(card, level);
              attempts += 1;
              shown = options.fresh && attempts === 1 ? JSON.stringify(content) : undefined;
              const uuid = `run-${card.runId}`;
              return card.agent
                ? this.#o.messenger.sendCard(card.agent.target, content, { uuid })
                : this.#o.messenger.replyCard(card.sourceMessageId, content, {
                    uuid,
                    ...threadReply(card.sessionId),
                  });
            },
            { urgent: true },
          ),
        degrade,
      );
      this.#o.store.saveCard({
        runId: card.runId,
        sessionId: card.sessionId,
        messageId: sent.messageId,
        chatId: card.chatId,
        senderId: card.senderId,
        sourceMessageId: card.sourceMessageId,
        createdAt: this.#o.now(),
      });
      this.#attach(card, sent.messageId, shown, level);
    } catch (error) {
      this.#log.error({ err: describeError(error), runId: card.runId }, "progress card could not be sent");
      this.#cards.delete(card.runId);
      // Nobody can see the questions: let the waiting tool calls return instead of hanging until timeout.
      for (const ask of card.asks) this.#o.registry.cancel(ask.requestId, strings.askUnavailable);
    }
  }

  /** `shown`: the card's content on the platform now, if known (the reply's), so it is not sent again. */
  #attach(card: ActiveCard, messageId: string, shown?: string, degradeLevel: DegradeLevel = 0): void {
    card.messageId = messageId;
    this.#byMessage.set(messageId, card);
    card.publisher = new CardPublisher({
      messageId,
      messenger: this.#o.messenger,
      shape: () => ({
        // Deadlines and a message queued behind the question are for the reader too (issue 16): they go out
        // even while a form is open.
        key: `${card.run.status}|${card.asks.map((a) => `${a.requestId}@${a.expiresAt}`).join(",")}|${card.asks.length > 0 ? this.#o.runner.queued(card.sessionId).length : 0}`,
        formOpen: card.run.status === "running" && card.asks.length > 0,
      }),
      render: (level) => this.render(card, level),
      degradeLevel,
      intervalMs: this.#o.cardPatchIntervalMs,
      confirmAfterMs: this.#o.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      ...(shown !== undefined ? { shown } : {}),
      appLimiter: this.#o.appLimiter,
      now: this.#o.now,
      logger: this.#log,
      ...(this.#o.metrics ? { metrics: this.#o.metrics } : {}),
      onGone: (error) => {
        if (provesGone(error)) return this.#cardGone(card);
        // 230031: the card is older than 14 days, not removed. Its questions end; the run goes on.
        this.#o.store.markCardGone(card.runId);
        for (const ask of card.asks) this.#o.registry.cancel(ask.requestId, strings.askUnavailable);
      },
    });
    card.publisher.request();
    if (isTerminal(card.run)) this.#forgetWhenLanded(card);
  }

  /** The whole card, from the run and its pending asks as they are now, at the card's degrade level. */
  render(card: ActiveCard, level: DegradeLevel = card.publisher?.degradeLevel ?? 0): Card {
    const asks = card.asks.map((ask) => {
      const draft = card.drafts.get(ask.requestId);
      return draft ? { ...ask, draft } : ask;
    });
    return buildProgressCard(this.#view(card.run, card), asks, { degraded: level });
  }

  #view(run: RunView, card: Pick<ActiveCard, "chatType" | "agent" | "asks" | "notice">): ProgressView {
    return {
      ...deadlineView(
        card.asks,
        this.times,
        this.#o.runner.queued(run.sessionId).length,
        card.notice,
        this.#o.now(),
      ),
      sessionId: run.sessionId,
      runId: run.id,
      senderId: run.senderId,
      title: truncate(oneLine(run.input), 40),
      status: run.status,
      steps: run.steps,
      ...(run.text !== undefined ? { text: run.text } : {}),
      ...(run.error !== undefined ? { error: run.error } : {}),
      startedAt: run.startedAt,
      ...(run.endedAt !== undefined ? { endedAt: run.endedAt } : {}),
      // Each card links to its own run: an old card keeps showing the task it was sent for. No link without a
      // PUBLIC_URL in feishu mode: a localhost link on a real tenant is dead.
      ...(card.agent ? { agent: card.agent.name } : {}),
      // An agent's task links to its session page too (agents-api/sessions.ts shows it there).
      ...(this.#o.publicUrl !== undefined
        ? {
            detailsUrl: `${this.#o.publicUrl}/sessions/${encodeURIComponent(run.sessionId)}/runs/${encodeURIComponent(run.id)}`,
          }
        : {}),
      ...(card.chatType === "group" ? { chatType: "group" as const } : {}),
    };
  }

  #onRunUpdated(run: RunView): void {
    const card = this.#cards.get(run.id);
    if (!card) return;
    card.run = run;
    card.publisher?.request();
    if (isTerminal(run) && card.publisher) this.#forgetWhenLanded(card);
  }

  #forgetWhenLanded(card: ActiveCard): void {
    const publisher = card.publisher;
    if (!publisher) return;
    this.#track(
      publisher.idle().then(() => {
        if (!isTerminal(card.run) || this.#cards.get(card.runId) !== card) return;
        this.#cards.delete(card.runId);
        if (card.messageId) this.#byMessage.delete(card.messageId);
      }),
    );
  }

  // cards that are gone ---------------------------------------------------------------------------------

  /** Looks the active run's card up on the platform; a card that is gone ends its run (see gone-cards.ts). */
  async #checkActiveCard(sessionId: string): Promise<void> {
    const run = this.#o.runner.activeRun(sessionId);
    const card = run === undefined ? undefined : this.#cards.get(run.id);
    // Without an open form the card is PATCHed as the run goes on, and a PATCH finds out by itself.
    if (!card?.messageId || card.gone || card.asks.length === 0 || this.#checking.has(card.runId)) return;
    this.#checking.add(card.runId);
    try {
      const { gone, error } = await checkCard(this.#o, card.messageId);
      if (gone) this.#cardGone(card);
      else if (error)
        this.#log.info(
          { runId: card.runId, code: error.feishuCode, err: describeError(error) },
          "could not look the progress card up; counting it as present",
        );
    } finally {
      this.#checking.delete(card.runId);
    }
  }

  /**
   * The card is gone for good: publishing stops, its questions end, the run fails (so the chat's queue
   * moves at once instead of after the ask timeout), and a new reply in the chat says what happened.
   */
  #cardGone(card: ActiveCard): void {
    if (card.gone) return;
    card.gone = true;
    card.publisher?.stop();
    this.#o.store.markCardGone(card.runId);
    this.#log.warn({ runId: card.runId, messageId: card.messageId }, "progress card is gone; ending its run");
    // Desktop clients and the agent learn why the question ended.
    for (const ask of [...card.asks]) this.#o.registry.cancel(ask.requestId, strings.feishu.cardGoneError);
    this.#cards.delete(card.runId);
    if (card.messageId) this.#byMessage.delete(card.messageId);
    const ended = this.#o.runner.abandon(card.runId, strings.feishu.cardGoneError);
    if (ended.ok) this.#track(tellChatCardGone(this.#o, card));
  }

  // asks on the card -----------------------------------------------------------------------------------

  #onAskRegistered(ask: PendingAsk): void {
    const card = this.#cards.get(ask.runId);
    if (!card) return;
    card.asks.push(ask);
    card.notice = undefined;
    this.#expiry.arm(card.runId, ask);
    card.publisher?.request();
    if (shouldRemind({ enabled: this.#o.askPing, chatType: card.chatType, state: card.reminder })) {
      card.reminder = "sending";
      this.#track(this.#remind(card));
    }
  }

  #onAskSettled(ask: PendingAsk, outcome: AskOutcome): void {
    this.#expiry.disarm(ask.requestId);
    const card = this.#cards.get(ask.runId);
    if (!card) return;
    card.asks = card.asks.filter((a) => a.requestId !== ask.requestId);
    card.drafts.delete(ask.requestId);
    card.notice = goneNotice(outcome, strings);
    card.publisher?.request();
  }

  /**
   * A PATCH notifies nobody: in a group, one short new message @-mentions the sender (peer-survey I1). Under
   * load it waits for the app-wide budget; if every question was answered meanwhile, it is not sent at all.
   * It is never recalled: a recall leaves 撤回了一条消息 in the chat.
   */
  async #remind(card: ActiveCard): Promise<void> {
    let outcome: "sent" | "skipped" | "failed" = "failed";
    try {
      outcome = await this.#o.appLimiter(async (slot) => {
        const questions = card.asks.reduce((n, ask) => n + ask.questions.length, 0);
        if (questions === 0) {
          slot.unused();
          return "skipped" as const;
        }
        await this.#o.messenger.sendText({ chatId: card.chatId }, strings.feishu.askPing(questions), {
          mentionOpenIds: [card.senderId],
          replyTo: card.messageId ?? card.sourceMessageId,
          ...threadReply(card.sessionId),
        });
        return "sent" as const;
      });
    } catch (error) {
      this.#log.warn({ err: describeError(error), runId: card.runId }, "ask reminder failed");
    }
    card.reminder = afterSend(outcome);
    if (outcome === "sent") this.#o.store.markReminded(card.runId, this.#o.now());
  }

  /**
   * The reminder before a deadline (issue 16): unlike the first ping it goes to private chats too, as a
   * short message, and in groups @-mentions the sender; one per deadline (ask-deadline.ts says why).
   */
  #remindExpiry(runId: string, ask: PendingAsk): void {
    const card = this.#cards.get(runId);
    if (!card) return;
    const text = strings.asks.remind(
      ask.questions.length,
      formatDeadline(ask.expiresAt, this.times.timeZone),
    );
    const group = card.chatType === "group";
    this.#track(
      this.#o.appLimiter(() =>
        this.#o.messenger.sendText({ chatId: card.chatId }, text, {
          ...(group ? { mentionOpenIds: [card.senderId] } : {}),
          replyTo: card.messageId ?? card.sourceMessageId,
          ...threadReply(card.sessionId),
        }),
      ),
    );
  }

  /** Background work is tracked so nothing is lost silently and shutdown can wait for it. */
  #track(work: Promise<unknown>): void {
    const tracked = work.catch((error: unknown) =>
      this.#log.error({ err: describeError(error) }, "feishu background work failed"),
    );
    this.#background.add(tracked);
    void tracked.finally(() => this.#background.delete(tracked));
  }
}

/**
 * A task without its card cannot show progress or ask anything: a rate-limited or failed reply is retried a
 * few times (honouring Feishu's reset header) before the task is given up as unreachable.
 */
async function withRetries<T>(send: () => Promise<T>, degrade: () => boolean, attempts = 4): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await send();
    } catch (error) {
      // Not counted as an attempt: at most two re-renders, each plainer, then the refusal is final.
      if (error instanceof FeishuApiError && error.cardRefused && degrade()) {
        attempt -= 1;
        continue;
      }
      const retryable = error instanceof FeishuApiError && (error.rateLimited || error.transient);
      if (!retryable || attempt >= attempts) throw error;
      const waitMs = error.retryAfterMs ?? 500 * 2 ** (attempt - 1);
      await new Promise((resolve) => setTimeout(resolve, waitMs));
    }
  }
}
