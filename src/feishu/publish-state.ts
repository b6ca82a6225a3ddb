import type { Redaction } from "../cards/progress.ts";
import type { DegradeLevel } from "../cards/progress-body.ts";
import type { PatchOutcome } from "./metrics.ts";

/**
 * The vocabulary of the card publisher's policy (`publish-policy.ts`): its state, the events the shell feeds
 * it and the effects it asks the shell to run, all plain data, plus the two questions the shell may ask of a
 * state at any time (is a change urgent, is the card idle).
 */

/** What a reader must see promptly, without rendering: the status and the open forms, and whether one is open. */
export interface CardShape {
  key: string;
  formOpen: boolean;
  /** The run has ended: this is the card's last state (the policy does not read it; publisher.ts `onLanded`). */
  final?: boolean;
  /** What the change waiting to go out needs, when the transport can tell (CardKit); absent: a full update. */
  pending?: PendingChange;
}

/**
 * What the state of now needs from the transport, against what the platform shows (card-transport.ts
 * `pending`): `text`, markdown text it can send as element updates (fast, streamed); `full`, a change only a
 * full update shows (spaced by the card's interval since the last full one).
 */
export interface PendingChange {
  text: boolean;
  full: boolean;
}

/** `text`: only the markdown texts go (element updates), the rest waits for its full update. */
export type SendMode = "whole" | "text";

export interface PublisherStats {
  sent: number;
  skipped: number;
  rateLimited: number;
  failed: number;
}

export interface PublishLimits {
  /** Minimum gap between plain progress PATCHes (CARD_PATCH_INTERVAL_MS). */
  intervalMs: number;
  /** Minimum gap for urgent PATCHes (state or form changes). */
  urgentIntervalMs: number;
  /**
   * CardKit: the minimum gap between updates that only carry markdown text (element updates, `pending.text`);
   * any other change waits `intervalMs` since the last full update. Undefined (IM PATCH): every change is a
   * full one, spaced by `intervalMs`.
   */
  textIntervalMs?: number;
  maxTransientRetries: number;
  maxRateLimitRetries: number;
  /** How long after a later PATCH landed a PATCH that got no answer can no longer arrive (the request timeout). */
  confirmAfterMs: number;
  /**
   * After the retries are used up on a platform that keeps failing (5xx, timeouts, rate limits), the latest
   * state is tried once more after each of these delays: otherwise a task's final state given up on would
   * never reach its card, since nothing changes after it. Bounded; reset once a PATCH lands.
   */
  lateRetryDelaysMs: readonly number[];
}

/** A failed PATCH as plain data: the shell reads the error once (publisher.ts `classifyFailure`). */
export type PatchFailure =
  | { kind: "unexpected" }
  | {
      kind: "api";
      /** Feishu's code, or the HTTP status when the platform gave none (a bare 429): for metrics and logs. */
      code: number | undefined;
      gone: boolean;
      rateLimited: boolean;
      /** 230020, the per-message window (5/s), as opposed to the app-wide limit. */
      perMessage: boolean;
      retryAfterMs: number | undefined;
      refused: boolean;
      /** 230028: the tenant's data-loss-prevention audit refused the content. */
      audited: boolean;
      transient: boolean;
      /** The platform answered (an HTTP status came back): the card was not applied, and will not be later. */
      answered: boolean;
    };

export type PublishEvent =
  /** The state changed (request()). */
  | { type: "changed"; shape: CardShape }
  /** A card callback for this message is being answered (hold()). */
  | { type: "callbackStarted" }
  /**
   * Its answer was sent and settled; `shown` is the JSON of the card it carried, if that reached the platform:
   * shown to the clicker alone, so the state of now is PATCHed for everyone unless they all see it already.
   */
  | { type: "callbackSettled"; shown: string | undefined; shape: CardShape }
  | { type: "stop" }
  | { type: "timerFired" }
  | { type: "confirmFired"; shape: CardShape }
  /** A late retry's timer fired (after the retries were used up). */
  | { type: "lateRetryFired"; shape: CardShape }
  /** The app-wide budget gave this card its turn. */
  | { type: "turn" }
  /** The render asked for at the turn. */
  | { type: "rendered"; json: string; key: string; pending?: PendingChange }
  /** The PATCH was answered with success. */
  | { type: "landed" }
  /** The PATCH call threw (classified once it is out of the app-wide queue, as `failed`). */
  | { type: "patchThrew" }
  /** Out of the app-wide queue: `sent` says whether a PATCH landed. */
  | { type: "done"; sent: boolean; shape: CardShape }
  /** The render asked for after a PATCH landed, to catch a change nobody announced. */
  | { type: "reconciled"; json: string; shape: CardShape }
  | { type: "failed"; failure: PatchFailure; shape: CardShape };

export type LogLevel = "info" | "warn" | "error";

export type PublishEffect =
  /** (Re)arm the one send timer to fire at `at`. */
  | { type: "arm"; at: number }
  | { type: "disarm" }
  /** (Re)arm the confirmation timer. */
  | { type: "armConfirm"; at: number }
  | { type: "disarmConfirm" }
  /** (Re)arm the late-retry timer; it does not keep the card from being idle. */
  | { type: "armLate"; at: number }
  | { type: "disarmLate" }
  /** Join the app-wide queue (urgency from `isUrgent`, asked again while waiting). */
  | { type: "queue" }
  /** Give the turn back unused: no call was made. */
  | { type: "unused" }
  | { type: "render"; level: DegradeLevel; redaction: Redaction }
  /** Send the card just rendered (`mode` absent: whole). */
  | { type: "patch"; mode?: SendMode }
  | { type: "count"; outcome: PatchOutcome; code?: number; count?: number }
  /** `err`: attach the error as it is (`raw`) or as its message (`described`). */
  | {
      type: "log";
      level: LogLevel;
      message: string;
      fields: Record<string, unknown>;
      err?: "raw" | "described";
    }
  /** The card can no longer be updated: tell the owner (onGone). */
  | { type: "gone" };

