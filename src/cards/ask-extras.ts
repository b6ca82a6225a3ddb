import type { Strings } from "../strings/index.ts";
import type { ProgressValue } from "./actions.ts";
import { type DeadlineFact, deadlineMarkup, type GoneQuestion, goneNoticeText } from "./ask-words.ts";
import { escapeText } from "./markdown.ts";
import type { CardNode } from "./model.ts";

/**
 * What a waiting card says besides its forms (issue 16): the deadline as an absolute time in each viewer's
 * zone (no ticking PATCHes), a message waiting behind the question, and — once a question is gone — why, in one line.
 * Its buttons (延长, 取消并处理新消息) sit with the card's other buttons, outside every form.
 */
export interface AskExtrasView {
  /** The earliest pending deadline; each language's rendering writes it (`15:42`, `12月2日 15:42`). */
  deadline?: DeadlineFact;
  /** 延长 N 分钟 is offered (the bound is not reached). */
  extendMinutes?: number;
  /** Messages queued behind the question. */
  queuedBehind?: number;
  /** Why the last question is gone, worded per language (问题已失效：已超时), shown until the run ends. */
  notice?: GoneQuestion;
}

export function askExtraLines(view: AskExtrasView, waiting: boolean, s: Strings): CardNode[] {
  const lines: CardNode[] = [];
  if (waiting && view.deadline) {
    const { at, timeZone, now } = view.deadline;
    // In each viewer's own zone (<local_datetime>): a group's members, or a Lark tenant, are not all in one.
    lines.push({ tag: "markdown", content: `⏰ ${s.asks.deadline(deadlineMarkup(at, timeZone, now))}` });
  }
  if (waiting && view.queuedBehind)
    lines.push({ tag: "markdown", content: `✉️ ${s.asks.queuedBehind(view.queuedBehind)}` });
  return lines;
}

/**
 * `group`: the card is read by the whole chat, so an answer on the session page names who gave it (an
 * `<at>`, which Feishu shows as the name); the rest of the line is escaped text.
 */
export function askNotice(view: AskExtrasView, s: Strings, group = false): CardNode[] {
  const { notice } = view;
  if (!notice) return [];
  // Letters only, so escaping leaves them as they are and they can be swapped for tags afterwards.
  const marker = "ZZANSWERERZZ";
  const timeMarker = "ZZANSWEREDATZZ";
  // Answered elsewhere than on the card (the page, a reply): who and when, as a success.
  const onWeb = notice.kind === "answered" && notice.surface !== "mcp";
  const named = group && (onWeb || notice.kind === "declined");
  const text = escapeText(
    goneNoticeText(notice, s, named ? marker : undefined, onWeb ? timeMarker : undefined),
  );
  let content = named ? text.replace(marker, `<at id=${notice.userId}></at>`) : text;
  // When it was answered, in each viewer's own zone, like the deadline: a bare 15:42 is Shanghai time to a
  // reader in Berlin (issue 25).
  if (onWeb) content = content.replace(timeMarker, deadlineMarkup(notice.at, notice.timeZone, notice.at));
  return [{ tag: "markdown", content }];
}

export function askExtraButtons(
  view: AskExtrasView,
  waiting: boolean,
  s: Strings,
  progress: (act: ProgressValue["act"]) => ProgressValue,
): CardNode[] {
  if (!waiting) return [];
  const buttons: CardNode[] = [];
  if (view.extendMinutes) {
    buttons.push({
      tag: "button",
      text: { tag: "plain_text", content: s.asks.extend(view.extendMinutes) },
      type: "default",
      behaviors: [{ type: "callback", value: progress("extend") }],
    });
  }
  if (view.queuedBehind) {
    buttons.push({
      tag: "button",
      text: { tag: "plain_text", content: s.asks.replace },
      type: "default",
      behaviors: [{ type: "callback", value: progress("replace") }],
    });
  }
  return buttons;
}
