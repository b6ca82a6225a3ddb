import type { Strings } from "../strings/index.ts";

/**
 * The facts a waiting card words in each reader's language (issue 19). A shared group card is rendered once
 * per locale (i18n.ts), so anything the bot says must reach the builder as a fact — a timestamp and its
 * zone, why a question is gone — and be worded there with that rendering's catalogue. Words made earlier,
 * in the bot's language, would sit unchanged inside every other language's sentence. Pure.
 */

/** A deadline: when, in which zone, and the moment the card is drawn (to say the date when it is not today). */
export interface DeadlineFact {
  at: number;
  timeZone: string;
  now: number;
}

/**
 * Why the run's last question ended without an answer from the card itself. An answer on the session page
 * (`websocket`) or in a text reply quoting the card (`reply`, issue 30) is a success, said as one with who,
 * where and when (已在网页端回答, 已回复卡片作答); only a timeout or a cancel is 问题已失效.
 */
export type GoneQuestion =
  | { kind: "timeout" }
  | { kind: "cancelled" }
  | { kind: "answered"; surface: "websocket" | "reply"; userId: string; at: number; timeZone: string }
  | { kind: "answered"; surface: "mcp" }
  /** 拒绝回答: the person's choice, said as such (not 问题已失效). */
  | { kind: "declined"; userId: string };

/** `15:42` in the zone, with the catalogue's date (`12月2日 15:42`, `Dec 2 15:42`) when not on `now`'s day. */
export function formatDeadline(at: number, timeZone: string, now: number, s: Strings): string {
  // en-US only to read the numbers out: the words around them (the date) come from the catalogue.
  const format = new Intl.DateTimeFormat("en-US", {
    timeZone,
    month: "numeric",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  });
  const parts = (when: number) => {
    const byType = new Map(format.formatToParts(when).map((part) => [part.type, part.value]));
    return {
      day: `${byType.get("month")}/${byType.get("day")}`,
      month: Number(byType.get("month")),
      dayOfMonth: Number(byType.get("day")),
      time: `${byType.get("hour")}:${byType.get("minute")}`,
    };
  };
  const deadline = parts(at);
  if (deadline.day === parts(now).day) return deadline.time;
  return `${s.asks.deadlineDate(deadline.month, deadline.dayOfMonth)} ${deadline.time}`;
}

/**
 * The deadline as card markdown shows it to each viewer in their own time zone: the documented
 * `<local_datetime millisecond='…' format_type='time'>` tag (富文本 国际化时间: "支持自动展示用户当地时区下的
 * 时间"), with a `date_short` one before it when the deadline is not on `now`'s day in the card's zone. Text
 * drawn in one zone (`05:42`) is Shanghai time to a reader in Berlin, with nothing saying so (issue 23).
 */
export function deadlineMarkup(at: number, timeZone: string, now: number): string {
  const tag = (format: string) =>
    `<local_datetime millisecond='${Math.round(at)}' format_type='${format}'></local_datetime>`;
  const day = (when: number) =>
    new Intl.DateTimeFormat("en-US", { timeZone, year: "numeric", month: "numeric", day: "numeric" }).format(
      when,
    );
  return day(at) === day(now) ? tag("time") : `${tag("date_short")} ${tag("time")}`;
}

/**
 * The card's one line about a gone question (问题已失效：已超时。…), in the catalogue `s`, as plain text.
 * `mention` words the answerer in a group (an `<at>` the caller adds after escaping); absent, 你 is meant.
 * `time` stands where the answer's time goes (a `<local_datetime>` the caller adds after escaping); absent,
 * the time in the gone question's zone.
 */
export function goneNoticeText(gone: GoneQuestion, s: Strings, mention?: string, time?: string): string {
  switch (gone.kind) {
    case "timeout":
      return `${s.asks.goneLine(s.asks.gone.timeout)}${s.asks.sentenceBreak}${s.asks.timedOut}`;
    case "cancelled":
      return s.asks.goneLine(s.asks.gone.cancelled);
    case "declined":
      return mention === undefined ? s.asks.declinedNotice : s.asks.declinedBy(mention);
    case "answered": {
      if (gone.surface === "mcp") return s.asks.answeredByCaller;
      const at = time ?? formatDeadline(gone.at, gone.timeZone, gone.at, s);
      if (gone.surface === "reply")
        return mention === undefined ? s.asks.answeredByReplyYou(at) : s.asks.answeredByReplyBy(mention, at);
      return mention === undefined ? s.asks.answeredOnWebYou(at) : s.asks.answeredOnWebBy(mention, at);
    }
  }
}