export interface PublishState {
  readonly limits: PublishLimits;
  /** Counts changes; `handled` is the last one whose state was rendered and sent, skipped or given up. */
  version: number;
  handled: number;
  /** When the send timer fires, if armed. */
  timerAt: number | undefined;
  confirmAt: number | undefined;
  /** When the next late retry fires, if one is armed; `lateRetries` counts those used since the last landing. */
  lateRetryAt: number | undefined;
  lateRetries: number;
  /** Out for a PATCH: waiting in the app-wide queue or on the wire. */
  inFlight: boolean;
  /** A patchCard call is on the wire (not merely waiting in the app-wide queue). */
  patching: boolean;
  holds: number;
  /** A change waits for the callback's answer: not idle. */
  wantedWhileHeld: boolean;
  /** Callbacks, or a PATCH, overlapped during the current hold: the card the platform shows is not known. */
  overlapped: boolean;
  stopped: boolean;
  /** The next PATCH goes out even if it renders what was last sent, and even over an open form. */
  confirming: boolean;
  lastSentJson: string | undefined;
  lastSentKey: string | undefined;
  lastFailedJson: string | undefined;
  lastSentAt: number;
  /**
   * When the last text-only update (CardKit's element updates) went on the wire, its call begun: the text
   * interval runs from there, so neither a slow call nor a full update between two of them (it goes at its
   * own interval) slows the typewriter. One call is in flight at a time all the same.
   */
  lastTextAt: number;
  /** When the last full update (not a text-only one) was sent: what `intervalMs` spaces with `textIntervalMs`. */
  lastFullAt: number;
  /** The turn was given back because the full update was not due yet: schedule again when it is done. */
  deferred: boolean;
  backoffUntil: number;
  transientFailures: number;
  rateFailures: number;
  /** Cards sent without an answer: the platform may still apply them, over anything sent since. */
  unanswered: readonly string[];
  /** When they can no longer arrive: a request timeout after the first PATCH that landed after them. */
  unansweredUntil: number | undefined;
  /** Raised on each refusal and never lowered: the refused text is usually in every later state too. */
  degrade: DegradeLevel;
  /** Raised on each refusal by the tenant's audit (230028), never lowered, for the same reason. */
  redaction: Redaction;
  /**
   * The PATCH being tried: the change it carries, its JSON and key once rendered; `spanned` once a callback
   * began while it was on the wire (the platform may have applied it before the answer, and reverted it).
   */
  attempt: {
    version: number;
    json: string | undefined;
    key: string | undefined;
    spanned?: boolean;
    /** `text`: only the markdown texts went, the rest of the change is still to send. */
    mode?: SendMode;
    /** It was (or carried) a full update: `lastFullAt` moves when it is sent. */
    full?: boolean;
  };
  stats: PublisherStats;
}

export function initialState(
  limits: PublishLimits,
  options: { shown?: string; degradeLevel?: DegradeLevel; redaction?: Redaction } = {},
): PublishState {
  return {
    limits,
    version: 0,
    handled: 0,
    timerAt: undefined,
    confirmAt: undefined,
    lateRetryAt: undefined,
    lateRetries: 0,
    inFlight: false,
    patching: false,
    holds: 0,
    wantedWhileHeld: false,
    overlapped: false,
    stopped: false,
    confirming: false,
    lastSentJson: options.shown,
    lastSentKey: undefined,
    lastFailedJson: undefined,
    lastSentAt: Number.NEGATIVE_INFINITY,
    lastTextAt: Number.NEGATIVE_INFINITY,
    lastFullAt: Number.NEGATIVE_INFINITY,
    deferred: false,
    backoffUntil: 0,
    transientFailures: 0,
    rateFailures: 0,
    unanswered: [],
    unansweredUntil: undefined,
    degrade: options.degradeLevel ?? 0,
    redaction: options.redaction ?? "none",
    attempt: { version: 0, json: undefined, key: undefined },
    stats: { sent: 0, skipped: 0, rateLimited: 0, failed: 0 },
  };
}

/** Terminal states and form changes overtake plain progress in the app-wide queue, also while waiting there. */
export function isUrgent(state: PublishState, key: string): boolean {
  return key !== state.lastSentKey || state.confirming;
}

/**
 * Nothing is scheduled or in flight, and no change waits for a callback's answer (shutdown, tests). A late
 * retry armed after a give-up does not count: shutdown does not wait minutes for it, and after a restart the
 * card gets its task's state again anyway.
 */
export function isIdle(state: PublishState): boolean {
  if (state.holds > 0 && state.wantedWhileHeld && !state.stopped) return false;
  if (state.confirming && !state.stopped) return false;
  return state.timerAt === undefined && state.confirmAt === undefined && !state.inFlight;
}

/**
 * The rung after a refusal by the tenant's audit (230028), or undefined when the last one was refused too:
 * the one order of the rungs, for the publisher's PATCHes and the first reply alike (progress/placement.ts).
 */
export function nextRedaction(redaction: Redaction): Redaction | undefined {
  return redaction === "none" ? "masked" : redaction === "masked" ? "withheld" : undefined;
}
