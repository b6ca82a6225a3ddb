import type { AskQuestion } from "../asks/schema.ts";
import type { RunStatus } from "../harness/types.ts";
import { strings as defaultStrings, type Strings } from "../strings.ts";
import type { AskSubmitValue, ProgressValue } from "./actions.ts";
import type { Card, CardNode, ColumnSetNode, FormNode, TEMPLATES, TextTag } from "./model.ts";
import { CARD_LIMITS, cardSize, countComponents } from "./rules.ts";
import { escapeMarkdown, oneLine, previewBlock, sanitizeMarkdown, truncate } from "./text.ts";

/**
 * The progress card: a pure function of (run view, pending asks). Every PATCH re-renders the whole card,
 * so a form is part of the state and never "attached once" (seed feishu-card-ask §三).
 */

export interface ProgressStepView {
  title: string;
  status: "running" | "done" | "failed";
  summary?: string;
}

export interface ProgressView {
  sessionId: string;
  runId: string;
  /** The run's sender: the only person whose submit counts; carried in every button value. */
  senderId: string;
  title: string;
  status: RunStatus;
  steps: readonly ProgressStepView[];
  /** Streamed text while running; the final answer (markdown) when completed. */
  text?: string;
  error?: string;
  startedAt: number;
  endedAt?: number;
  /** 会话详情 link; never carries a token (a group card is the same for everyone). */
  detailsUrl?: string;
}

export interface CardAsk {
  requestId: string;
  questions: readonly AskQuestion[];
}

export interface BuildOptions {
  strings?: Strings;
  /** Most recent steps shown when nothing needs trimming. */
  maxStepsShown?: number;
  limits?: { maxBytes: number; maxComponents: number };
}

/** What the builder may spend; it starts generous and gives things up in a fixed order until the card fits. */
interface Budget {
  steps: number;
  previews: boolean;
  descriptionChars: number;
  optionList: "full" | "labels" | "none";
  bodyChars: number;
  questionChars: number;
  optionTextChars: number;
}

const FULL: Budget = {
  steps: 8,
  previews: true,
  descriptionChars: 500,
  optionList: "full",
  bodyChars: 6000,
  questionChars: 500,
  optionTextChars: 60,
};

/** Oldest steps first, then previews, then long descriptions, then the long texts (issue: degrade, never fail). */
const LADDER: ((b: Budget) => Budget)[] = [
  (b) => ({ ...b, steps: Math.min(b.steps, 3) }),
  (b) => ({ ...b, steps: Math.min(b.steps, 1) }),
  (b) => ({ ...b, previews: false }),
  (b) => ({ ...b, descriptionChars: 120 }),
  (b) => ({ ...b, descriptionChars: 40 }),
  (b) => ({ ...b, bodyChars: 2500 }),
  (b) => ({ ...b, bodyChars: 800 }),
  (b) => ({ ...b, steps: 0, questionChars: 120 }),
  (b) => ({ ...b, optionList: "labels", questionChars: 60 }),
  (b) => ({ ...b, optionList: "none", optionTextChars: 24, bodyChars: 300 }),
  (b) => ({ ...b, questionChars: 24, optionTextChars: 12, bodyChars: 100 }),
];

export function buildProgressCard(
  view: ProgressView,
  pendingAsks: readonly CardAsk[],
  options: BuildOptions = {},
): Card {
  const limits = options.limits ?? CARD_LIMITS;
  let budget: Budget = { ...FULL, steps: options.maxStepsShown ?? FULL.steps };
  let card = render(view, pendingAsks, budget, options.strings ?? defaultStrings);
  for (const give of LADDER) {
    if (fits(card, limits)) return card;
    budget = give(budget);
    card = render(view, pendingAsks, budget, options.strings ?? defaultStrings);
  }
  return card;
}

function fits(card: Card, limits: { maxBytes: number; maxComponents: number }): boolean {
  return cardSize(card) <= limits.maxBytes && countComponents(card) <= limits.maxComponents;
}

const LOOK: Record<RunStatus | "waiting", { template: (typeof TEMPLATES)[number] }> = {
  running: { template: "blue" },
  waiting: { template: "orange" },
  recovering: { template: "wathet" },
  completed: { template: "green" },
  failed: { template: "red" },
  cancelled: { template: "grey" },
};

