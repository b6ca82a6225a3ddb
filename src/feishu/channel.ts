import type { Card } from "../cards/model.ts";
import type { AskSurface } from "../domain/ports.ts";
import { feishuGroupSessionId } from "../domain/session-id.ts";
import type { SessionInfo } from "../domain/types.ts";
import type { Logger } from "../logger.ts";
import type { StoreSql } from "../store/sql.ts";
import { RetriedWrites } from "../store/write-retry.ts";
import { strings } from "../strings/index.ts";
import { allowedBy, feishuSource, ownsPlacement } from "./apps.ts";
import { type AskTimes, askTimes } from "./ask-deadline.ts";
import { botIdentity } from "./bot-identity.ts";
import { answerByReply, cardRepliedTo, isAboutQuestion } from "./card-replies.ts";
import type { FeishuChannelOptions } from "./channel-options.ts";
import { type InboundMessage, parseMessageEvent, stripMentions } from "./events.ts";
import { PeopleNames } from "./people.ts";
import { Background } from "./progress/background.ts";
import { type ActiveCard, CardBook } from "./progress/card-book.ts";
import { CardLifecycle, type RepairScope } from "./progress/lifecycle.ts";
import { Pings } from "./progress/pings.ts";
import { RemoteAnswers } from "./progress/remote-answers.ts";
import { QueuedCards } from "./queued-cards.ts";
import { isSignInCommand, signInReply } from "./sign-in.ts";
import { withThreadFallback } from "./thread-fallback.ts";
import { type InboundRoute, knownTopicIn, routeInbound, threadReply } from "./topics.ts";

export type { ActiveCard } from "./progress/card-book.ts";

/**
 * The Feishu channel: messages in, one live progress card per run out, and the run's questions as forms on
 * that card (seed feishu-card-ask). It is an ask surface: a run with an active card can always be asked.
 *
 * The facade that wires the parts and takes the inbound messages: the card book (progress/card-book.ts: which
 * card shows which run), the lifecycle (progress/lifecycle.ts, placement.ts: send, publish, forget, gone), the
 * pings (progress/pings.ts: @-mentions, reminders), the queued-message cards (queued-cards.ts) and, with several
 * instances, the clicks other instances take (progress/remote-answers.ts). Built by runtime.ts.
 */

export class FeishuChannel implements AskSurface {
  readonly name = "feishu";
  readonly #o: FeishuChannelOptions;
  readonly #log: Logger;
  readonly #off: (() => void)[] = [];
  readonly #background: Background;
  readonly #book: CardBook;
  readonly #pings: Pings;
  readonly #lifecycle: CardLifecycle;
  /** Card records the database refused (a card sent is shown whatever the database says): retried. */
  readonly #writes: RetriedWrites;
  readonly remote: RemoteAnswers | undefined;
  #botOpenId: string | undefined;
  readonly queuedCards: QueuedCards;
  readonly times: AskTimes;
  /** Names of the people who ask in groups, for the toasts that say who may answer (people.ts). */
  readonly names: PeopleNames;

