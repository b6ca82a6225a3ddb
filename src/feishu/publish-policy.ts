import { disarm, onFailure, stop } from "./publish-failures.ts";
import {
  type CardShape,
  isUrgent,
  type PendingChange,
  type PublishEffect,
  type PublishEvent,
  type PublishState,
} from "./publish-state.ts";

export * from "./publish-state.ts";

/**
 * The card publisher's decisions (DESIGN §5), apart from its effects: `decide(state, event, now)` says what
 * the publisher of one card does next, and `publisher.ts` only runs what it is told (timers, the app-wide
 * queue, renders, the PATCH, metrics, logs). Nothing here reads a clock, renders or calls the platform, so
 * each rule can be read and tested on its own, with plain data.
 *
 * The rules: coalesce (one PATCH in flight, one pending); read before patch (render at the turn, not when
 * queued); reconcile after patch (the last state always lands); space plain progress by the card's interval,
 * urgent changes (status, forms) by the urgent one; skip no-ops; hold PATCHes while a callback is answered
 * (docs/long-connection.md §Settle), then PATCH once if its answer carried a card (only its clicker sees that
 * one, docs/feishu-platform.md §Callbacks); form-safe (step ticks wait while a form is open); back off on 230020/429,
 * re-render degraded on 230099/230025, masked then withheld on 230028, stop on 230031/230011/230110, bounded
 * retries, and a confirmation of the latest state after a PATCH that got no answer may have been applied late.
 */

export interface Decision {
  state: PublishState;
  effects: PublishEffect[];
}

export function decide(state: PublishState, event: PublishEvent, now: number): Decision {
  // A draft the rules below change in place; the caller's state is never touched.
  const s: PublishState = { ...state, attempt: { ...state.attempt }, stats: { ...state.stats } };
  const fx: PublishEffect[] = [];
  switch (event.type) {
    case "changed":
      s.version += 1;
      schedule(s, fx, event.shape, now);
      break;
    case "callbackStarted":
      // Two callbacks at once: the platform applies their cards in an order we cannot see. A PATCH already on
      // the wire lands while the callback is answered, before or after the answer's card: unknown too.
      if (s.holds > 0 || s.patching) s.overlapped = true;
      if (s.patching) s.attempt.spanned = true;
      s.holds += 1;
      if (s.timerAt !== undefined) {
        // The change that timer was for now waits for the answer: until then the card has not landed.
        s.wantedWhileHeld = true;
        disarm(s, fx);
      }
      break;
    case "callbackSettled":
      s.holds -= 1;
      // The answer's card reaches the clicker alone, whatever the docs say of shared cards (feishu-platform
      // Addendum, later, §1): everyone else still sees what the last PATCH put there. So once the answer
      // carried a card other than that one, the state of now goes out in one PATCH, even when it is the very
      // card the answer carried (取消任务 in a group: otherwise the others keep live buttons for ever). After
      // an overlap nobody knows what the card shows: the same. Private chats too: one rule, and the one
      // member may read on a second client the answer never reached.
      if (s.overlapped || (event.shown !== undefined && event.shown !== s.lastSentJson)) {
        s.lastSentJson = undefined;
        s.lastSentKey = undefined;
        s.version += 1;
      }
      if (s.holds === 0) {
        s.wantedWhileHeld = false;
        s.overlapped = false;
      }
      schedule(s, fx, event.shape, now);
      break;
    case "stop":
      stop(s, fx);
      break;
    case "timerFired":
      s.timerAt = undefined;
      if (s.stopped || s.inFlight || s.holds > 0) break;
      s.inFlight = true;
      s.attempt = { version: s.version, json: undefined, key: undefined };
      fx.push({ type: "queue" });
      break;
    case "confirmFired":
      s.confirmAt = undefined;
      s.confirming = true;
      schedule(s, fx, event.shape, now);
      break;
    case "lateRetryFired":
      s.lateRetryAt = undefined;
      if (s.stopped) break;
      // The latest state once more, even if it is the very card given up on: one try per round against a
      // failing platform (a transient failure gives up again at once), but a rate limit is the platform up and
      // saying when, so it gets its spaced waits as any state does; a 230020 must not spend a late round.
      s.confirming = true;
      s.transientFailures = s.limits.maxTransientRetries;
      s.rateFailures = 0;
      schedule(s, fx, event.shape, now);
      break;
    case "turn":
      onTurn(s, fx);
      break;
    case "rendered":
      onRendered(s, fx, event, now);
      break;
    case "landed":
      onLanded(s, fx, now);
      break;
    case "patchThrew":
      s.patching = false;
      break;
    case "done":
      onDone(s, fx, event.sent, event.shape, now);
      break;
    case "reconciled":
      // A change nobody announced while the PATCH was out still lands (a card given up is not tried again).
      if (event.json !== s.lastSentJson && event.json !== s.lastFailedJson) s.version += 1;
      schedule(s, fx, event.shape, now);
      break;
    case "failed":
      s.inFlight = false;
      onFailure(s, fx, event.failure, now);
      // Reconcile: whatever changed while the PATCH was out goes next; the last state always lands. Given
      // up, that card counts as handled: a render tells whether something nobody announced changed since.
      if (s.handled === s.version && !s.stopped && !s.confirming)
        fx.push({ type: "render", level: s.degrade, redaction: s.redaction });
      else schedule(s, fx, event.shape, now);
      break;
  }
  return { state: s, effects: fx };
}

