import type { AskRegistry } from "../../asks/registry.ts";
import type { Rendering } from "../../cards/progress-body.ts";
import type { RunWriters } from "../../domain/ports.ts";
import { isTerminal } from "../../domain/types.ts";
import { describeError } from "../../errors.ts";
import type { Logger } from "../../logger.ts";
import type { CardEntityStore } from "../../store/cardkit.ts";
import type { FeishuStore } from "../../store/feishu.ts";
import type { RetriedWrites } from "../../store/write-retry.ts";
import { strings } from "../../strings/index.ts";
import { type CardTransport, fencedTransport, imTransport } from "../card-transport.ts";
import type { CardKitApi } from "../cardkit/api.ts";
import type { CardJson } from "../cardkit/card-shape.ts";
import { CARDKIT_INTERVAL_MS } from "../cardkit/transport.ts";
import { checkCard, provesGone, suggestsGone } from "../gone-cards.ts";
import { agentsLane, type Limiter } from "../limits.ts";
import { DEFAULT_REQUEST_TIMEOUT_MS, FeishuApiError, type FeishuMessenger } from "../messenger.ts";
import type { FeishuMetrics } from "../metrics.ts";
import { nextRedaction } from "../publish-state.ts";
import { CardPublisher } from "../publisher.ts";
import { threadReply } from "../topics.ts";
import type { Background } from "./background.ts";
import type { ActiveCard, CardBook } from "./card-book.ts";
import { entityTransport, sendEntityCard } from "./entity-cards.ts";
import { sleep, withRetries } from "./retries.ts";

/**
 * How a progress card gets onto the platform and stays current: the first reply (retried, degraded when
 * refused), the first PATCH after a restart, and the publisher that takes over from either. It owns every
 * publisher it made, so close() leaves nothing that could still send. A card the platform says is gone goes
 * back to the lifecycle (`cardGone`), which ends its run.
 */
export interface PlacementDeps {
  book: CardBook;
  background: Background;
  messenger: FeishuMessenger;
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
  /** The platform says the card is gone for good: the lifecycle ends its run. */
  cardGone: (card: ActiveCard) => void;
  /** FEISHU_CARD_TRANSPORT=cardkit: cards are CardKit entities (cardkit/transport.ts); else IM PATCH. */
  cardkit?: { api: CardKitApi; store: CardEntityStore };
  /** Several instances: a card whose task went to another instance is not written from here (fencedTransport). */
  ownership?: Pick<RunWriters, "lapsed">;
  /** That card is let go here. */
  runLost?: (runId: string) => void;
}

export class CardPlacement {
  readonly #d: PlacementDeps;
  /**
   * Every publisher that may still send, a forgotten card's with a late retry armed included: close() stops
   * them all. One leaves when its card is forgotten with nothing armed, or its late retry lands.
   */
  readonly #publishers = new Set<CardPublisher>();
  #closed = false;
  /** The app may not use CardKit (99991672 on create): every later card goes the IM way, without a warning each. */
  #cardkitDenied = false;

  constructor(deps: PlacementDeps) {
    this.#d = deps;
  }