function render(view: ProgressView, asks: readonly CardAsk[], budget: Budget, s: Strings): Card {
  const running = view.status === "running";
  // Terminal states and the recovery state render no form: nothing there can be answered any more.
  const shownAsks = running ? asks : [];
  const look = shownAsks.length > 0 ? "waiting" : view.status;
  const template = LOOK[look].template;
  const statusText = look === "waiting" ? s.card.status.waiting : s.card.status[view.status];
  const tag: TextTag = { tag: "text_tag", text: { tag: "plain_text", content: statusText }, color: template };

  const elements: CardNode[] = [];
  if (view.status === "recovering") elements.push({ tag: "markdown", content: `⏳ ${s.recovering}` });
  const steps = stepsMarkdown(view, budget, s);
  if (steps) elements.push({ tag: "markdown", content: steps });
  elements.push(...outcome(view, budget, s));
  if (shownAsks.length > 0) {
    elements.push({ tag: "hr" });
    elements.push(...shownAsks.map((ask, i) => askForm(view, ask, i, shownAsks.length, budget, s)));
  }
  const actions = actionButtons(view, s);
  if (actions) elements.push(actions);

  const subtitle = elapsed(view, s);
  return {
    schema: "2.0",
    config: { update_multi: true, width_mode: "fill", summary: { content: summary(view, shownAsks, s) } },
    header: {
      title: { tag: "plain_text", content: truncate(oneLine(view.title) || s.card.untitledTask, 60) },
      ...(subtitle ? { subtitle: { tag: "plain_text" as const, content: subtitle } } : {}),
      template,
      text_tag_list: [tag],
    },
    body: { elements },
  };
}

function summary(view: ProgressView, asks: readonly CardAsk[], s: Strings): string {
  if (asks.length > 0) return s.card.summaryWaiting(asks.reduce((n, ask) => n + ask.questions.length, 0));
  switch (view.status) {
    case "running":
      return s.card.summaryRunning(view.steps.filter((step) => step.status === "done").length);
    case "recovering":
      return s.recovering;
    case "completed":
      return s.card.summaryCompleted;
    case "failed":
      return s.card.summaryFailed(truncate(oneLine(view.error ?? ""), 40));
    case "cancelled":
      return s.card.summaryCancelled;
  }
}

function stepsMarkdown(view: ProgressView, budget: Budget, s: Strings): string | undefined {
  const total = view.steps.length;
  if (total === 0) return view.status === "running" ? s.card.noSteps : undefined;
  const shown = budget.steps > 0 ? view.steps.slice(-budget.steps) : [];
  const lines: string[] = [s.card.stepsHeading];
  if (total > shown.length) lines.push(s.card.earlierSteps(total - shown.length));
  for (const step of shown) {
    // Emoji, not standard_icon: the rich-text component renders standard emoji from Feishu's own image set
    // (no font needed in the client), while an icon can only prefix a whole element, not each step line.
    // Our own renderings (console, session page) draw these as SVG (console/public/icons.js).
    const icon = step.status === "done" ? "✅" : step.status === "failed" ? "❌" : "⏳";
    const title = escapeMarkdown(truncate(oneLine(step.title), 60));
    const note = step.summary ? ` · ${escapeMarkdown(truncate(oneLine(step.summary), 80))}` : "";
    lines.push(`${icon} ${title}${note}`);
  }
  return lines.join("\n");
}

function outcome(view: ProgressView, budget: Budget, s: Strings): CardNode[] {
  const body = (text: string) => truncate(text, budget.bodyChars, s.card.truncated);
  switch (view.status) {
    case "completed":
      return [
        { tag: "hr" },
        { tag: "markdown", content: `${s.card.resultHeading}\n${sanitizeMarkdown(body(view.text ?? ""))}` },
      ];
    case "failed":
      return [
        { tag: "markdown", content: `${s.card.errorHeading}\n${escapeMarkdown(body(view.error ?? ""))}` },
      ];
    case "cancelled":
      return [{ tag: "markdown", content: s.card.cancelledNote }];
    default:
      return view.text ? [{ tag: "markdown", content: sanitizeMarkdown(body(view.text)) }] : [];
  }
}

/** Names are unique across the whole card (`ask{i}_q{j}`), or a submit fails (feishu-platform §1.2 form). */
export function fieldNames(askIndex: number, questionIndex: number) {
  return {
    form: `ask${askIndex}`,
    choice: `ask${askIndex}_q${questionIndex}`,
    custom: `ask${askIndex}_c${questionIndex}`,
    submit: `ask${askIndex}_submit`,
  };
}

