import type { AskOutcome, PendingAsk } from "../../asks/pending.ts";
import type { RunCommands, RunWriters } from "../../domain/ports.ts";
import type { RunEvents, RunFeed } from "../../domain/run-feed.ts";
import { isTerminal, type RunView } from "../../domain/types.ts";
import { describeError } from "../../errors.ts";
import { CARD_PATCHABLE_MS, type ProgressCardRow } from "../../store/feishu.ts";
import { strings } from "../../strings/index.ts";
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
export interface LifecycleDeps extends Omit<PlacementDeps, "cardGone" | "ownership" | "runLost"> {
  /** Several instances: a run lost to another instance leaves its card to that one (runLost). */
  ownership?: RunWriters;
  pings: Pings;
  /** The zone a card writes an answer's time in (已在网页端回答（15:42）). */
  times: Pick<AskTimes, "timeZone">;
  queuedCards: QueuedCards;
  /** Every run, the bot's and outside agents': the cards follow this feed alone. */
  runs: Pick<RunFeed, "activeRun" | "getRun" | "session">;
  /** A card found gone ends its run (the bot's; an outside agent's task is its agent's to end). */
  runner: Pick<RunCommands, "abandon">;
}

type SendPlacement = Extract<NonNullable<RunEvents["run_started"]["card"]>, { kind: "send" }>;

/**
 * Which owed final states a repair sends (feishu/sweeper.ts): of runs that ended at or before `endedBefore`
 * (their own instance had that long to land them), and not those in `tried`, which it adds to.
 */
export interface RepairScope {
  endedBefore?: number;
  tried?: Set<string>;
}

export class CardLifecycle {
  readonly #d: LifecycleDeps;
  /** Runs whose card is being looked up (one lookup at a time per card). */
  readonly #checking = new Set<string>();
  /** Sending, recovering and publishing cards (placement.ts); a card found gone comes back to cardGone. */
  readonly #place: CardPlacement;
  /** Resumed runs whose recorded card is being read, with their latest state meanwhile. */
  readonly #opening = new Map<string, RunView>();

  constructor(deps: LifecycleDeps) {
    this.#d = deps;
    const runLost = (runId: string) => this.runLost(runId);
    this.#place = new CardPlacement({ ...deps, cardGone: (card) => this.cardGone(card), runLost });
    deps.ownership?.onLost(runLost);
  }

  /**
   * The run went to another instance (its lease lost here, or lapsed by this instance's clock): that one writes
   * its card from now on, so this one stops its publisher and lets the card go, unwritten.
   */
  runLost(runId: string): void {
    const card = this.#d.book.get(runId);
    if (!card) return;
    this.#d.log.info({ runId }, "task went to another instance: its card is written there");
    this.#place.stop(card);
    this.#d.book.forget(card);
  }

  runStarted(event: RunEvents["run_started"]): void {
    if (event.card?.kind === "send") {
      this.#sendStarted(event.run, event.card, event.resumed);
      return;
    }
    if (event.resumed) {
      this.#d.background.track(this.#resumed(event));
      return;
    }
    if (event.card?.kind !== "reply") return;
    this.#replyStarted(event, event.card, false);
  }

