import type { AskOutcome, AskRegistry, PendingAsk } from "../../asks/registry.ts";
import type { DegradeLevel } from "../../cards/progress.ts";
import type { AgentCardTarget, RunnerEvents, SessionRuns } from "../../domain/ports.ts";
import { isTerminal, type RunView } from "../../domain/types.ts";
import { describeError } from "../../errors.ts";
import type { Logger } from "../../logger.ts";
import { CARD_PATCHABLE_MS, type FeishuStore } from "../../store/feishu.ts";
import type { RetriedWrites } from "../../store/write-retry.ts";
import { strings } from "../../strings.ts";
import { goneNotice } from "../ask-deadline.ts";
import { checkCard, provesGone, suggestsGone, tellChatCardGone } from "../gone-cards.ts";
import type { Limiter } from "../limits.ts";
import { DEFAULT_REQUEST_TIMEOUT_MS, FeishuApiError, type FeishuMessenger } from "../messenger.ts";
import type { FeishuMetrics } from "../metrics.ts";
import { CardPublisher } from "../publisher.ts";
import type { QueuedCards } from "../queued-cards.ts";
import { threadReply } from "../topics.ts";
import type { Background } from "./background.ts";
import type { ActiveCard, CardBook } from "./card-book.ts";
import type { Pings } from "./pings.ts";
import { sleep, withRetries } from "./retries.ts";

/**
 * A progress card's life: sent as the run starts (or found again after a restart), published as the run and
 * its questions change, forgotten once its last state has landed, and ended — with its run — when the
 * platform says the card is gone. The card book says what it shows; the publisher when a PATCH goes out.
 */
export interface LifecycleDeps {
  book: CardBook;
  pings: Pings;
  background: Background;
  queuedCards: QueuedCards;
  messenger: FeishuMessenger;
  runner: Pick<SessionRuns, "activeRun" | "abandon" | "getRun">;
  registry: Pick<AskRegistry, "cancel">;
  store: FeishuStore;
  /** The card's records: a write the database refuses is retried, never a reason to drop the card. */
  writes: RetriedWrites;
  appLimiter: Limiter;
  log: Logger;
  now: () => number;
  cardPatchIntervalMs: number;
  /** The messenger's per-call timeout: a PATCH left without an answer is confirmed this long after. */
  requestTimeoutMs?: number;
  metrics?: Pick<FeishuMetrics, "patch">;
  /** The pause before a refused reply is tried again (a timer; tests may drive it with a fake clock). */
  sleep?: (ms: number) => Promise<void>;
}

export class CardLifecycle {
  readonly #d: LifecycleDeps;
  /** Runs whose card is being looked up (one lookup at a time per card). */
  readonly #checking = new Set<string>();
  /**
   * Every publisher that may still send, a forgotten card's with a late retry armed included: close() stops
   * them all. One leaves when its card is forgotten with nothing armed, or its late retry lands.
   */
  readonly #publishers = new Set<CardPublisher>();
  #closed = false;

  constructor(deps: LifecycleDeps) {
    this.#d = deps;
  }

  runStarted(event: RunnerEvents["run_started"]): void {
    const { run } = event;
    const { book, store, log, background } = this.#d;
    if (event.resumed) {
      const row = store.cardForRun(run.id);
      if (row) {
        const card = book.open(run, { chatId: row.chatId, sourceMessageId: row.sourceMessageId });
        if (row.gone) {
          // Marked gone before the restart, but the run was not ended then: end it now, visibly.
          card.messageId = row.messageId;
          this.cardGone(card);
          return;
        }
        // Questions the run was waiting on are still pending (durable asks): their forms come back with it.
        background.track(this.#recover(card, row.messageId));
        return;
      }
      // The process died before the card was recorded (its reply may have reached Feishu or not): reply
      // again. The same uuid gives back the card Feishu created, if it did, within the hour.
      if (event.source?.channel !== "feishu") return;
      log.info({ runId: run.id }, "resumed run had no card recorded; replying again");
    }
    if (event.source?.channel !== "feishu") return;
    const chatId = String(event.source.chatId ?? "");
    const sourceMessageId = String(event.source.messageId ?? "");
    const card = book.open(run, { chatId, sourceMessageId });
    if (event.queueId) {
      background.track(
        this.#d.queuedCards.started(event.queueId, {
          senderId: run.senderId,
          text: run.input,
          sessionId: run.sessionId,
        }),
      );
    }
    background.track(this.#reply(card, { fresh: !event.resumed }));
  }

