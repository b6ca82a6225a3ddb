import type { AskOutcome, PendingAsk } from "../asks/pending.ts";
import { canExtend, EXTEND_MS } from "../asks/person-actions.ts";
import { REPLY_SURFACE } from "../asks/reply-answer.ts";
import type { AskExtrasView } from "../cards/ask-extras.ts";
import { formatDeadline as formatIn, type GoneQuestion } from "../cards/ask-words.ts";
import { inEveryLocale, type Localized, type Strings, strings } from "../strings/index.ts";

/**
 * Deadlines people can see (issue 16). The card writes the earliest pending deadline as an absolute time in
 * the configured zone (`请在 15:42 前回答`): it never changes by itself, so no PATCH ticks a countdown.
 *
 * Two reminders, two rules, one reason each (ask-reminder.ts has the first):
 * - the first ping says "a question appeared": a PATCH notifies nobody, so in groups one @-mention per card;
 *   none in private chats, where the reply that made the card already notified the sender.
 * - the expiry reminder says "this question is about to be lost": new information in every chat, so it goes
 *   to private chats too (a short message) and @-mentions the sender in groups; one per deadline (a 延长
 *   moves the deadline and re-arms it), kept across a restart, and none when the ask's whole time is shorter
 *   than ASK_REMIND_BEFORE_MS (it would come before, or with, the question itself).
 */

export interface AskTimes {
  timeZone: string;
  /** ASK_REMIND_BEFORE_MS; 0 sends no expiry reminder. */
  remindBeforeMs: number;
  /** One 延长: 15 minutes (the button says so). */
  extendMs: number;
  /** ASK_EXTEND_MAX_MS: what 延长 may add to one ask in all. */
  extendMaxMs: number;
}

export const DEFAULT_ASK_TIMES: AskTimes = {
  timeZone: "Asia/Shanghai",
  remindBeforeMs: 5 * 60_000,
  extendMs: EXTEND_MS,
  extendMaxMs: 60 * 60_000,
};

export function askTimes(partial: Partial<AskTimes> | undefined): AskTimes {
  return { ...DEFAULT_ASK_TIMES, ...partial };
}

/**
 * `15:42` in the zone, with the date (`12月2日 15:42`) when the deadline is not on the day of `now`: in the
 * bot's language by default, for texts that go out in one (the reminder message); a card words its own.
 */
export function formatDeadline(at: number, timeZone: string, now: number = at, s: Strings = strings): string {
  return formatIn(at, timeZone, now, s);
}

/**
 * The 延长 toast in every language, each writing the date its own way (12月2日, Dec 2), not just the sentence.
 * A toast is plain text, so the time names its zone (`15:30（GMT+8）`) as the reminder's does.
 */
export function extendedText(at: number, timeZone: string, now: number): Localized {
  return inEveryLocale((s) => s.asks.extended(deadlineInZone(at, timeZone, now, s)));
}

export function deadlineView(
  asks: readonly PendingAsk[],
  times: AskTimes,
  queuedBehind: number,
  notice: GoneQuestion | undefined,
  now: number,
): AskExtrasView {
  const view: AskExtrasView = {};
  if (notice) view.notice = notice;
  if (asks.length === 0) return view;
  const earliest = Math.min(...asks.map((ask) => ask.expiresAt));
  // The facts only: each language's rendering of the card writes the time and date in its own words.
  view.deadline = { at: earliest, timeZone: times.timeZone, now };
  if (asks.some((ask) => canExtend(ask, times))) {
    view.extendMinutes = Math.round(times.extendMs / 60_000);
  }
  if (queuedBehind > 0) view.queuedBehind = queuedBehind;
  return view;
}

/**
 * A deadline in a text message (the reminder): every reader sees the same text, so the time names its zone
 * (`15:42（GMT+8）`); a card shows each reader their own time instead.
 */
export function deadlineInZone(at: number, timeZone: string, now: number, s: Strings = strings): string {
  return s.asks.timeInZone(formatIn(at, timeZone, now, s), zoneName(timeZone, at));
}

/** `GMT+8`, `GMT-4:30`, `GMT` for UTC: the zone's offset at `at`, readable without knowing zone names. */
export function zoneName(timeZone: string, at: number): string {
  const part = new Intl.DateTimeFormat("en-US", { timeZone, timeZoneName: "shortOffset" })
    .formatToParts(at)
    .find((p) => p.type === "timeZoneName");
  return part?.value ?? timeZone;
}

/**
 * Why a question is gone, for the card to word; none when the card itself took the answer. An answer on
 * the session page keeps who gave it and when (`at`, the moment it settled), for 已在网页端回答.
 */
export function goneQuestion(
  outcome: AskOutcome,
  at = 0,
  timeZone = "Asia/Shanghai",
): GoneQuestion | undefined {
  switch (outcome.kind) {
    case "answered":
      if (outcome.surface === "websocket" || outcome.surface === REPLY_SURFACE) {
        const surface = outcome.surface === REPLY_SURFACE ? REPLY_SURFACE : "websocket";
        return { kind: "answered", surface, userId: outcome.userId, at, timeZone };
      }
      if (outcome.surface === "mcp") return { kind: "answered", surface: "mcp" };
      return undefined;
    case "declined":
      return { kind: "declined", userId: outcome.userId };
    case "timeout":
      return { kind: "timeout" };
    case "cancelled":
      return { kind: "cancelled" };
  }
}
