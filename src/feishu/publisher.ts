import type { Card } from "../cards/model.ts";
import type { DegradeLevel } from "../cards/progress.ts";
import { describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { createMessageLimiter, type Limiter } from "./limits.ts";
import { FEISHU_CODES, FeishuApiError, type FeishuMessenger } from "./messenger.ts";
import { type FeishuMetrics, NO_FEISHU_METRICS } from "./metrics.ts";

/**
 * One publisher per progress card (DESIGN §5). The card is rendered from the state read when a PATCH is
 * sent, at most one PATCH is in flight, a burst of changes becomes one PATCH, and after every PATCH the
 * card is rendered again so the last state always lands.
 */

export interface CardShape {
  /** What a reader must see promptly: the status and which forms are open (e.g. "running|req1,req2"). */
  key: string;
  /** A form is on the card: a PATCH would wipe half-filled inputs, so step ticks wait. */
  formOpen: boolean;
}

export interface PublisherOptions {
  messageId: string;
  messenger: Pick<FeishuMessenger, "patchCard">;
  /** Cheap: the shape of the current state, to decide urgency without rendering. */
  shape: () => CardShape;
  /** Renders the current state at a degrade level (0 = full markdown; see BuildOptions.degraded). */
  render: (level: DegradeLevel) => Card;
  /** Minimum gap between plain progress PATCHes (CARD_PATCH_INTERVAL_MS). */
  intervalMs: number;
  /** Minimum gap for urgent PATCHes (state or form changes); the platform allows 5/s per message. */
  urgentIntervalMs?: number;
  appLimiter: Limiter;
  now: () => number;
  logger: Logger;
  maxTransientRetries?: number;
  maxRateLimitRetries?: number;
  /**
   * A PATCH that got no answer (timeout, connection lost) may still be applied by the platform afterwards, on
   * top of a newer state. So once a later PATCH has landed, the latest state is sent once more this long after
   * it: the request timeout is the right value (default 10 s).
   */
  confirmAfterMs?: number;
  /** The card's JSON as the platform shows it now (the reply that created it), if known. */
  shown?: string;
  /** The card can no longer be updated (230031 older than 14 days, recalled, deleted). */
  onGone?: (error: FeishuApiError) => void;
  /** Start degraded: the reply that created the card was already refused at a lower level. */
  degradeLevel?: DegradeLevel;
  /** Where PATCH outcomes are counted for `/metrics`. */
  metrics?: Pick<FeishuMetrics, "patch">;
}

export interface PublisherStats {
  sent: number;
  skipped: number;
  rateLimited: number;
  failed: number;
}

export class CardPublisher {
  readonly #o: Required<Omit<PublisherOptions, "onGone" | "shown" | "degradeLevel" | "metrics">> &
    Pick<PublisherOptions, "onGone">;
  readonly #metrics: Pick<FeishuMetrics, "patch">;
  readonly #messageLimiter: Limiter;
  readonly stats: PublisherStats = { sent: 0, skipped: 0, rateLimited: 0, failed: 0 };
  #timer: ReturnType<typeof setTimeout> | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  #inFlight = false;
  #holds = 0;
  #stopped = false;
  #lastSentJson: string | undefined;
  #lastSentKey: string | undefined;
  #lastFailedJson: string | undefined;
  #lastSentAt = Number.NEGATIVE_INFINITY;
  #backoffUntil = 0;
  #transientFailures = 0;
  #rateFailures = 0;
  #idleWaiters: (() => void)[] = [];
  #wantedWhileHeld = false;
  /** Callbacks, or a PATCH, overlapped during the current hold: the card the platform shows is not known. */
  #overlapped = false;
  /** A patchCard call is on the wire (not merely waiting in the app-wide queue). */
  #patching = false;
  /** Cards sent without an answer since the last PATCH that landed: the platform may still apply them. */
  #unanswered: string[] = [];
  #confirmTimer: ReturnType<typeof setTimeout> | undefined;
  /** The next PATCH goes out even if it renders what was last sent, and even over an open form. */
  #confirming = false;
  /** Counts request()s; `#handled` is the last one whose state was rendered and sent, skipped or given up. */
  #version = 0;
  #handled = 0;
  /**
   * Raised by one each time the platform refuses a card as invalid or too large, and never lowered: the text
   * that was refused is usually still in every later state, so later states go out degraded too.
   */
  #degrade: DegradeLevel = 0;

  constructor(options: PublisherOptions) {
    this.#o = {
      urgentIntervalMs: 250,
      maxTransientRetries: 3,
      maxRateLimitRetries: 8,
      confirmAfterMs: 10_000,
      ...options,
    };
    this.#messageLimiter = createMessageLimiter(5);
    this.#metrics = options.metrics ?? NO_FEISHU_METRICS;
    this.#lastSentJson = options.shown;
    this.#degrade = options.degradeLevel ?? 0;
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  /** The level every render of this card uses now (a callback's answer must use it too). */
  get degradeLevel(): DegradeLevel {
    return this.#degrade;
  }

  /** The state changed: publish it soon (coalesced with anything already pending). */
  request(): void {
    this.#version += 1;
    this.#schedule();
  }

  /**
   * Holds PATCHes while a card callback for this message is being answered; call the returned function once
   * the response has been sent and has settled. Feishu reverts an update made before or in parallel with the
   * response. Pass the card the response carried: that is what the platform shows now, so the state current
   * at release is PATCHed if (and only if) it differs from it.
   */
  hold(): (shown?: Card) => void {
    // Two callbacks at once: the platform applies their cards in an order we cannot see, so what it shows
    // afterwards is unknown and the current state goes out whatever it is.
    if (this.#holds > 0) this.#overlapped = true;
    // A PATCH already on the wire when the callback came lands while it is answered, before or after the
    // answer's card: which of the two the platform shows is not known either (the emulator keeps the PATCH).
    if (this.#patching) this.#overlapped = true;
    this.#holds += 1;
    this.#clearTimer();
    let released = false;
    return (shown) => {
      if (released) return;
      released = true;
      this.#holds -= 1;
      if (shown || this.#overlapped) {
        this.#lastSentJson = shown && !this.#overlapped ? JSON.stringify(shown) : undefined;
        this.#lastSentKey = undefined;
        this.#version += 1; // compare a fresh render with what is shown, even if nothing was requested
      }
      if (this.#holds === 0) {
        this.#wantedWhileHeld = false;
        this.#overlapped = false;
      }
      this.#schedule();
    };
  }

  /** Stops for good: nothing more is sent for this card. */
  stop(): void {
    this.#stopped = true;
    this.#clearTimer();
    this.#clearConfirm();
    this.#settleIdle();
  }

  /** Resolves when nothing is scheduled or in flight (shutdown, tests). */
  idle(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  #schedule(): void {
    // Nothing changed since the last render (e.g. the reconcile after a PATCH): no place in the app-wide queue.
    if (this.#handled === this.#version && !this.#confirming) return this.#settleIdle();
    if (this.#holds > 0) this.#wantedWhileHeld = true;
    if (this.#stopped || this.#inFlight || this.#holds > 0) return;
    const shape = this.#o.shape();
    const urgent = shape.key !== this.#lastSentKey || this.#confirming;
    // Form-safe: while a form is open, only a change a reader needs (form added/removed, new status) goes out.
    if (!urgent && shape.formOpen) {
      this.#settleIdle();
      return;
    }
    const gap = urgent ? this.#o.urgentIntervalMs : this.#o.intervalMs;
    const at = Math.max(this.#lastSentAt + gap, this.#backoffUntil, this.#o.now());
    if (this.#timer !== undefined && this.#timerAt <= at) return;
    this.#clearTimer();
    this.#timerAt = at;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#timerAt = Number.POSITIVE_INFINITY;
      void this.#send();
    }, at - this.#o.now());
  }

  async #send(): Promise<void> {
    if (this.#stopped || this.#inFlight || this.#holds > 0) return this.#settleIdle();
    // Terminal states and form changes overtake plain progress in the app-wide queue, also when the card
    // reaches one while its plain PATCH waits there.
    const urgent = () => this.#o.shape().key !== this.#lastSentKey || this.#confirming;
    this.#inFlight = true;
    let json: string | undefined;
    let version = this.#version;
    try {
      const sent = await this.#o.appLimiter(
        async (slot) => {
          // Read before patch, at the moment the budget allows it: under load a card can wait seconds in the
          // app-wide queue, and what goes out must be its state now. A callback that began meanwhile holds it.
          if (this.#holds > 0) this.#wantedWhileHeld = true;
          if (this.#stopped || this.#holds > 0) {
            slot.unused();
            return false;
          }
          version = this.#version;
          const card = this.#o.render(this.#degrade);
          const key = this.#o.shape().key;
          json = JSON.stringify(card);
          if (!this.#confirming && (json === this.#lastSentJson || json === this.#lastFailedJson)) {
            this.stats.skipped += 1;
            this.#metrics.patch("skipped");
            if (json === this.#lastSentJson) this.#lastSentKey = key;
            this.#handled = version;
            slot.unused();
            return false;
          }
          this.#patching = true;
          try {
            await this.#messageLimiter(() => this.#o.messenger.patchCard(this.#o.messageId, card));
          } finally {
            this.#patching = false;
          }
          this.#lastSentJson = json;
          this.#lastSentKey = key;
          // Every request() since the last rendered state went out in this one PATCH: all but one coalesced.
          const folded = version - this.#handled - 1;
          if (folded > 0) this.#metrics.patch("coalesced", { count: folded });
          this.#handled = version;
          this.#confirming = false;
          // An earlier PATCH that got no answer may still land on top of this one: send the latest state once
          // more after it can no longer arrive (unless everything unanswered was this very card).
          if (this.#unanswered.some((sentJson) => sentJson !== json)) this.#scheduleConfirm();
          this.#unanswered = [];
          return true;
        },
        { urgent },
      );
      if (sent) {
        this.#lastSentAt = this.#o.now();
        this.#lastFailedJson = undefined;
        this.#transientFailures = 0;
        this.#rateFailures = 0;
        this.stats.sent += 1;
        this.#metrics.patch("sent");
      }
      this.#inFlight = false;
      // Skipped (no-op, held, stopped): nothing to reconcile; a release or the next change schedules again.
      if (!sent) return this.#settleIdle();
      // A change nobody announced with request() while the PATCH was in flight still lands: compare a render
      // here (cheap, no call) instead of queueing a PATCH that may well turn out a no-op.
      if (
        this.#handled === this.#version &&
        JSON.stringify(this.#o.render(this.#degrade)) !== this.#lastSentJson
      ) {
        this.#version += 1;
      }
    } catch (error) {
      this.#inFlight = false;
      this.#onError(error, json ?? "", version);
    }
    // Reconcile: whatever changed while the PATCH was in flight goes out next; the last state always lands.
    this.#schedule();
    this.#settleIdle();
  }

  #onError(error: unknown, json: string, version: number): void {
    const { logger, messageId } = this.#o;
    if (!(error instanceof FeishuApiError)) {
      this.stats.failed += 1;
      this.#metrics.patch("failed");
      this.#lastFailedJson = json;
      this.#handled = version;
      this.#confirming = false;
      logger.error({ err: error, messageId }, "card patch failed unexpectedly");
      return;
    }
    if (error.messageGone) {
      logger.warn({ messageId, code: error.feishuCode }, "card can no longer be updated; publishing stopped");
      this.stop();
      this.#o.onGone?.(error);
      return;
    }
    if (error.rateLimited) {
      this.stats.rateLimited += 1;
      this.#metrics.patch("rate_limited", codeOf(error));
      this.#rateFailures += 1;
      if (this.#rateFailures > this.#o.maxRateLimitRetries) return this.#giveUp(json, error, version);
      // 230020 is the per-message window (5/s): a second is enough. An app-wide 429 without a reset header
      // backs off exponentially.
      const perMessage = error.feishuCode === FEISHU_CODES.patchRateLimited;
      const waitMs =
        error.retryAfterMs ?? (perMessage ? 1000 : Math.min(1000 * 2 ** (this.#rateFailures - 1), 30_000));
      this.#backoffUntil = this.#o.now() + waitMs;
      logger.info(
        { messageId, code: error.feishuCode, waitMs },
        "card patch rate-limited; retrying the latest state",
      );
      return;
    }
    if (error.cardRefused && this.#degrade < 2) {
      // Re-render plainer before giving up; urgent, since what is on the card is an older state.
      this.#degrade = this.#degrade === 0 ? 1 : 2;
      this.#lastSentKey = undefined;
      logger.warn(
        { messageId, code: error.feishuCode, level: this.#degrade, err: describeError(error) },
        "card refused by the platform; re-rendering it degraded",
      );
      return;
    }
    if (error.transient) {
      if (error.httpStatus === undefined && json) {
        // No answer: the platform may have applied this card, or may still. What is on the card is unknown.
        this.#unanswered.push(json);
        this.#lastSentJson = undefined;
      }
      this.#transientFailures += 1;
      if (this.#transientFailures > this.#o.maxTransientRetries) return this.#giveUp(json, error, version);
      this.#backoffUntil = this.#o.now() + 500 * 2 ** (this.#transientFailures - 1);
      logger.warn({ messageId, err: describeError(error) }, "card patch failed; retrying");
      return;
    }
    this.#giveUp(json, error, version);
  }

  /** This exact card will not be tried again; the next different state will. */
  #giveUp(json: string, error: FeishuApiError, version: number): void {
    this.stats.failed += 1;
    this.#metrics.patch("failed", codeOf(error));
    this.#lastFailedJson = json;
    this.#handled = version;
    this.#confirming = false;
    this.#transientFailures = 0;
    this.#rateFailures = 0;
    this.#o.logger.error(
      { messageId: this.#o.messageId, code: error.feishuCode, err: describeError(error) },
      "card patch given up",
    );
  }

  #scheduleConfirm(): void {
    this.#clearConfirm();
    this.#confirmTimer = setTimeout(() => {
      this.#confirmTimer = undefined;
      this.#confirming = true;
      this.#schedule();
      this.#settleIdle();
    }, this.#o.confirmAfterMs);
  }

  #clearConfirm(): void {
    if (this.#confirmTimer !== undefined) clearTimeout(this.#confirmTimer);
    this.#confirmTimer = undefined;
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
  }

  #isIdle(): boolean {
    // A change that waits for a callback's response to go out is still pending: shutdown and the channel
    // must not treat the card as landed before it is sent.
    if (this.#holds > 0 && this.#wantedWhileHeld && !this.#stopped) return false;
    if (this.#confirming && !this.#stopped) return false;
    return this.#timer === undefined && this.#confirmTimer === undefined && !this.#inFlight;
  }

  #settleIdle(): void {
    if (!this.#isIdle()) return;
    for (const resolve of this.#idleWaiters.splice(0)) resolve();
  }
}

/** Feishu's code, or the HTTP status when the platform gave none (a bare 429). */
function codeOf(error: FeishuApiError): { code?: number } {
  const code = error.feishuCode ?? error.httpStatus;
  return code === undefined ? {} : { code };
}