  runUpdated(run: RunView): void {
    const card = this.#d.book.get(run.id);
    if (!card) return;
    card.publisher?.request();
    if (isTerminal(run) && card.publisher) this.#forgetWhenLanded(card);
  }

  /**
   * After a restart: every recorded card whose run ended before its final state landed (a kill during the
   * PATCH interval, a back-off, a late retry) gets that state by one PATCH, on the path of a resumed run's
   * first PATCH (#recover, paced by the app limiter). Cards Feishu would refuse as too old are left alone.
   */
  repairEnded(): number {
    const { store, book, runner, now, background } = this.#d;
    let repaired = 0;
    for (const row of store.finalPending(now() - CARD_PATCHABLE_MS)) {
      const run = runner.getRun(row.runId);
      if (!run || book.get(row.runId)) continue;
      const card = book.open(run, { chatId: row.chatId, sourceMessageId: row.sourceMessageId });
      background.track(this.#recover(card, row.messageId));
      repaired += 1;
    }
    return repaired;
  }

  /** Nothing more is sent: every publisher stops, late retries of forgotten cards included. */
  close(): void {
    this.#closed = true;
    for (const publisher of this.#publishers) publisher.stop();
    this.#publishers.clear();
  }

  // an outside agent's task (agents-api) ---------------------------------------------------------------

  /** The same card, publisher and asks as a run's, but sent to a chat (no message to reply to). */
  openAgentCard(run: RunView, where: AgentCardTarget): void {
    const chatId = "chatId" in where.target ? where.target.chatId : "";
    const card = this.#agentCard(run, where, chatId);
    // A question card is opened with its question already registered: the first send carries the form.
    this.#d.background.track(this.#reply(card, { fresh: true }));
  }

  /** After a restart: the recorded card gets the task's state by PATCH; one never recorded is sent again. */
  resumeAgentCard(run: RunView, where: AgentCardTarget): void {
    const row = this.#d.store.cardForRun(run.id);
    if (row?.gone) return;
    if (isTerminal(run)) {
      // An ended task's card that never got its final state (the bot was killed first): one PATCH, as a run's.
      if (row && row.finalLandedAt === undefined && !this.#d.book.get(run.id))
        this.#d.background.track(this.#recover(this.#agentCard(run, where, row.chatId), row.messageId));
      return;
    }
    if (!row) {
      this.openAgentCard(run, where);
      return;
    }
    // Questions the registry still holds (durable asks, restored before this) keep their forms.
    this.#attach(this.#agentCard(run, where, row.chatId), row.messageId);
  }

  updateAgentRun(run: RunView): void {
    const card = this.#d.book.get(run.id);
    if (card?.agent) {
      card.agent.run = run;
      // In a group the answerer changes with each question: the @-reminder goes to the current one.
      card.senderId = run.senderId;
    }
    this.runUpdated(run);
  }

  #agentCard(run: RunView, where: AgentCardTarget, chatId: string): ActiveCard {
    const card = this.#d.book.open(run, { chatId, sourceMessageId: "" });
    card.chatType = where.chatType;
    card.agent = { name: where.agent, target: where.target, run };
    return card;
  }

  // questions on the card ----------------------------------------------------------------------------

  askRegistered(ask: PendingAsk): void {
    const card = this.#d.book.get(ask.runId);
    if (!card) return;
    card.notice = undefined;
    card.publisher?.request();
    this.#d.pings.asked(card, ask);
  }

  askSettled(ask: PendingAsk, outcome: AskOutcome): void {
    this.#d.pings.settled(ask.requestId);
    const card = this.#d.book.get(ask.runId);
    if (!card) return;
    card.drafts.delete(ask.requestId);
    card.notice = goneNotice(outcome, strings);
    card.publisher?.request();
  }

  askExtended(ask: PendingAsk): void {
    const card = this.#d.book.get(ask.runId);
    if (card) this.#d.pings.extended(card, ask);
    card?.publisher?.request();
  }

  // sending and publishing ---------------------------------------------------------------------------

  /**
   * The first PATCH after a restart: a run that was waiting on questions shows their forms again (the asks
   * are durable, the same request ids answer them); any other run shows 任务正在恢复执行 without forms,
   * which wipes forms nobody can answer any more (seed §4.7). Then the publisher takes over. A run that had
   * ended shows its final state, and once that landed the card is done.
   */
  async #recover(card: ActiveCard, messageId: string): Promise<void> {
    const { book, appLimiter, messenger, log } = this.#d;
    const ended = isTerminal(book.runOf(card));
    const recovering = ended
      ? book.render(card)
      : book.asksOf(card).length > 0
        ? book.render(card, 0, "running")
        : book.recovering(card);
    let shown: string | undefined;
    try {
      // Closed while waiting for its turn (a shutdown in the restart's burst): nothing more goes out.
      const sent = await appLimiter(async () => {
        if (this.#closed) return false;
        await messenger.patchCard(messageId, recovering);
        return true;
      });
      if (!sent) return;
      if (ended) {
        this.#finalLanded(card.runId);
        book.forget(card);
        return;
      }
      // What the card shows now: the publisher does not send the same content again (one call per card on a
      // restart, not two: 1,000 waiting cards stay within Feishu's 1,000 calls per minute).
      shown = JSON.stringify(recovering);
    } catch (error) {
      card.messageId = messageId;
      if (provesGone(error) || (suggestsGone(error) && (await checkCard(this.#d, messageId)).gone)) {
        this.cardGone(card);
        return;
      }
      if (error instanceof FeishuApiError && error.messageGone) {
        // Older than 14 days: the card is there but frozen. The run goes on; it can no longer ask on it.
        this.#markGone(card.runId);
        book.forget(card);
        return;
      }
      log.warn({ err: describeError(error), runId: card.runId }, "recovery card could not be sent");
    }
    this.#attach(card, messageId, shown);
  }

  async #reply(card: ActiveCard, options: { fresh: boolean }): Promise<void> {
    const { book, appLimiter, messenger, store, writes, registry, log, now } = this.#d;
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
          appLimiter(
            () => {
              const content = book.render(card, level);
              attempts += 1;
              shown = options.fresh && attempts === 1 ? JSON.stringify(content) : undefined;
              const uuid = `run-${card.runId}`;
              return card.agent
                ? messenger.sendCard(card.agent.target, content, { uuid })
                : messenger.replyCard(card.sourceMessageId, content, {
                    uuid,
                    ...threadReply(card.sessionId),
                  });
            },
            { urgent: true },
          ),
        degrade,
        this.#d.sleep ?? sleep,
      );
      const row = {
        runId: card.runId,
        sessionId: card.sessionId,
        messageId: sent.messageId,
        chatId: card.chatId,
        senderId: card.senderId,
        sourceMessageId: card.sourceMessageId,
        createdAt: now(),
      };
      // The card is in the chat whatever the database says: it is published; its record follows.
      writes.write(`card:${card.runId}`, "progress card record", () => store.saveCard(row));
      this.#attach(card, sent.messageId, shown, level);
    } catch (error) {
      log.error({ err: describeError(error), runId: card.runId }, "progress card could not be sent");
      book.forget(card);
      // Nobody can see the questions: let the waiting tool calls return instead of hanging until timeout.
      for (const ask of book.asksOf(card)) registry.cancel(ask.requestId, strings.askUnavailable);
    }
  }

  /** `shown`: the card's content on the platform now, if known (the reply's), so it is not sent again. */
  #attach(card: ActiveCard, messageId: string, shown?: string, degradeLevel: DegradeLevel = 0): void {
    const { book, registry, metrics } = this.#d;
    if (this.#closed) return;
    book.placed(card, messageId);
    const publisher = new CardPublisher({
      messageId,
      messenger: this.#d.messenger,
      shape: () => book.shape(card),
      render: (level) => book.render(card, level),
      degradeLevel,
      intervalMs: this.#d.cardPatchIntervalMs,
      confirmAfterMs: this.#d.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      ...(shown !== undefined ? { shown } : {}),
      appLimiter: this.#d.appLimiter,
      now: this.#d.now,
      logger: this.#d.log,
      ...(metrics ? { metrics } : {}),
      onGone: (error) => {
        if (provesGone(error)) return this.cardGone(card);
        // 230031: the card is older than 14 days, not removed. Its questions end; the run goes on.
        this.#markGone(card.runId);
        for (const ask of book.asksOf(card)) registry.cancel(ask.requestId, strings.askUnavailable);
      },
      onLanded: (shape) => {
        if (!shape.final) return;
        this.#finalLanded(card.runId);
        // A late retry of a card already forgotten: nothing is left for this publisher to do.
        if (book.get(card.runId) !== card) this.#publishers.delete(publisher);
      },
    });
    card.publisher = publisher;
    this.#publishers.add(publisher);
    publisher.request();
    if (isTerminal(book.runOf(card))) this.#forgetWhenLanded(card);
  }

  #markGone(runId: string): void {
    const { writes, store } = this.#d;
    writes.write(`gone:${runId}`, "gone card mark", () => store.markCardGone(runId));
  }

  /** The card shows its run's final state: a restart leaves it alone. */
  #finalLanded(runId: string): void {
    const { writes, store, now } = this.#d;
    const at = now();
    writes.write(`landed:${runId}`, "final card mark", () => store.markFinalLanded(runId, at));
  }