  /** Nothing more is sent: every publisher stops, late retries of forgotten cards included. */
  close(): void {
    this.#closed = true;
    for (const publisher of this.#publishers) publisher.stop();
    this.#publishers.clear();
  }

  /** The card is gone: its publisher stops for good. */
  stop(card: ActiveCard): void {
    card.publisher?.stop();
    if (card.publisher) this.#publishers.delete(card.publisher);
  }

  /**
   * The first PATCH after a restart: a run that was waiting on questions shows their forms again (the asks
   * are durable, the same request ids answer them); any other run shows 任务正在恢复执行 without forms,
   * which wipes forms nobody can answer any more (seed §4.7). Then the publisher takes over. A run that had
   * ended shows its final state, and once that landed the card is done.
   */
  async recover(card: ActiveCard, messageId: string): Promise<void> {
    const { book, messenger, log } = this.#d;
    const appLimiter = this.#limiterOf(card);
    const ended = isTerminal(book.runOf(card));
    const recovering = ended
      ? book.render(card)
      : book.asksOf(card).length > 0
        ? book.render(card, { level: 0, redaction: "none" }, "running")
        : book.recovering(card);
    let shown: string | undefined;
    // A CardKit card continues on its entity, above every sequence reserved before the restart.
    const transport = await this.#transportFor(card, messageId);
    const shape = { key: "", formOpen: !ended && book.asksOf(card).length > 0, final: ended };
    try {
      // Closed while waiting for its turn (a shutdown in the restart's burst): nothing more goes out.
      const sent = await appLimiter(async () => {
        if (this.#closed) return false;
        await (transport ? transport.update(recovering, shape) : messenger.patchCard(messageId, recovering));
        return true;
      });
      if (!sent) return transport?.close();
      if (ended) {
        transport?.close();
        this.finalLanded(card.runId);
        book.forget(card);
        return;
      }
      // What the card shows now: the publisher does not send the same content again (one call per card on a
      // restart, not two: 1,000 waiting cards stay within Feishu's 1,000 calls per minute).
      shown = JSON.stringify(recovering);
    } catch (error) {
      card.messageId = messageId;
      if (provesGone(error) || (suggestsGone(error) && (await checkCard(this.#d, messageId)).gone)) {
        this.#d.cardGone(card);
        return;
      }
      if (error instanceof FeishuApiError && error.messageGone) {
        // Older than 14 days: the card is there but frozen. The run goes on; it can no longer ask on it.
        this.markGone(card.runId);
        book.forget(card);
        return;
      }
      log.warn({ err: describeError(error), runId: card.runId }, "recovery card could not be sent");
    }
    this.attach(card, messageId, shown, undefined, transport);
  }

  async reply(card: ActiveCard, options: { fresh: boolean }): Promise<void> {
    const { book, messenger, registry, log } = this.#d;
    const appLimiter = this.#limiterOf(card);
    try {
      // The run id as uuid: a retried reply never posts a second card, so retrying is safe.
      // What the new card shows, when that is certain: a first attempt of a fresh run. A repeated uuid (a retry
      // here, or a run resumed after a crash) gives back the card an earlier attempt created, content unknown.
      let attempts = 0;
      let shown: string | undefined;
      // A refused card (230099/230025) is sent again degraded, and the card stays degraded from then on; one
      // the tenant's audit refused (230028) is sent again masked, then without the model's text. Same uuid:
      // a refused reply created no message (assumed: the docs say nothing of uuids on failed sends).
      const rung: Rendering = { level: 0, redaction: "none" };
      const degrade = (error: FeishuApiError) => {
        if (error.auditRefused) {
          const redaction = nextRedaction(rung.redaction);
          if (redaction === undefined) return false;
          rung.redaction = redaction;
          return true;
        }
        if (rung.level === 2) return false;
        rung.level = rung.level === 0 ? 1 : 2;
        return true;
      };
      // A CardKit card: its entity, sent by card_id; refused, the card goes the IM way below.
      const entity =
        this.#closed || this.#cardkitDenied
          ? undefined
          : await sendEntityCard(this.#d, card, appLimiter, options.fresh, () => {
              this.#cardkitDenied = true;
            });
      const sent =
        entity ??
        (await withRetries(
          () =>
            appLimiter(
              () => {
                const content = book.render(card, rung);
                attempts += 1;
                shown = options.fresh && attempts === 1 ? JSON.stringify(content) : undefined;
                const uuid = `run-${card.runId}`;
                return card.agent?.to
                  ? messenger.sendCard(card.agent.to, content, { uuid })
                  : messenger.replyCard(card.sourceMessageId, content, {
                      uuid,
                      ...threadReply(card),
                    });
              },
              { urgent: true },
            ),
          degrade,
          this.#d.sleep ?? sleep,
        ));
      this.#record(card, sent.messageId);
      if (entity) shown = entity.shown;
      const transport = await this.#transportFor(card, sent.messageId, entity?.entityShown);
      this.attach(card, sent.messageId, shown, rung, transport);
    } catch (error) {
      log.error({ err: describeError(error), runId: card.runId }, "progress card could not be sent");
      book.forget(card);
      // Nobody can see the questions: let the waiting tool calls return instead of hanging until timeout.
      for (const ask of book.asksOf(card)) void registry.cancel(ask.requestId, strings.askUnavailable);
    }
  }

  /** The card is in the chat whatever the database says: it is published; its record follows. */
  #record(card: ActiveCard, messageId: string): void {
    const { writes, store, now } = this.#d;
    const row = {
      runId: card.runId,
      sessionId: card.sessionId,
      messageId,
      chatId: card.chatId,
      senderId: card.senderId,
      sourceMessageId: card.sourceMessageId,
      createdAt: now(),
    };
    void writes.write(`card:${card.runId}`, "progress card record", () => store.saveCard(row));
  }

  /**
   * The CardKit transport of a card sent as an entity (entity-cards.ts), else undefined: IM PATCH. A card that
   * went static and then had a form to show moves to a new IM card (cardkit/fallback.ts): clicks on it find the
   * run, and a restart continues there; if no new card can be placed, its questions end with the reason the
   * agent gets, as for a card that cannot be placed at all.
   */
  /** The card's CardKit transport; undefined (IM PATCH) when it has none or its record cannot be read. */
  async #transportFor(
    card: ActiveCard,
    messageId: string,
    shown?: CardJson,
  ): Promise<CardTransport | undefined> {
    const { book, registry, log } = this.#d;
    return entityTransport(this.#d, card, messageId, this.#limiterOf(card), {
      ...(shown ? { shown } : {}),
      moved: (to) => {
        book.placed(card, to);
        this.#record(card, to);
        log.info(
          { runId: card.runId, from: messageId, to },
          "a static CardKit card moved to a new card for a form",
        );
      },
      unplaceable: () => {
        for (const ask of book.asksOf(card)) void registry.cancel(ask.requestId, strings.askUnavailable);
      },
    }).catch((error: unknown) => {
      // The card is in the chat: it is published by IM PATCH rather than dropped with its questions.
      log.warn(
        { runId: card.runId, err: describeError(error) },
        "CardKit record unread; updating the card by IM",
      );
      return undefined;
    });
  }

  /**
   * An outside agent's card spends from the agents' share of the app budget (limits.ts), so that no agent,
   * however many cards it keeps busy, delays a person's first reply or form.
   */
  #limiterOf(card: ActiveCard): Limiter {
    return card.agent ? agentsLane(this.#d.appLimiter) : this.#d.appLimiter;
  }

  /** `shown`: the card's content on the platform now, if known (the reply's), so it is not sent again. */
  attach(
    card: ActiveCard,
    messageId: string,
    shown?: string,
    rung: Rendering = { level: 0, redaction: "none" },
    transport?: CardTransport,
  ): void {
    const { book, registry, metrics } = this.#d;
    if (this.#closed) return transport?.close();
    book.placed(card, messageId);
    const { ownership, runLost } = this.#d;
    const wire = transport ?? imTransport(this.#d.messenger, messageId);
    const lapsed = () => ownership?.lapsed(card.runId) === true;
    const publisher = new CardPublisher({
      messageId,
      messenger: this.#d.messenger,
      transport: ownership ? fencedTransport(wire, lapsed, () => runLost?.(card.runId)) : wire,
      shape: () => book.shape(card),
      render: (level, redaction) => book.render(card, { level, redaction }),
      degradeLevel: rung.level,
      redaction: rung.redaction,
      // The answer types out at about 5 updates/s on a CardKit card (element updates); every other change,
      // there as on IM PATCH, waits the card's interval since its last full update (the app budget is shared).
      intervalMs: this.#d.cardPatchIntervalMs,
      ...(transport?.kind === "cardkit"
        ? { textIntervalMs: Math.min(this.#d.cardPatchIntervalMs, CARDKIT_INTERVAL_MS) }
        : {}),
      confirmAfterMs: this.#d.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      ...(shown !== undefined ? { shown } : {}),
      appLimiter: this.#limiterOf(card),
      now: this.#d.now,
      logger: this.#d.log,
      ...(metrics ? { metrics } : {}),
      onGone: (error) => {
        if (provesGone(error)) return this.#d.cardGone(card);
        // 230031: the card is older than 14 days, not removed. Its questions end; the run goes on.
        this.markGone(card.runId);
        for (const ask of book.asksOf(card)) void registry.cancel(ask.requestId, strings.askUnavailable);
      },
      onLanded: (shape) => {
        if (!shape.final) return;
        this.finalLanded(card.runId);
        // A late retry of a card already forgotten: nothing is left for this publisher to do.
        if (book.get(card.runId) !== card) this.#publishers.delete(publisher);
      },
    });
    card.publisher = publisher;
    this.#publishers.add(publisher);
    publisher.request();
    if (isTerminal(book.runOf(card))) this.forgetWhenLanded(card);
  }

  markGone(runId: string): void {
    const { writes, store } = this.#d;
    void writes.write(`gone:${runId}`, "gone card mark", () => store.markCardGone(runId));
  }

  /** The card shows its run's final state: a restart leaves it alone. */
  finalLanded(runId: string): void {
    const { writes, store, now } = this.#d;
    const at = now();
    void writes.write(`landed:${runId}`, "final card mark", () => store.markFinalLanded(runId, at));
  }

  forgetWhenLanded(card: ActiveCard): void {
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
}
