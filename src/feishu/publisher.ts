import type { Card } from "../cards/model.ts";
import type { Redaction } from "../cards/progress.ts";
import type { DegradeLevel } from "../cards/progress-body.ts";
import { describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { type CardTransport, imTransport } from "./card-transport.ts";
import { createMessageLimiter, type Limiter, type Slot } from "./limits.ts";
import { FeishuApiError, type FeishuMessenger } from "./messenger.ts";
import { type FeishuMetrics, NO_FEISHU_METRICS } from "./metrics.ts";
import { classifyFailure } from "./patch-failure.ts";
import {
  type CardShape,
  decide,
  initialState,
  isIdle,
  isUrgent,
  type PublishEffect,
  type PublishEvent,
  type PublisherStats,
  type PublishState,
} from "./publish-policy.ts";

export type { CardShape, PublisherStats } from "./publish-policy.ts";

/**
 * One publisher per progress card (DESIGN §5): the shell around `publish-policy.ts`. Every decision (when to
 * send, what to skip, how to back off, when to stop) is the policy's; this class only feeds it events and runs
 * the effects it returns: the send and confirmation timers, the app-wide queue, the render, the PATCH behind
 * the per-message cap, metrics, logs and onGone.
 */

export interface PublisherOptions {
  messageId: string;
  messenger: Pick<FeishuMessenger, "patchCard">;
  /** How a state reaches the platform (card-transport.ts); default: IM PATCH through `messenger`. */
  transport?: CardTransport;
  /** Cheap: the shape of the current state, to decide urgency without rendering. */
  shape: () => CardShape;
  /**
   * Renders the current state at a degrade level (0 = full markdown; see BuildOptions.degraded) and a
   * redaction (after the tenant's audit refused it, BuildOptions.redaction).
   */
  render: (level: DegradeLevel, redaction: Redaction) => Card;
  /** Minimum gap between plain progress PATCHes (CARD_PATCH_INTERVAL_MS). */
  intervalMs: number;
  /** Minimum gap for urgent PATCHes (state or form changes); the platform allows 5/s per message. */
  urgentIntervalMs?: number;
  /**
   * CardKit: the gap between updates that only carry the text the transport streams (its `pending`); every
   * other change still waits `intervalMs` since the last full update. Unset: all changes by `intervalMs`.
   */
  textIntervalMs?: number;
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
  /** Late retries of the latest state after the retries are used up (default 30 s, 2 min, 10 min). */
  lateRetryDelaysMs?: readonly number[];
  /** The card's JSON as the platform shows it now (the reply that created it), if known. */
  shown?: string;
  /** The card can no longer be updated (230031 older than 14 days, recalled, deleted). */
  onGone?: (error: FeishuApiError) => void;
  /** Start degraded: the reply that created the card was already refused at a lower level. */
  degradeLevel?: DegradeLevel;
  /** Start redacted: the reply that created the card was already refused by the tenant's audit. */
  redaction?: Redaction;
  /** Where PATCH outcomes are counted for `/metrics`. */
  metrics?: Pick<FeishuMetrics, "patch">;
  /**
   * The platform shows the card rendered for `shape`: its PATCH landed, or it was skipped as the very card
   * already shown, and no earlier PATCH left without an answer can still overwrite it (otherwise the
   * confirmation's PATCH is the one reported).
   */
  onLanded?: (shape: CardShape) => void;
}

export class CardPublisher {
  readonly #o: PublisherOptions;
  readonly #metrics: Pick<FeishuMetrics, "patch">;
  readonly #messageLimiter: Limiter;
  readonly #transport: CardTransport;
  #state: PublishState;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #confirmTimer: ReturnType<typeof setTimeout> | undefined;
  #lateTimer: ReturnType<typeof setTimeout> | undefined;
  #idleWaiters: (() => void)[] = [];

  constructor(options: PublisherOptions) {
    this.#o = options;
    this.#messageLimiter = createMessageLimiter(5);
    this.#transport = options.transport ?? imTransport(options.messenger, options.messageId);
    this.#metrics = options.metrics ?? NO_FEISHU_METRICS;
    this.#state = initialState(
      {
        intervalMs: options.intervalMs,
        urgentIntervalMs: options.urgentIntervalMs ?? 250,
        ...(options.textIntervalMs !== undefined && this.#transport.pending
          ? { textIntervalMs: options.textIntervalMs }
          : {}),
        maxTransientRetries: options.maxTransientRetries ?? 3,
        maxRateLimitRetries: options.maxRateLimitRetries ?? 8,
        confirmAfterMs: options.confirmAfterMs ?? 10_000,
        lateRetryDelaysMs: options.lateRetryDelaysMs ?? [30_000, 120_000, 600_000],
      },
      {
        ...(options.shown !== undefined ? { shown: options.shown } : {}),
        ...(options.degradeLevel !== undefined ? { degradeLevel: options.degradeLevel } : {}),
        ...(options.redaction !== undefined ? { redaction: options.redaction } : {}),
      },
    );
  }

  get stopped(): boolean {
    return this.#state.stopped;
  }

  /** The level every render of this card uses now (a callback's answer must use it too). */
  get degradeLevel(): DegradeLevel {
    return this.#state.degrade;
  }

  /** The redaction every render of this card uses now (a callback's answer must use it too). */
  get redaction(): Redaction {
    return this.#state.redaction;
  }

  /** What became of this card's PATCHes so far (the same figures go to `/metrics`). */
  get stats(): PublisherStats {
    return this.#state.stats;
  }

  /** The state changed: publish it soon (coalesced with anything already pending). */
  request(): void {
    this.#step({ type: "changed", shape: this.#shape() });
  }

  /**
   * Holds PATCHes while a card callback for this message is being answered; call the returned function once
   * the response has been sent and has settled. Feishu reverts an update made before or in parallel with the
   * response. Pass the card the response carried: Feishu shows it to the clicker alone, so unless it is what
   * the last PATCH showed everyone, the state current at release is PATCHed once, even when it is that card.
   */
  hold(): (shown?: Card) => void {
    this.#step({ type: "callbackStarted" });
    let released = false;
    return (shown) => {
      if (released) return;
      released = true;
      const json = shown ? JSON.stringify(shown) : undefined;
      this.#step({ type: "callbackSettled", shown: json, shape: this.#shape() });
    };
  }

  /** A late retry is armed (after a give-up): the publisher still has work, though it counts as idle. */
  get retryingLate(): boolean {
    return this.#state.lateRetryAt !== undefined;
  }

  /** Stops for good: nothing more is sent for this card. */
  stop(): void {
    this.#step({ type: "stop" });
    this.#transport.close();
  }

  /** Resolves when nothing is scheduled or in flight (shutdown, tests). */
  idle(): Promise<void> {
    if (isIdle(this.#state)) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Feeds one event to the policy and runs its effects; returns them for the caller to act on the rest. */
  #step(event: PublishEvent, error?: unknown): PublishEffect[] {
    const { state, effects } = decide(this.#state, event, this.#o.now());
    this.#state = state;
    for (const effect of effects) this.#run(effect, error);
    if (isIdle(this.#state)) for (const resolve of this.#idleWaiters.splice(0)) resolve();
    return effects;
  }

  /**
   * A timer's event. What it reads (the card's shape, from the runner and the database) may throw — a closed
   * database after shutdown, a locked one — and a throw out of a timer would end the process: logged instead,
   * and the card waits for its next change.
   */
  #fired(event: () => PublishEvent): void {
    try {
      this.#step(event());
    } catch (error) {
      this.#o.logger.error({ messageId: this.#o.messageId, err: describeError(error) }, "card update failed");
    }
  }

  #run(effect: PublishEffect, error: unknown): void {
    switch (effect.type) {
      case "arm":
        if (this.#timer !== undefined) clearTimeout(this.#timer);
        this.#timer = setTimeout(() => {
          this.#timer = undefined;
          this.#fired(() => ({ type: "timerFired" }));
        }, effect.at - this.#o.now());
        return;
      case "disarm":
        clearTimeout(this.#timer);
        this.#timer = undefined;
        return;
      case "armConfirm":
        if (this.#confirmTimer !== undefined) clearTimeout(this.#confirmTimer);
        this.#confirmTimer = setTimeout(() => {
          this.#confirmTimer = undefined;
          this.#fired(() => ({ type: "confirmFired", shape: this.#shape() }));
        }, effect.at - this.#o.now());
        return;
      case "disarmConfirm":
        clearTimeout(this.#confirmTimer);
        this.#confirmTimer = undefined;
        return;
      case "armLate":
        if (this.#lateTimer !== undefined) clearTimeout(this.#lateTimer);
        this.#lateTimer = setTimeout(() => {
          this.#lateTimer = undefined;
          this.#fired(() => ({ type: "lateRetryFired", shape: this.#shape() }));
        }, effect.at - this.#o.now());
        // Minutes away: it must not keep a process (or a test worker) alive on its own.
        this.#lateTimer.unref?.();
        return;
      case "disarmLate":
        clearTimeout(this.#lateTimer);
        this.#lateTimer = undefined;
        return;
      case "queue":
        // What #send reads (the card's shape, again after a failure) may throw too, e.g. a database closed
        // under it at shutdown: logged, never an unhandled rejection.
        this.#send().catch((error: unknown) =>
          this.#o.logger.error(
            { messageId: this.#o.messageId, err: describeError(error) },
            "card update failed",
          ),
        );
        return;
      case "count": {
        const { outcome, ...options } = effect;
        this.#metrics.patch(outcome, options);
        return;
      }
      case "log": {
        const err = effect.err === "raw" ? error : effect.err ? describeError(error) : undefined;
        const fields = { messageId: this.#o.messageId, ...effect.fields, ...(err ? { err } : {}) };
        this.#o.logger[effect.level](fields, effect.message);
        return;
      }
      case "gone":
        if (error instanceof FeishuApiError) this.#o.onGone?.(error);
        return;
      // Acted on by the caller of #step, where the turn, the render and the PATCH happen.
      case "unused":
      case "render":
      case "patch":
        return;
    }
  }

  async #send(): Promise<void> {
    let effects: PublishEffect[];
    try {
      const sent = await this.#o.appLimiter((slot) => this.#turn(slot), {
        urgent: () => isUrgent(this.#state, this.#o.shape().key),
      });
      effects = this.#step({ type: "done", sent, shape: this.#shape() });
    } catch (error) {
      effects = this.#step({ type: "failed", failure: classifyFailure(error), shape: this.#shape() }, error);
    }
    // Reconcile: the policy asks for a render when it cannot know without one whether the state moved on.
    const reconcile = effects.find((effect) => effect.type === "render");
    if (!reconcile) return;
    let json: string;
    try {
      json = JSON.stringify(this.#o.render(reconcile.level, reconcile.redaction));
    } catch (error) {
      this.#step({ type: "failed", failure: { kind: "unexpected" }, shape: this.#o.shape() }, error);
      return;
    }
    this.#step({ type: "reconciled", json, shape: this.#shape() });
  }

  /** The card's turn in the app-wide queue: render now, and PATCH unless it would change nothing. */
  async #turn(slot: Slot): Promise<boolean> {
    const render = this.#step({ type: "turn" }).find((effect) => effect.type === "render");
    if (!render) {
      slot.unused();
      return false;
    }
    const card = this.#o.render(render.level, render.redaction);
    const shape = this.#o.shape();
    const json = JSON.stringify(card);
    const pending = this.#pending(card, shape);
    const rendered = this.#step({ type: "rendered", json, key: shape.key, ...(pending ? { pending } : {}) });
    const patch = rendered.find((e) => e.type === "patch");
    if (!patch) {
      slot.unused();
      // Skipped as what the platform shows already (the reply's card, a callback answer's): landed as well.
      if (json === this.#state.lastSentJson) this.#landed(shape);
      return false;
    }
    try {
      const update = () => this.#transport.update(card, shape, patch.mode ?? "whole");
      // IM's 5 PATCHes/s per message; CardKit's entity gate is the transport's (else text waits after its render).
      await (this.#transport.kind === "im" ? this.#messageLimiter(update) : update());
    } catch (error) {
      this.#step({ type: "patchThrew" });
      throw error;
    }
    this.#step({ type: "landed" });
    this.#landed(shape);
    return true;
  }

  /**
   * The card's shape, and, on a transport that streams text (CardKit), what the state of now needs from it
   * (a render, compared with what the platform shows): the policy spaces text and full updates apart.
   */
  #shape(): CardShape {
    const shape = this.#o.shape();
    if (this.#state.limits.textIntervalMs === undefined) return shape;
    let pending: CardShape["pending"];
    try {
      pending = this.#pending(this.#o.render(this.#state.degrade, this.#state.redaction), shape);
    } catch {
      // Not known: a full update, by the card's interval, and the render at the turn says why it failed.
      return shape;
    }
    return pending ? { ...shape, pending } : shape;
  }

  #pending(card: Card, shape: CardShape): CardShape["pending"] {
    if (this.#state.limits.textIntervalMs === undefined) return undefined;
    return this.#transport.pending?.(card, shape);
  }

  #landed(shape: CardShape): void {
    // A confirmation armed: a PATCH that got no answer may still land on top of this one.
    if (this.#state.confirmAt === undefined) this.#o.onLanded?.(shape);
  }
}
