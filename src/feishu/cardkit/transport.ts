import pThrottle from "p-throttle";
import type { Card } from "../../cards/model.ts";
import { describeError } from "../../errors.ts";
import type { Logger } from "../../logger.ts";
import type { CardEntityRow, CardEntityStore } from "../../store/cardkit.ts";
import type { CardTransport } from "../card-transport.ts";
import { FeishuApiError, type FeishuMessenger } from "../messenger.ts";
import type { CardShape, PendingChange, SendMode } from "../publish-state.ts";
import { CARDKIT_ERRORS, type CardKitApi } from "./api.ts";
import { type CardJson, entityCard, hasForm, textDiff, withTexts } from "./card-shape.ts";
import { type FallbackDeps, ImFallback } from "./fallback.ts";

/**
 * The CardKit card transport (issue 29, FEISHU_CARD_TRANSPORT=cardkit): the progress card is a card entity,
 * sent once by its card_id; while the answer's text grows, only its markdown element is updated, in streaming
 * mode (it types out); every other change is a full update. Every operation takes a sequence reserved in the
 * store before the call, so a restart never uses one twice (300317).
 *
 * Forms: streaming mode is left (settings) before the full update that shows a form, and a card with a form
 * open is never streamed into. Streaming closes itself 10 minutes after it was opened, whatever the traffic:
 * it is reopened on a timer at 9 minutes; after a 300309/200850 the current state goes out in one full update,
 * and if that fails too the card falls back to IM PATCH (once: refused too, its final state goes as a new
 * message, fallback.ts). 200810 (a callback in progress) and 300316 (10
 * operations/s) are handed to the publisher as a rate limit: it waits and sends the latest state again,
 * a bounded number of times. Any other refusal (no permission, 11310, 230099, an unknown code): the card
 * falls back to IM PATCH in the same update, with one warning line, and stays there (recorded, so a
 * restart keeps it).
 */

/**
 * The gap between a CardKit card's text updates (element updates): the answer types out at about 5 updates/s.
 * Every other change waits CARD_PATCH_INTERVAL_MS since the last full update, as on IM PATCH.
 */
export const CARDKIT_INTERVAL_MS = 200;
/** Reopened this long after streaming was opened: before the platform's 10 minutes close it. */
export const STREAMING_REOPEN_MS = 9 * 60_000;
/** The platform allows 10 operations per second per entity. */
const ENTITY_OPS_PER_SECOND = 10;
/**
 * What the transport sends at most: the platform counts operations as they arrive, and a call delayed on the
 * way lands next to the ones after it, so the gate keeps 2 of the 10 free. A text update is one operation
 * per markdown element that changed (the answer, the steps): with steps ticking while the answer types, the
 * text interval alone would ask for 11 a second.
 */
const ENTITY_OPS_GATE_PER_SECOND = ENTITY_OPS_PER_SECOND - 2;
/** How long a callback-in-progress (200810) update waits before the latest state is sent again. */
const CALLBACK_WAIT_MS = 1000;

export interface CardKitDeps {
  api: CardKitApi;
  store: CardEntityStore;
  log: Logger;
  now: () => number;
  /**
   * The app-wide budget for calls made outside the publisher's turn (the reopen timer); an update's calls run
   * in the turn the publisher was given.
   */
  limit?: <T>(call: () => Promise<T>) => Promise<T>;
}

export interface TransportInit {
  key: string;
  cardId: string;
  messageId: string;
  messenger: Pick<FeishuMessenger, "patchCard">;
  /** The static fallback's new message (fallback.ts): without it, a refused IM PATCH is the publisher's. */
  reply?: FallbackDeps["reply"];
  /** Static, with a form to show (fallback.ts): the card moved to a new IM card, or could not. */
  moved?: FallbackDeps["moved"];
  unplaceable?: FallbackDeps["unplaceable"];
  /** The entity as the first send showed it (undefined after a restart: the next update is full). */
  shown?: CardJson;
}

/** What the transport counts (tests, benchmarks). */
export interface CardKitStats {
  content: number;
  full: number;
  settings: number;
  /** Full updates sent after streaming was found closed (300309/200850). */
  recoveries: number;
  fellBack: boolean;
}

export class CardKitTransport implements CardTransport {
  readonly kind = "cardkit";
  readonly stats: CardKitStats = { content: 0, full: 0, settings: 0, recoveries: 0, fellBack: false };
  readonly #d: CardKitDeps;
  readonly #key: string;
  readonly #cardId: string;
  readonly #messageId: string;
  readonly #im: ImFallback;
  readonly #gate: () => Promise<unknown>;
  #reserved: number;
  #streamingSince: number | undefined;
  /** The entity's card as the last operation left it; undefined when not known (then a full update). */
  #shown: CardJson | undefined;
  #fallback: boolean;
  #chain: Promise<unknown> = Promise.resolve();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  /** The transport of the entity `init.key`, from where its row left it (above every sequence reserved). */
  static async open(deps: CardKitDeps, init: TransportInit): Promise<CardKitTransport> {
    return new CardKitTransport(deps, init, await deps.store.byKey(init.key));
  }