  constructor(given: FeishuChannelOptions) {
    const log = given.logger.child({ module: "feishu" });
    // Every part sends through this: a reply the platform refuses in a thread is sent once more in the chat.
    const options = { ...given, messenger: withThreadFallback(given.messenger, log) };
    this.#o = options;
    this.#log = log;
    this.#background = new Background(log);
    this.#writes = new RetriedWrites(log);
    this.queuedCards = new QueuedCards({ ...options, logger: log });
    this.times = askTimes(options.asks);
    const { runner, runs, registry, store, messenger, appLimiter, now } = options;
    this.names = new PeopleNames({
      messenger,
      appLimiter,
      log,
      now,
      track: (work) => this.#background.track(work),
    });
    this.#book = new CardBook({
      runs,
      runner,
      registry,
      times: this.times,
      now,
      footer: options.cardFooter ?? true,
      ...(options.publicUrl !== undefined ? { publicUrl: options.publicUrl } : {}),
    });
    const background = this.#background;
    const book = this.#book;
    const writes = this.#writes;
    this.#pings = new Pings({
      writes,
      book,
      registry,
      messenger,
      store,
      appLimiter,
      times: this.times,
      askPing: options.askPing,
      now,
      log,
      background,
    });
    // The options as given (the messenger with its thread fallback), and the parts built here.
    this.#lifecycle = new CardLifecycle({
      ...options,
      book,
      times: this.times,
      writes,
      pings: this.#pings,
      background,
      queuedCards: this.queuedCards,
      log,
    });
    this.remote = options.callbacks && new RemoteAnswers({ ...options, book, relay: options.callbacks });
  }

  async start(): Promise<void> {
    const identity = { ...this.#o, log: this.#log, background: this.#background };
    const bot = await botIdentity(identity, (fresh) => (this.#botOpenId = fresh.openId));
    this.#botOpenId = bot.openId;
    const { runs, registry } = this.#o;
    const lifecycle = this.#lifecycle;
    // Several apps, one feed: each app's channel takes the runs its app received (apps.ts), no other's.
    const me = { appId: this.#o.appId, first: this.#o.firstApp ?? true };
    this.#off.push(
      runs.on("run_started", (event) => {
        if (ownsPlacement(me, event.card)) lifecycle.runStarted(event);
      }),
      runs.on("run_updated", (run) => lifecycle.runUpdated(run)),
      runs.on("queue_changed", ({ sessionId, queued }) => {
        this.#book.queueChanged(sessionId, queued.length);
        this.#background.track(this.queuedCards.reorder(queued));
        // A waiting card says a message is queued behind its question (and offers 取消并处理新消息).
        for (const card of this.#book.all()) if (card.sessionId === sessionId) card.publisher?.request();
      }),
      registry.on("registered", (ask) => lifecycle.askRegistered(ask)),
      registry.on("settled", ({ ask, outcome }) => lifecycle.askSettled(ask, outcome)),
      registry.on("extended", (ask) => lifecycle.askExtended(ask)),
    );
    // In the same turn as the subscriptions, so no settle falls between: the pings sent before a restart
    // point at their questions again (pings.ts places every pointer before its first read), and those whose
    // questions ended while the bot was down are edited.
    this.#background.track(this.#pings.recover());
    this.#log.debug({ botOpenId: bot.openId, name: bot.name }, "feishu channel ready");
  }

  /**
   * Cards a kill left without their run's final state get it now (one PATCH each, paced by the limiter), once
   * the service listens: a card renders its 会话详情 link, and with PORT=0 the URL is known only then.
   */
  async repairEnded(only?: RepairScope): Promise<number> {
    const repaired = await this.#lifecycle.repairEnded(only);
    if (repaired > 0) this.#log.info({ cards: repaired }, "sending final states a restart left unsent");
    return repaired;
  }

  /** Waits for every card to land what it has (shutdown, tests). */
  async idle(): Promise<void> {
    await this.#background.idle();
    await Promise.all([...this.#book.all()].map((card) => card.publisher?.idle()));
    await this.#background.idle();
  }

  /** Resolves once the records still waiting had their last try (the database may be closed after). */
  async close(): Promise<void> {
    this.#pings.close();
    this.remote?.close();
    for (const off of this.#off.splice(0)) off();
    // Every publisher, not only the live cards': a forgotten card's late retry must not fire after close.
    this.#lifecycle.close();
    await this.#writes.close();
  }

  canReach(target: { runId: string }): boolean {
    const card = this.#book.get(target.runId);
    return card !== undefined && !card.gone && card.publisher?.stopped !== true;
  }

  activeCard(runId: string): ActiveCard | undefined {
    return this.#book.get(runId);
  }

  cardByMessage(messageId: string): ActiveCard | undefined {
    return this.#book.byMessage(messageId);
  }

  /** The whole card as it is now, at the card's degrade level and redaction (a callback's answer carries it). */
  render(card: ActiveCard): Card {
    return this.#book.render(card);
  }

  // inbound ------------------------------------------------------------------------------------------

  /**
   * im.message.receive_v1. Resolves once the message is recorded (Feishu redelivers what is not acknowledged
   * within 3 s); what it starts goes on in the background. Rejects when it could not be recorded.
   */
  async handleMessage(data: Record<string, unknown>): Promise<void> {
    const parsed = parseMessageEvent(data);
    if (!parsed.ok) return this.#log.warn({ error: parsed.error }, "unsupported message event ignored");
    const message = parsed.value;
    if (message.senderType !== "user") return;
    // A reply quoting a card that asks something is for the bot, @-mention or not (card-replies.ts).
    const repliesTo =
      cardRepliedTo(this.#book, message) ?? (await this.remote?.repliedTo(message, this.#log));
    const replyDeps = {
      book: this.#book,
      registry: this.#o.registry,
      nameOf: (id: string) => this.nameOf(id),
    };
    const aboutQuestion = repliesTo !== undefined && isAboutQuestion(replyDeps, repliesTo);
    const addressed =
      message.chatType !== "group" ||
      message.mentions.some((m) => m.openId !== undefined && m.openId === this.#botOpenId);
    if (!addressed && !aboutQuestion) return; // in groups the bot answers only when @-mentioned
    if (!allowedBy(this.#o.allow, message)) return this.#notAllowed(message);
    // Someone else in the group may click this sender's question: learn the name its refusal will say.
    if (message.chatType === "group") this.names.learn(message.senderOpenId);
    // De-duplicate by message_id (not event_id), persisted: redeliveries come up to 6 h later. The id is
    // recorded in the same transaction as the run or queue row (runner.accept): a write that fails throws
    // from here, the transport refuses the delivery, and Feishu sends it again with nothing half-recorded.
    // The claim: one insert, inside the runner's transaction when it starts something (`tx`), else alone.
    const markInbound = (tx?: StoreSql) => this.#o.store.markInbound(message.messageId, tx);
    const text = message.rawText === undefined ? undefined : stripMentions(message.rawText, message.mentions);
    // Where the message belongs, before anything is answered: a message in a topic (or, with
    // FEISHU_REPLY_IN_THREAD, any group message) has its own session (topics.ts), and every reply to it —
    // the texts below included — goes where that session's replies go.
    const route = routeInbound(message, text ?? "", {
      appId: this.#o.appId,
      dataDir: this.#o.dataDir,
      ...(this.#o.workspacesDir !== undefined ? { workspacesDir: this.#o.workspacesDir } : {}),
      replyInThread: this.#o.replyInThread ?? false,
      // A reply in a topic that came without its thread_id (facts: topic groups) finds the topic's session.
      knownTopic: await knownTopicIn(this.#o.runner, this.#o.appId, message),
    });
    const replyText = (reply: string) => this.#replyText(message, route.session, reply);
    if (!addressed && (text === undefined || text === "")) return;
    if (text === undefined || text === "") {
      if (!(await markInbound())) return this.#redelivered(message);
      this.#background.track(
        replyText(text === undefined ? strings.feishu.nonText : strings.feishu.emptyText),
      );
      return;
    }
    const { signInLink } = this.#o;
    if (signInLink && isSignInCommand(text)) {
      if (!(await markInbound())) return this.#redelivered(message);
      const reply = signInReply(
        message.chatType,
        () => signInLink(message.senderOpenId),
        this.#o.now(),
        strings,
      );
      this.#background.track(reply.then(replyText));
      this.#log.debug({ userId: message.senderOpenId, chatType: message.chatType }, "sign-in link requested");
      return;
    }
    if (repliesTo && aboutQuestion) {
      // Recorded as seen before anything settles: a redelivered reply answers nothing twice.
      if (!(await markInbound())) return this.#redelivered(message);
      // One question per line is a way to answer: the reply is read with its line breaks.
      const lines = stripMentions(message.rawText ?? "", message.mentions, { lines: true });
      const answering = answerByReply(replyDeps, repliesTo, message, route.session, lines).then((outcome) => {
        const refusal =
          outcome.kind === "refused" ? outcome.text : outcome.kind === "answered" && outcome.refusal;
        if (refusal) this.#background.track(replyText(refusal));
        if (outcome.kind !== "message") {
          this.#log.debug({ runId: repliesTo.runId, outcome: outcome.kind }, "reply to a card's question");
          return;
        }
        // Nothing to answer after all: an ordinary message (its id is already recorded as seen).
        if (addressed) return this.#accept(message, route, text, async () => true);
        return undefined;
      });
      this.#background.track(answering);
      return;
    }
    await this.#accept(message, route, text, markInbound);
  }

  async #accept(
    message: InboundMessage,
    route: InboundRoute,
    text: string,
    markInbound: (tx: StoreSql) => Promise<boolean>,
  ): Promise<void> {
    const replyText = (reply: string) => this.#replyText(message, route.session, reply);
    const source = feishuSource(this.#o.appId, message.messageId, message.chatId);
    if (route.kind === "topic") this.noteChatMember(message.chatId, message.senderOpenId);
    const result = await this.#o.runner.accept(
      { session: route.session, senderId: message.senderOpenId, text, source },
      markInbound,
    );
    if (result === undefined) return this.#redelivered(message);
    if (result.kind === "queued") {
      const { sessionId } = result.queued;
      this.#background.track(
        (async () => {
          await this.queuedCards.post(result.queued, result.position, {
            sourceMessageId: message.messageId,
            chatId: message.chatId,
          });
          // While a form is open nothing is PATCHed, so a recalled card would go unnoticed and this message
          // would wait for the ask's timeout: make sure what it waits behind is still there.
          await this.#lifecycle.checkActiveCard(sessionId);
        })(),
      );
    } else if (result.kind === "full") {
      const limit = result.limit;
      this.#background.track(this.#o.appLimiter(() => replyText(strings.feishu.queueFull(limit))));
    }
  }

  /** Someone the allow-list leaves out: told once (a redelivery is not answered again), nothing runs. */
  async #notAllowed(message: InboundMessage): Promise<void> {
    if (!(await this.#o.store.markInbound(message.messageId))) return this.#redelivered(message);
    const { senderOpenId: userId, chatId, messageId } = message;
    this.#log.info({ userId, chatId }, "message outside the allow-list");
    const text = strings.feishu.notAllowed;
    const send = () => this.#o.messenger.sendText({ chatId }, text, { replyTo: messageId });
    this.#background.track(this.#o.appLimiter(send));
  }

  #redelivered = (message: InboundMessage): void =>
    this.#log.info({ messageId: message.messageId }, "redelivered message ignored");

  async #replyText(message: InboundMessage, session: SessionInfo, text: string): Promise<void> {
    await this.#o.messenger.sendText({ chatId: message.chatId }, text, {
      replyTo: message.messageId,
      ...threadReply(session),
    });
  }

  nameOf(userId: string): string | undefined {
    return this.names.nameOf(userId);
  }

  /**
   * Someone clicked one of the bot's cards in `chatId`: they are in that chat. Noted under the group's id even
   * when only its topics have sessions (a topic group), since the group's members may view its topics (access.ts).
   */
  noteChatMember(chatId: string, userId: string): void {
    this.#background.track(this.#o.runner.noteInChat(feishuGroupSessionId(this.#o.appId, chatId), userId));
  }
}