function schedule(s: PublishState, fx: PublishEffect[], shape: CardShape, now: number): void {
  // Nothing changed since the last render (e.g. the reconcile after a PATCH): no place in the app-wide queue.
  if (s.handled === s.version && !s.confirming) return;
  if (s.holds > 0) s.wantedWhileHeld = true;
  if (s.stopped || s.inFlight || s.holds > 0) return;
  const urgent = isUrgent(s, shape.key);
  // Form-safe: while a form is open, only a change a reader needs (form added/removed, new status) goes out.
  if (!urgent && shape.formOpen) return;
  const gap = urgent ? s.limits.urgentIntervalMs : s.limits.intervalMs;
  const at = Math.max(urgent ? s.lastSentAt + gap : plainDue(s, shape), s.backoffUntil, now);
  if (s.timerAt !== undefined && s.timerAt <= at) return;
  s.timerAt = at;
  fx.push({ type: "arm", at });
}

/**
 * When plain progress may go. IM PATCH (no text interval): the card's interval since the last PATCH. CardKit:
 * markdown text the transport streams goes at the text interval; any other change waits the card's interval
 * since the last full update (the app's budget is shared with everyone's cards), and at least the text
 * interval since the last update of either kind. Text is spaced from the start of the last text update, not
 * the end of the last call: a call's time and the full update a step brings (once a second at most) do not come
 * out of the typewriter's pace, which was 3.8 updates/s instead of 5 in the bursts of the cardkit benchmark. At
 * most 5 text and 1 full update a second: the entity's 10 operations/s stay far off (the transport gates them).
 */
function plainDue(s: PublishState, shape: CardShape): number {
  const fast = s.limits.textIntervalMs;
  const pending = shape.pending;
  if (fast === undefined || pending === undefined) return s.lastSentAt + s.limits.intervalMs;
  const text = pending.text ? Math.max(s.lastTextAt + fast, s.lastSentAt) : Number.POSITIVE_INFINITY;
  const full = pending.full ? Math.max(fullDue(s), s.lastSentAt + fast) : Number.POSITIVE_INFINITY;
  const due = Math.min(text, full);
  // Nothing the transport sees differs (what the policy last sent is not what it shows): the render decides.
  return due === Number.POSITIVE_INFINITY ? s.lastSentAt + fast : due;
}

const fullDue = (s: PublishState) => s.lastFullAt + s.limits.intervalMs;

function onTurn(s: PublishState, fx: PublishEffect[]): void {
  // Read before patch, at the moment the budget allows it: under load a card can wait seconds in the app-wide
  // queue, and what goes out must be its state now. A callback that began meanwhile holds it.
  if (s.holds > 0) s.wantedWhileHeld = true;
  if (s.stopped || s.holds > 0) {
    fx.push({ type: "unused" });
    return;
  }
  s.attempt.version = s.version;
  fx.push({ type: "render", level: s.degrade, redaction: s.redaction });
}