  private constructor(deps: CardKitDeps, init: TransportInit, row: CardEntityRow | undefined) {
    this.#d = deps;
    this.#key = init.key;
    this.#cardId = init.cardId;
    this.#messageId = init.messageId;
    const { shown: _shown, ...fallback } = init;
    this.#im = new ImFallback({ ...fallback, store: deps.store, log: deps.log }, row);
    this.#shown = init.shown;
    this.#reserved = row?.reserved ?? 0;
    this.#fallback = row?.fallback ?? false;
    this.stats.fellBack = this.#fallback;
    this.#streamingSince = row?.streamingSince;
    const throttle = pThrottle({ limit: ENTITY_OPS_GATE_PER_SECOND, interval: 1000, strict: true });
    const gate = throttle(() => undefined);
    this.#gate = async () => gate();
    this.#arm();
  }

  get cardId(): string {
    return this.#cardId;
  }

  get fellBack(): boolean {
    return this.#fallback;
  }

  /** IM PATCH was refused too: the final state goes (or went) as a new message. */
  get staticMessageId(): string | undefined {
    return this.#im.staticMessageId;
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  update(card: Card, shape: CardShape, mode: SendMode = "whole"): Promise<void> {
    return this.#serial(async () => {
      if (this.#fallback) return this.#im.update(card, shape, mode);
      const stream = streams(card, shape);
      try {
        await this.#publish(card, stream, mode);
      } catch (error) {
        await this.#failed(error, card, shape, stream);
      }
    });
  }

