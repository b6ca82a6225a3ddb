import { nextRedaction, type PatchFailure, type PublishEffect, type PublishState } from "./publish-state.ts";

/**
 * What the publisher's policy (publish-policy.ts) does when a PATCH fails, and how it stops: back off on
 * 230020/429, re-render degraded on 230099/230025, masked then withheld on 230028, stop for good on 230031/230011/230110, bounded retries of a
 * failing platform, then a few late retries of the latest state. Rules on the draft state `decide` passes in,
 * with the effects they add; pure, like the rest of the policy.
 */

export function onFailure(s: PublishState, fx: PublishEffect[], failure: PatchFailure, now: number): void {
  const json = s.attempt.json ?? "";
  if (failure.kind === "unexpected") {
    s.stats.failed += 1;
    s.lastFailedJson = json;
    s.handled = s.attempt.version;
    s.confirming = false;
    fx.push(
      { type: "count", outcome: "failed" },
      { type: "log", level: "error", message: "card patch failed unexpectedly", fields: {}, err: "raw" },
    );
    return;
  }
  const code = failure.code;
  const counted = code === undefined ? {} : { code };
  if (failure.gone) {
    fx.push(
      { type: "count", outcome: "stopped", ...counted },
      {
        type: "log",
        level: "warn",
        message: "card can no longer be updated; publishing stopped",
        fields: { code },
      },
    );
    stop(s, fx);
    fx.push({ type: "gone" });
    return;
  }
  if (failure.rateLimited) {
    s.stats.rateLimited += 1;
    fx.push({ type: "count", outcome: "rate_limited", ...counted });
    s.rateFailures += 1;
    if (s.rateFailures > s.limits.maxRateLimitRetries) return giveUp(s, fx, json, code, now);
    // 230020 is the per-message window (5/s): a second is enough. An app-wide 429 without a reset header
    // backs off exponentially.
    const waitMs =
      failure.retryAfterMs ??
      (failure.perMessage ? 1000 : Math.min(1000 * 2 ** (s.rateFailures - 1), 30_000));
    s.backoffUntil = now + waitMs;
    fx.push({
      type: "log",
      level: "info",
      message: "card patch rate-limited; retrying the latest state",
      fields: { code, waitMs },
    });
    return;
  }
  const redaction = failure.audited ? nextRedaction(s.redaction) : undefined;
  if (redaction !== undefined) {
    // The tenant's audit refused what the card says (230028): the same text would be refused again, and
    // every later state carries it. Re-render it masked, then without the model's text; urgent, as below.
    s.redaction = redaction;
    s.lastSentKey = undefined;
    fx.push(
      { type: "count", outcome: "degraded", ...counted },
      {
        type: "log",
        level: "warn",
        message: "card refused by the tenant's data-loss-prevention audit; re-rendering it redacted",
        fields: { code, redaction },
        err: "described",
      },
    );
    return;
  }
  if (failure.refused && s.degrade < 2) {
    // Re-render plainer before giving up; urgent, since what is on the card is an older state.
    s.degrade = s.degrade === 0 ? 1 : 2;
    s.lastSentKey = undefined;
    fx.push(
      { type: "count", outcome: "degraded", ...counted },
      {
        type: "log",
        level: "warn",
        message: "card refused by the platform; re-rendering it degraded",
        fields: { code, level: s.degrade },
        err: "described",
      },
    );
    return;
  }
  if (failure.transient) {
    if (!failure.answered && json) {
      // No answer: the platform may have applied this card, or may still. What is on the card is unknown.
      s.unanswered = [...s.unanswered, json];
      s.unansweredUntil = undefined; // its window opens at the next landing
      s.lastSentJson = undefined;
    }
    s.transientFailures += 1;
    if (s.transientFailures > s.limits.maxTransientRetries) return giveUp(s, fx, json, code, now);
    s.backoffUntil = now + 500 * 2 ** (s.transientFailures - 1);
    fx.push({
      type: "log",
      level: "warn",
      message: "card patch failed; retrying",
      fields: {},
      err: "described",
    });
    return;
  }
  giveUp(s, fx, json, code);
}

/**
 * This exact card will not be tried again now; the next different state will. Given up after the retries on
 * a failing platform (`now` passed), the latest state is also tried again later, a bounded number of times:
 * a 4xx or a refusal would fail the same way, so those are not.
 */
function giveUp(
  s: PublishState,
  fx: PublishEffect[],
  json: string,
  code: number | undefined,
  now?: number,
): void {
  s.stats.failed += 1;
  s.lastFailedJson = json;
  s.handled = s.attempt.version;
  s.confirming = false;
  s.transientFailures = 0;
  s.rateFailures = 0;
  fx.push(
    { type: "count", outcome: "failed", ...(code === undefined ? {} : { code }) },
    { type: "log", level: "error", message: "card patch given up", fields: { code }, err: "described" },
  );
  const delay = now === undefined ? undefined : s.limits.lateRetryDelaysMs[s.lateRetries];
  if (now === undefined || delay === undefined || s.stopped) return;
  s.lateRetries += 1;
  s.lateRetryAt = now + delay;
  fx.push(
    { type: "armLate", at: s.lateRetryAt },
    {
      type: "log",
      level: "warn",
      message: "card patch will be tried again later",
      fields: { code, waitMs: delay },
    },
  );
}

export function stop(s: PublishState, fx: PublishEffect[]): void {
  s.stopped = true;
  if (s.lateRetryAt !== undefined) fx.push({ type: "disarmLate" });
  s.lateRetryAt = undefined;
  disarm(s, fx);
  if (s.confirmAt !== undefined) fx.push({ type: "disarmConfirm" });
  s.confirmAt = undefined;
}

export function disarm(s: PublishState, fx: PublishEffect[]): void {
  if (s.timerAt !== undefined) fx.push({ type: "disarm" });
  s.timerAt = undefined;
}
