import { isTerminal } from "../domain/types.ts";
import { USAGE_SEPARATOR, usageText } from "../domain/usage.ts";
import type { Strings } from "../strings/index.ts";
import { oneLine, truncate } from "../util/text.ts";
import type { ProgressValue } from "./actions.ts";
import type { Budget } from "./ask-context.ts";
import { askExtraButtons } from "./ask-extras.ts";
import type { CardAsk } from "./ask-form.ts";
import { escapeText, safeUrl, sanitizeMarkdown } from "./markdown.ts";
import type { CardNode, ColumnSetNode } from "./model.ts";
import type { ProgressView } from "./progress-view.ts";
import type { Redaction } from "./redaction.ts";
import { wordsIn } from "./steps.ts";

/**
 * The parts of the progress card around its steps and forms (progress.ts puts them together): the chat-list
 * summary, the outcome, the buttons, the footer lines, and where the card stands on the degrade and audit
 * ladders. Pure.
 */

export type DegradeLevel = 0 | 1 | 2;

/** Where a card stands on both ladders: the platform's refusals (230099/230025) and the tenant's audit (230028). */
export interface Rendering {
  level: DegradeLevel;
  redaction: Redaction;
}

export function summary(view: ProgressView, asks: readonly CardAsk[], s: Strings): string {
  if (asks.length > 0) {
    // An MCP server's form counts as one question.
    const questions = asks.reduce((n, ask) => n + Math.max(ask.questions.length, 1), 0);
    // The summary is plain text in everyone's chat list: no <at>, and no "你" that means only the sender.
    return view.chatType === "group"
      ? s.card.summaryWaitingSender(questions)
      : s.card.summaryWaiting(questions);
  }
  switch (view.status) {
    case "running":
      return s.card.summaryRunning(view.steps.filter((step) => step.status === "done").length);
    case "recovering":
      return s.recovering;
    case "completed":
      return s.card.summaryCompleted;
    case "failed":
      return s.card.summaryFailed(truncate(oneLine(errorIn(view, s)), 40));
    case "cancelled":
      return s.card.summaryCancelled;
    case "rejected":
      return s.card.summaryRejected;
  }
}

/**
 * The model's text: sanitized markdown, or (degraded) escaped plain text that cannot be refused again; masked
 * or withheld after the tenant's audit refused it (redaction.ts), with a line that says so.
 */
export function outcome(view: ProgressView, budget: Budget, s: Strings, rung: Rendering): CardNode[] {
  const body = (text: string) => truncate(text, budget.bodyChars, s.card.truncated);
  const plain = rung.level > 0;
  const modelText = (text: string) =>
    plain ? escapeText(body(text)) : sanitizeMarkdown(body(text), { imageText: s.card.image });
  const audit = auditNote(view, s, rung.redaction);
  const withheld = rung.redaction === "withheld";
  switch (view.status) {
    case "completed":
      return [
        { tag: "hr" },
        {
          tag: "markdown",
          content: `${s.card.resultHeading}\n${withheld ? audit : modelText(view.text ?? "")}`,
        },
        ...(audit && !withheld ? [{ tag: "markdown" as const, content: audit }] : []),
      ];
    case "failed": {
      const error = errorIn(view, s);
      const why = error || !withheld ? escapeText(body(error)) : audit;
      return [{ tag: "markdown", content: `${s.card.errorHeading}\n${why}` }];
    }
    default:
      // Cancelled: the header's tag says 已取消; the body adds nothing but what the run had written so far.
      if (withheld) return [{ tag: "markdown", content: audit }];
      return view.text
        ? [
            { tag: "markdown", content: modelText(view.text) },
            ...(audit ? [{ tag: "markdown" as const, content: audit }] : []),
          ]
        : [];
  }
}

/** What the card says once the tenant's audit refused it: what is hidden, and where the rest can be read. */
function auditNote(view: ProgressView, s: Strings, redaction: Rendering["redaction"]): string {
  if (redaction === "none") return "";
  if (redaction === "masked") return s.card.contactsMasked;
  const url = view.detailsUrl ? safeUrl(view.detailsUrl) : undefined;
  return url ? s.card.auditWithheldLink(url) : s.card.auditWithheld;
}

function errorIn(view: ProgressView, s: Strings): string {
  return wordsIn(view.errorWords, s) ?? view.error ?? "";
}

export function actionButtons(view: ProgressView, s: Strings, waiting: boolean): ColumnSetNode | undefined {
  const buttons: CardNode[] = [];
  const progress = (act: ProgressValue["act"]): ProgressValue => ({
    kind: "progress",
    act,
    sessionId: view.sessionId,
    runId: view.runId,
    sender: view.senderId,
  });
  // An outside agent's card has no run of ours behind 取消任务/重试: only the link, if any.
  const ours = view.agent === undefined;
  if (ours && (view.status === "running" || view.status === "recovering")) {
    buttons.push({
      tag: "button",
      text: { tag: "plain_text", content: s.card.cancelTask },
      type: "danger",
      // One click used to end the task: the client's own dialog asks first (D-button `confirm`).
      confirm: {
        title: { tag: "plain_text", content: s.card.cancelConfirmTitle },
        text: { tag: "plain_text", content: s.card.cancelConfirmText },
      },
      behaviors: [{ type: "callback", value: progress("cancel") }],
    });
  }
  // 延长 is the answerer's, whoever asked: an outside agent's question gets more time the same way.
  buttons.push(...askExtraButtons(view, waiting, s, progress));
  if (ours && (view.status === "failed" || view.status === "cancelled")) {
    buttons.push({
      tag: "button",
      text: { tag: "plain_text", content: s.card.retry },
      type: "primary",
      behaviors: [{ type: "callback", value: progress("retry") }],
    });
  }
  if (view.detailsUrl) {
    buttons.push({
      tag: "button",
      text: { tag: "plain_text", content: s.card.details },
      type: "default",
      behaviors: [{ type: "open_url", default_url: view.detailsUrl }],
    });
  }
  if (buttons.length === 0) return undefined;
  // Outside every form, so a click on 取消任务 never submits a half-filled form with it.
  return {
    tag: "column_set",
    flex_mode: "flow",
    horizontal_spacing: "8px",
    columns: buttons.map((button) => ({ tag: "column", width: "auto", elements: [button] })),
  };
}

/** `用时 12 秒 · ↑1,234 ↓567 · gpt-4o` once the run ended, if anything of its usage is known. */
export function usageFooter(view: ProgressView, s: Strings): string | undefined {
  if (!isTerminal(view) || !view.usage) return undefined;
  const { model } = view.usage;
  const usage = { ...view.usage, ...(model !== undefined ? { model: truncate(oneLine(model), 60) } : {}) };
  const used = usageText(usage, s.web.lang);
  if (used === undefined) return undefined;
  const took = elapsed(view, s);
  return took === undefined ? used : `${took}${USAGE_SEPARATOR}${used}`;
}

export function agentLine(view: ProgressView, s: Strings): string | undefined {
  if (view.agent === undefined) return undefined;
  const name = truncate(oneLine(view.agent), 40);
  const took = elapsed(view, s);
  return took === undefined ? s.agents.working(name) : s.agents.ended(name, took);
}

export function elapsed(view: ProgressView, s: Strings): string | undefined {
  if (view.endedAt === undefined) return undefined;
  return s.card.elapsed(Math.max(0, Math.round((view.endedAt - view.startedAt) / 1000)));
}