  /**
   * What `update` would send for `card` now (the publisher's policy spaces the two kinds apart): its markdown
   * texts as element updates, and whether anything else needs a full update. The very rule `#publish` sends by.
   */
  pending(card: Card, shape: CardShape): PendingChange {
    if (this.#fallback) return { text: false, full: true };
    const stream = streams(card, shape);
    const diff = this.#diff(entityCard(card, stream), stream);
    if (!diff) return { text: false, full: true };
    // Nothing differs from what the entity shows: the full update #publish would send (the policy skips it
    // when it is what was last sent).
    if (diff.changes.length === 0) return { text: false, full: true };
    return { text: true, full: diff.rest };
  }

  /** The text changes from what the entity shows to `next`, when it streams and what it shows is known. */
  #diff(next: CardJson, stream: boolean): ReturnType<typeof textDiff> {
    const prev = this.#shown;
    if (!prev || !stream || this.#streamingSince === undefined) return undefined;
    return textDiff(prev, next);
  }

  async #publish(card: Card, stream: boolean, mode: SendMode): Promise<void> {
    const next = entityCard(card, stream);
    const since = this.#streamingSince;
    if (stream && since !== undefined && this.#d.now() - since >= STREAMING_REOPEN_MS) await this.#reopen();
    const prev = this.#shown;
    const diff = this.#diff(next, stream);
    // Text only: the element updates, the rest as it is (its full update comes at the card's interval).
    if (mode === "text") {
      if (!prev || !diff) return;
      await this.#texts(diff.changes, withTexts(prev, diff.changes));
      return;
    }
    if (diff && !diff.rest && diff.changes.length > 0) {
      await this.#texts(diff.changes, next);
      return;
    }
    // Leave streaming before a form appears: typed input must not meet a streaming card (docs/feishu-platform.md).
    if (!stream && this.#streamingSince !== undefined && hasForm(card)) {
      await this.#op((sequence) => this.#d.api.settings(this.#cardId, { streaming_mode: false }, sequence));
      this.stats.settings += 1;
      await this.#setStreaming(undefined);
    }
    await this.#full(next, stream);
  }

  async #texts(changes: readonly { elementId: string; text: string }[], shown: CardJson): Promise<void> {
    for (const change of changes) {
      this.#shown = undefined; // what the entity shows is unknown until the call answers
      await this.#op((sequence) =>
        this.#d.api.content(this.#cardId, change.elementId, change.text, sequence),
      );
      this.stats.content += 1;
    }
    this.#shown = shown;
  }

  async #full(next: CardJson, stream: boolean): Promise<void> {
    this.#shown = undefined;
    await this.#op((sequence) => this.#d.api.update(this.#cardId, next, sequence));
    this.stats.full += 1;
    this.#shown = next;
    // A full update whose config turns streaming on opens it (now, unless it was open already).
    await this.#setStreaming(stream ? (this.#streamingSince ?? this.#d.now()) : undefined);
  }

  /** Streaming off and on again: its 10 minutes start over. */
  async #reopen(): Promise<void> {
    await this.#op((sequence) => this.#d.api.settings(this.#cardId, { streaming_mode: false }, sequence));
    await this.#setStreaming(undefined);
    await this.#op((sequence) => this.#d.api.settings(this.#cardId, { streaming_mode: true }, sequence));
    this.stats.settings += 2;
    await this.#setStreaming(this.#d.now());
  }

  async #failed(error: unknown, card: Card, shape: CardShape, stream: boolean): Promise<void> {
    const code = error instanceof FeishuApiError ? error.feishuCode : undefined;
    if (code === CARDKIT_ERRORS.streamingClosed || code === CARDKIT_ERRORS.streamingTimedOut) {
      // Streaming closed under us: the state of now in one full update (which opens it again), once.
      await this.#setStreaming(undefined);
      this.stats.recoveries += 1;
      try {
        await this.#full(entityCard(card, stream), stream);
        return;
      } catch (again) {
        // A wait-and-try-again is the publisher's to retry; only a refusal ends CardKit for this card.
        const againCode = again instanceof FeishuApiError ? again.feishuCode : undefined;
        if (
          again instanceof FeishuApiError &&
          (again.rateLimited || again.transient || againCode === ENTITY_RATE_LIMITED)
        )
          throw again;
        return this.#fallBack(again, card, shape);
      }
    }
    if (code === CARDKIT_ERRORS.callbackInProgress || code === ENTITY_RATE_LIMITED) {
      this.#shown = undefined;
      throw new FeishuApiError({
        method: error instanceof FeishuApiError ? error.method : "cardkit",
        message:
          code === ENTITY_RATE_LIMITED ? "entity rate limit" : "a callback of this card is in progress",
        feishuCode: code,
        httpStatus: 429,
        retryAfterMs: CALLBACK_WAIT_MS,
        cause: error,
      });
    }
    if (error instanceof FeishuApiError && (error.rateLimited || error.transient)) {
      // The publisher backs off and retries the latest state (bounded); a full update then, to be sure.
      this.#shown = undefined;
      throw error;
    }
    return this.#fallBack(error, card, shape);
  }

  /** CardKit refused this card: IM PATCH from now on, this very update included. */
  async #fallBack(error: unknown, card: Card, shape: CardShape): Promise<void> {
    this.#fallback = true;
    this.stats.fellBack = true;
    this.close();
    await this.#d.store.fallback(this.#key);
    const code = error instanceof FeishuApiError ? (error.feishuCode ?? error.httpStatus) : undefined;
    this.#d.log.warn(
      { messageId: this.#messageId, cardId: this.#cardId, code, err: describeError(error) },
      "CardKit refused the progress card; updating it by IM PATCH from now on",
    );
    await this.#im.update(card, shape, "whole");
  }

  /** One operation: its sequence reserved (and stored) before the call, within 10 operations/s. */
  async #op(call: (sequence: number) => Promise<void>): Promise<void> {
    await this.#gate();
    const sequence = this.#reserved + 1;
    await this.#d.store.reserve(this.#key, sequence);
    this.#reserved = sequence;
    await call(sequence);
  }

  async #setStreaming(since: number | undefined): Promise<void> {
    if (since === this.#streamingSince) return;
    this.#streamingSince = since;
    await this.#d.store.streaming(this.#key, since);
    this.#arm();
  }

  /** The reopen timer: at 9 minutes of streaming, unless the card left streaming (a form, its end) before. */
  #arm(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const since = this.#streamingSince;
    if (since === undefined || this.#closed || this.#fallback) return;
    const delay = Math.max(0, since + STREAMING_REOPEN_MS - this.#d.now());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#serial(async () => {
        if (this.#closed || this.#fallback || this.#streamingSince !== since) return;
        try {
          const limit = this.#d.limit ?? ((call) => call());
          await limit(() => this.#reopen());
        } catch (error) {
          // Left as it is: the next update finds streaming closed and recovers once (never a retry loop).
          this.#d.log.info(
            { messageId: this.#messageId, err: describeError(error) },
            "CardKit streaming could not be reopened; the next update recovers it",
          );
        }
      });
    }, delay);
    this.#timer.unref?.();
  }

  /** One operation chain per entity: the publisher's update and the reopen timer never interleave. */
  #serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#chain.then(work, work);
    this.#chain = run.catch(() => undefined);
    return run;
  }
}

/** A card streams (its texts type out) unless a form is open or shown, or it is the run's last state. */
function streams(card: Card, shape: CardShape): boolean {
  return !shape.formOpen && shape.final !== true && !hasForm(card);
}

/** The emulator's code for the 10 operations/s per entity (the docs name none: assumed). */
const ENTITY_RATE_LIMITED = 300316;