function askForm(
  view: ProgressView,
  ask: CardAsk,
  index: number,
  total: number,
  budget: Budget,
  s: Strings,
): FormNode {
  const elements: CardNode[] = [];
  ask.questions.forEach((question, j) => {
    const names = fieldNames(index, j);
    const heading = j === 0 ? `${s.card.askHeading(index + 1, total)}\n\n` : "";
    elements.push({ tag: "markdown", content: heading + questionMarkdown(question, budget, s) });
    const previews = question.multiSelect ? [] : question.options.filter((option) => option.preview);
    // Feishu has no side-by-side layout: each preview goes under the question, folded. Single-select only.
    if (budget.previews && previews.length > 0) {
      const content = previews
        .map((option) => `**${escapeMarkdown(option.label)}**\n${previewBlock(option.preview ?? "")}`)
        .join("\n\n");
      elements.push({
        tag: "collapsible_panel",
        expanded: false,
        header: {
          title: { tag: "markdown", content: `${s.card.previewTitle} · ${escapeMarkdown(question.header)}` },
        },
        elements: [{ tag: "markdown", content }],
      });
    }
    const options = question.options.map((option, k) => ({
      text: {
        tag: "plain_text" as const,
        content: truncate(oneLine(option.label) || `${k + 1}`, budget.optionTextChars),
      },
      // Index strings, not labels: labels may hold characters a value should not (seed §4.2).
      value: String(k),
    }));
    elements.push(
      question.multiSelect
        ? {
            tag: "multi_select_static",
            name: names.choice,
            required: false,
            placeholder: { tag: "plain_text", content: s.card.multiSelectPlaceholder },
            width: "fill",
            selected_values: [],
            options,
          }
        : {
            tag: "select_static",
            name: names.choice,
            required: false,
            placeholder: { tag: "plain_text", content: s.card.selectPlaceholder },
            width: "fill",
            options,
          },
    );
    elements.push({
      tag: "input",
      name: names.custom,
      required: false,
      placeholder: { tag: "plain_text", content: s.card.otherPlaceholder },
      max_length: 1000,
      width: "fill",
    });
  });
  const value: AskSubmitValue = {
    kind: "feishu_ask",
    act: "submit",
    sessionId: view.sessionId,
    requestId: ask.requestId,
    sender: view.senderId,
  };
  elements.push({
    tag: "button",
    name: fieldNames(index, 0).submit,
    text: { tag: "plain_text", content: s.card.submit },
    type: "primary_filled",
    form_action_type: "submit",
    behaviors: [{ type: "callback", value }],
  });
  return { tag: "form", name: fieldNames(index, 0).form, elements };
}

function questionMarkdown(question: AskQuestion, budget: Budget, s: Strings): string {
  const head = `**【${escapeMarkdown(question.header)}】** ${escapeMarkdown(truncate(oneLine(question.question), budget.questionChars))}`;
  if (budget.optionList === "none") return head;
  const lines = question.options.map((option) => {
    const label = `- **${escapeMarkdown(option.label)}**`;
    if (budget.optionList === "labels") return label;
    return `${label}${s.card.optionDescriptionSeparator}${escapeMarkdown(truncate(oneLine(option.description), budget.descriptionChars))}`;
  });
  return [head, ...lines].join("\n");
}

function actionButtons(view: ProgressView, s: Strings): ColumnSetNode | undefined {
  const buttons: CardNode[] = [];
  const progress = (act: ProgressValue["act"]): ProgressValue => ({
    kind: "progress",
    act,
    sessionId: view.sessionId,
    runId: view.runId,
    sender: view.senderId,
  });
  if (view.status === "running" || view.status === "recovering") {
    buttons.push({
      tag: "button",
      text: { tag: "plain_text", content: s.card.cancelTask },
      type: "danger",
      behaviors: [{ type: "callback", value: progress("cancel") }],
    });
  }
  if (view.status === "failed" || view.status === "cancelled") {
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

function elapsed(view: ProgressView, s: Strings): string | undefined {
  if (view.endedAt === undefined) return undefined;
  return s.card.elapsed(Math.max(0, Math.round((view.endedAt - view.startedAt) / 1000)));
}
