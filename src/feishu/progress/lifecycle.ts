import type { AskOutcome, PendingAsk } from "../../asks/registry.ts";
import type { AgentCardTarget, RunCommands } from "../../domain/ports.ts";
import type { RunEvents, RunFeed } from "../../domain/run-feed.ts";
import { isTerminal, type RunView } from "../../domain/types.ts";
import { describeError } from "../../errors.ts";
import { CARD_PATCHABLE_MS } from "../../store/feishu.ts";
import { strings } from "../../strings.ts";
import { type AskTimes, goneQuestion } from "../ask-deadline.ts";
import { checkCard, tellChatCardGone } from "../gone-cards.ts";
import type { QueuedCards } from "../queued-cards.ts";
import type { ActiveCard } from "./card-book.ts";
import type { Pings } from "./pings.ts";
import { CardPlacement, type PlacementDeps } from "./placement.ts";

/**
 * A progress card's life: sent as the run starts (or found again after a restart), published as the run and
 * its questions change, forgotten once its last state has landed, and ended — with its run — when the
 * platform says the card is gone. The card book says what it shows; the publisher when a PATCH goes out.
 */
export interface LifecycleDeps extends Omit<PlacementDeps, "cardGone"> {
  pings: Pings;
  /** The zone a card writes an answer's time in (已在网页端回答（15:42）). */
  times: Pick<AskTimes, "timeZone">;
  queuedCards: QueuedCards;
  runner: Pick<RunFeed, "activeRun" | "getRun"> & Pick<RunCommands, "abandon">;
}

export class CardLifecycle {
  readonly #d: LifecycleDeps;
  /** Runs whose card is being looked up (one lookup at a time per card). */
  readonly #checking = new Set<string>();
  /** Sending, recovering and publishing cards (placement.ts); a card found gone comes back to cardGone. */
  readonly #place: CardPlacement;

  constructor(deps: LifecycleDeps) {
    this.#d = deps;
    this.#place = new CardPlacement({ ...deps, cardGone: (card) => this.cardGone(card) });
  }

  runStarted(event: RunEvents["run_started"]): void {
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
        background.track(this.#place.recover(card, row.messageId));
        return;
      }
      // The process died before the card was recorded (its reply may have reached Feishu or not): reply
      // again. The same uuid gives back the card Feishu created, if it did, within the hour.
      if (event.card?.kind !== "reply") return;
      log.info({ runId: run.id }, "resumed run had no card recorded; replying again");
    }
    if (event.card?.kind !== "reply") return;
    const card = book.open(run, { chatId: event.card.chatId, sourceMessageId: event.card.messageId });
    if (event.queueId) {
      background.track(
        this.#d.queuedCards.started(event.queueId, {
          senderId: run.senderId,
          text: run.input,
          sessionId: run.sessionId,
        }),
      );
    }
    background.track(this.#place.reply(card, { fresh: !event.resumed }));
  }

  runUpdated(run: RunView): void {
    const card = this.#d.book.get(run.id);
    if (!card) return;
    card.publisher?.request();
    if (isTerminal(run) && card.publisher) this.#place.forgetWhenLanded(card);
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
      background.track(this.#place.recover(card, row.messageId));
      repaired += 1;
    }
    return repaired;
  }

  /** Nothing more is sent: every publisher stops, late retries of forgotten cards included. */
  close(): void {
    this.#place.close();
  }

  // an outside agent's task (agents-api) ---------------------------------------------------------------

  /** The same card, publisher and asks as a run's, but sent to a chat (no message to reply to). */
  openAgentCard(run: RunView, where: AgentCardTarget): void {
    const chatId = "chatId" in where.target ? where.target.chatId : "";
    const card = this.#agentCard(run, where, chatId);
    // A question card is opened with its question already registered: the first send carries the form.
    this.#d.background.track(this.#place.reply(card, { fresh: true }));
  }

  /** After a restart: the recorded card gets the task's state by PATCH; one never recorded is sent again. */
  resumeAgentCard(run: RunView, where: AgentCardTarget): void {
    const row = this.#d.store.cardForRun(run.id);
    if (row?.gone) return;
    if (isTerminal(run)) {
      // An ended task's card that never got its final state (the bot was killed first): one PATCH, as a run's.
      if (row && row.finalLandedAt === undefined && !this.#d.book.get(run.id))
        this.#d.background.track(this.#place.recover(this.#agentCard(run, where, row.chatId), row.messageId));
      return;
    }
    if (!row) {
      this.openAgentCard(run, where);
      return;
    }
    // Questions the registry still holds (durable asks, restored before this) keep their forms.
    this.#place.attach(this.#agentCard(run, where, row.chatId), row.messageId);
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
    this.#d.pings.settled(ask, outcome);
    const card = this.#d.book.get(ask.runId);
    if (!card) return;
    card.drafts.delete(ask.requestId);
    card.notice = goneQuestion(outcome, this.#d.now(), this.#d.times.timeZone);
    card.publisher?.request();
  }

  askExtended(ask: PendingAsk): void {
    const card = this.#d.book.get(ask.runId);
    if (card) this.#d.pings.extended(card, ask);
    card?.publisher?.request();
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
    this.#place.stop(card);
    this.#place.markGone(card.runId);
    log.warn({ runId: card.runId, messageId: card.messageId }, "progress card is gone; ending its run");
    // Desktop clients and the agent learn why the question ended.
    for (const ask of book.asksOf(card)) registry.cancel(ask.requestId, strings.feishu.cardGoneError);
    book.forget(card);
    const ended = runner.abandon(card.runId, strings.feishu.cardGoneError);
    if (!ended.ok) return;
    this.#d.background.track(
      tellChatCardGone(this.#d, card).then((told) => {
        if (!told)
          log.warn({ runId: card.runId }, "the topic's messages are gone too; the chat was not told");
      }),
    );
  }
}