  #forgetWhenLanded(card: ActiveCard): void {
    const publisher = card.publisher;
    if (!publisher) return;
    const { book } = this.#d;
    this.#d.background.track(
      publisher.idle().then(() => {
        if (book.get(card.runId) !== card || !isTerminal(book.runOf(card))) return;
        book.forget(card);
        // Given up with a late retry armed: kept, so that close() still stops it.
        if (!publisher.retryingLate) this.#publishers.delete(publisher);
      }),
    );
  }

  // cards that are gone ------------------------------------------------------------------------------

  /** Looks the active run's card up on the platform; a card that is gone ends its run (see gone-cards.ts). */
  async checkActiveCard(sessionId: string): Promise<void> {
    const { book, runner, log } = this.#d;
    const run = runner.activeRun(sessionId);
    const card = run === undefined ? undefined : book.get(run.id);
    // Without an open form the card is PATCHed as the run goes on, and a PATCH finds out by itself.
    if (!card?.messageId || card.gone || book.asksOf(card).length === 0 || this.#checking.has(card.runId))
      return;
    this.#checking.add(card.runId);
    try {
      const { gone, error } = await checkCard(this.#d, card.messageId);
      if (gone) this.cardGone(card);
      else if (error)
        log.info(
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
  cardGone(card: ActiveCard): void {
    if (card.gone) return;
    const { book, log, registry, runner } = this.#d;
    card.gone = true;
    card.publisher?.stop();
    if (card.publisher) this.#publishers.delete(card.publisher);
    this.#markGone(card.runId);
    log.warn({ runId: card.runId, messageId: card.messageId }, "progress card is gone; ending its run");
    // Desktop clients and the agent learn why the question ended.
    for (const ask of book.asksOf(card)) registry.cancel(ask.requestId, strings.feishu.cardGoneError);
    book.forget(card);
    const ended = runner.abandon(card.runId, strings.feishu.cardGoneError);
    if (ended.ok) this.#d.background.track(tellChatCardGone(this.#d, card));
  }
}