  /**
   * A run resumed after a restart: its recorded card takes it again, as it was left (its reminder too).
   * Read before the card opens; what the run does meanwhile its first render shows anyway.
   */
  async #resumed(event: RunEvents["run_started"]): Promise<void> {
    const { run } = event;
    const { book, store, log, background } = this.#d;
    this.#opening.set(run.id, run);
    let found: [Awaited<ReturnType<typeof store.cardForRun>>, boolean];
    try {
      found = await Promise.all([store.cardForRun(run.id), store.wasReminded(run.id)]);
    } finally {
      // The run as its latest event has it: it may have changed, even ended, while its card was read.
      event = { ...event, run: this.#opening.get(run.id) ?? run };
      this.#opening.delete(run.id);
    }
    const [row, reminded] = found;
    const latest = event.run;
    if (book.get(run.id)) return;
    if (row) {
      const card = book.open(
        latest,
        { chatId: row.chatId, sourceMessageId: row.sourceMessageId, reminded },
        event.session,
      );
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
    this.#replyStarted(event, event.card, reminded);
  }

  #replyStarted(
    event: RunEvents["run_started"],
    placement: Extract<NonNullable<RunEvents["run_started"]["card"]>, { kind: "reply" }>,
    reminded: boolean,
  ): void {
    const { run } = event;
    const { book, background } = this.#d;
    const card = book.open(
      run,
      { chatId: placement.chatId, sourceMessageId: placement.messageId, reminded },
      event.session,
    );
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
    const card = this.#d.book.runChanged(run);
    if (!card) {
      if (this.#opening.has(run.id)) this.#opening.set(run.id, run);
      return;
    }
    // An outside agent's group card waits on the answerer of its latest question: the @-reminder goes there.
    card.senderId = run.senderId;
    card.publisher?.request();
    if (isTerminal(run) && card.publisher) this.#place.forgetWhenLanded(card);
  }

  /**
   * After a restart, and with several instances at each sweep (feishu/sweeper.ts): every recorded card whose
   * run ended before its final state landed (a kill during the PATCH interval, a back-off, a late retry) gets
   * that state by one PATCH, on the path of a resumed run's first PATCH (#recover, paced by the app limiter).
   * Cards Feishu would refuse as too old are left alone.
   * One rule for every run the feed holds, outside agents' tasks included.
   */
  async repairEnded(only: RepairScope = {}): Promise<number> {
    const { store, book, runs, now, background } = this.#d;
    let repaired = 0;
    for (const row of await store.finalPending(now() - CARD_PATCHABLE_MS)) {
      if (only.tried?.has(row.runId)) continue;
      // Whose run it is the feed knows (the card table names no run table): only ended runs are owed.
      const run = await runs.getRun(row.runId);
      if (!run || !isTerminal(run) || book.get(row.runId)) continue;
      if (only.endedBefore !== undefined && (run.endedAt ?? 0) > only.endedBefore) continue;
      only.tried?.add(row.runId);
      const session = await runs.session(run.sessionId);
      if (book.get(row.runId)) continue;
      const card = book.open(run, { chatId: row.chatId, sourceMessageId: row.sourceMessageId }, session);
      background.track(this.#place.recover(card, row.messageId));
      repaired += 1;
    }
    return repaired;
  }

  /** Nothing more is sent: every publisher stops, late retries of forgotten cards included. */
  close(): void {
    this.#place.close();
  }

  /**
   * A run whose card is sent to a person or group (an outside agent's task): a new one is sent; after a
   * restart the recorded card takes the run's changes again (questions the registry still holds keep their
   * forms), and one never recorded is sent (the same uuid gives back a card Feishu made before the kill).
   */
  #sendStarted(run: RunView, placement: SendPlacement, resumed: boolean): void {
    if (!resumed) return this.#sendCard(run, placement, undefined, false);
    const { store, background } = this.#d;
    background.track(
      Promise.all([store.cardForRun(run.id), store.wasReminded(run.id)]).then(([row, reminded]) =>
        this.#sendCard(run, placement, row, reminded),
      ),
    );
  }

  #sendCard(
    run: RunView,
    placement: SendPlacement,
    row: ProgressCardRow | undefined,
    reminded: boolean,
  ): void {
    const { book, background } = this.#d;
    if (row?.gone || book.get(run.id)) return;
    const chatId = row?.chatId ?? ("chatId" in placement.to ? placement.to.chatId : "");
    const card = book.open(run, { chatId, sourceMessageId: "", reminded }, undefined);
    card.chatType = placement.chatType;
    card.agent = { name: run.agent ?? "", to: placement.to };
    if (row) this.#place.attach(card, row.messageId);
    // A question card is opened with its question already registered: the first send carries the form.
    else background.track(this.#place.reply(card, { fresh: true }));
  }

  // questions on the card ----------------------------------------------------------------------------

  askRegistered(ask: PendingAsk): void {
    const card = this.#d.book.get(ask.runId);
    if (!card) return;
    card.notice = undefined;
    if (!ask.elicitation) card.asked = true;
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
    const { book, runs, log } = this.#d;
    const run = runs.activeRun(sessionId);
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
    for (const ask of book.asksOf(card)) void registry.cancel(ask.requestId, strings.feishu.cardGoneError);
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