function onRendered(
  s: PublishState,
  fx: PublishEffect[],
  event: { json: string; key: string; pending?: PendingChange },
  now: number,
): void {
  const { json, key, pending } = event;
  if (!s.confirming && (json === s.lastSentJson || json === s.lastFailedJson)) {
    s.stats.skipped += 1;
    fx.push({ type: "count", outcome: "skipped" }, { type: "unused" });
    if (json === s.lastSentJson) s.lastSentKey = key;
    s.handled = s.attempt.version;
    return;
  }
  s.attempt.json = json;
  s.attempt.key = key;
  s.attempt.full = pending === undefined || pending.full || !pending.text;
  // CardKit: a change only a full update shows waits for its interval (unless urgent or a confirmation); the
  // text that can stream goes meanwhile as element updates, and the rest stays pending.
  if (
    s.limits.textIntervalMs !== undefined &&
    pending?.full === true &&
    !isUrgent(s, key) &&
    now < fullDue(s)
  ) {
    if (!pending.text) {
      s.deferred = true;
      fx.push({ type: "unused" });
      return;
    }
    s.attempt.mode = "text";
    s.attempt.full = false;
    s.patching = true;
    s.lastTextAt = now;
    fx.push({ type: "patch", mode: "text" });
    return;
  }
  s.patching = true;
  if (!s.attempt.full) s.lastTextAt = now;
  fx.push({ type: "patch" });
}

function onLanded(s: PublishState, fx: PublishEffect[], now: number): void {
  const json = s.attempt.json;
  s.patching = false;
  if (s.attempt.mode === "text") {
    // Only the texts went: the card shows neither the last full state nor this one, and the change is not
    // handled until its full update lands.
    s.lastSentJson = undefined;
    return;
  }
  // Its answer came, but a callback began while it was on the wire: if the platform applied it before the
  // callback's answer, it was reverted (§2.3). What the card shows is not known; the reconcile sends again.
  s.lastSentJson = s.attempt.spanned ? undefined : json;
  s.lastSentKey = s.attempt.spanned ? undefined : s.attempt.key;
  // Every change since the last rendered state went out in this one PATCH: all but one coalesced.
  const folded = s.attempt.version - s.handled - 1;
  if (folded > 0) fx.push({ type: "count", outcome: "coalesced", count: folded });
  s.handled = s.attempt.version;
  s.confirming = false;
  watchUnanswered(s, fx, json, now);
}

/**
 * The platform now shows `json` (a PATCH landed, or a callback's answer carried it). A PATCH that got no answer
 * can still arrive on top of it until a request timeout after the first card shown after it; past that it is
 * forgotten, and a confirmation still armed for it is not needed. Until then, send the latest state once more
 * when it can no longer arrive (unless everything unanswered was this very card). Kept until then, not
 * cleared at the first landing: it can as well land on top of a later, different card (found by the
 * model-based test).
 */
function watchUnanswered(s: PublishState, fx: PublishEffect[], json: string | undefined, now: number): void {
  if (s.unansweredUntil !== undefined && now >= s.unansweredUntil) {
    s.unanswered = [];
    s.unansweredUntil = undefined;
    if (s.confirmAt !== undefined) fx.push({ type: "disarmConfirm" });
    s.confirmAt = undefined;
  }
  if (s.unanswered.length > 0 && s.unansweredUntil === undefined)
    s.unansweredUntil = now + s.limits.confirmAfterMs;
  if (s.unansweredUntil !== undefined && s.unanswered.some((sent) => sent !== json)) {
    if (s.confirmAt !== s.unansweredUntil) fx.push({ type: "armConfirm", at: s.unansweredUntil });
    s.confirmAt = s.unansweredUntil;
  }
}

function onDone(s: PublishState, fx: PublishEffect[], sent: boolean, shape: CardShape, now: number): void {
  if (sent) {
    s.lastSentAt = now;
    if (s.attempt.full !== false) s.lastFullAt = now;
    s.lastFailedJson = undefined;
    s.transientFailures = 0;
    s.rateFailures = 0;
    s.lateRetries = 0;
    if (s.lateRetryAt !== undefined) fx.push({ type: "disarmLate" });
    s.lateRetryAt = undefined;
    s.stats.sent += 1;
    fx.push({ type: "count", outcome: "sent" });
  }
  s.inFlight = false;
  // Skipped (no-op, held, stopped): nothing to reconcile; a release or the next change schedules again.
  // Given back because the full update was not due: scheduled for when it is.
  if (!sent) {
    if (s.deferred) schedule(s, fx, shape, now);
    s.deferred = false;
    return;
  }
  // Compare a render (cheap, no call) instead of queueing a PATCH that may well turn out a no-op.
  if (s.handled === s.version) fx.push({ type: "render", level: s.degrade, redaction: s.redaction });
  else schedule(s, fx, shape, now);
}
