import { numberedQuestionCount } from "../asks/question-numbers.ts";
import type { RunStatus } from "../domain/types.ts";
import { strings as defaultStrings, type Locale, type Strings } from "../strings/index.ts";
import { oneLine, truncate } from "../util/text.ts";
import type { AskContext, Budget } from "./ask-context.ts";
import { askExtraLines, askNotice } from "./ask-extras.ts";
import { askForm, askForms, type CardAsk, compactAsks } from "./ask-form.ts";
import { localizeCard } from "./i18n.ts";
import { escapeText } from "./markdown.ts";
import { type Card, type CardNode, type Template, type TextTag, tagColorFor } from "./model.ts";
import {
  actionButtons,
  agentLine,
  type DegradeLevel,
  elapsed,
  outcome,
  type Rendering,
  summary,
  usageFooter,
} from "./progress-body.ts";
import type { ProgressView } from "./progress-view.ts";
import { type Redaction, redactAsks, redactView } from "./redaction.ts";
import { CARD_LIMITS, cardSize, countComponents } from "./rules.ts";
import { stepsMarkdown } from "./steps.ts";
import { budgetTables } from "./tables.ts";

export { type CardAsk, fieldNames } from "./ask-form.ts";
export type { Redaction } from "./redaction.ts";
export type { ProgressStepView } from "./steps.ts";

/**
 * The progress card: a pure function of (run view, pending asks). Every PATCH re-renders the whole card,
 * so a form is part of the state and never "attached once" (seed feishu-card-ask §三).
 */

export interface BuildOptions {
  /** One language only; unset, the card carries every locale (the bot's as `content`). */
  strings?: Strings;
  /** The card's languages, the first as `content`; default: the bot's, then the others (strings/index.ts). */
  locales?: readonly Locale[];
  /** Most recent steps shown when nothing needs trimming. */
  maxStepsShown?: number;
  limits?: { maxBytes: number; maxComponents: number };
  /**
   * After the platform refused a card (230099 invalid content, 230025 too large): 1 shows the model's text as
   * escaped plain text, without previews, in a tighter size budget; 2 also halves that budget again.
   */
  degraded?: DegradeLevel;
  /** After the tenant's data-loss-prevention audit refused a card (230028): see redaction.ts. */
  redaction?: Redaction;
}

/** Size budgets per degrade level: headroom under the 30 KB limit, whose counting is undocumented. */
const BYTES_BY_LEVEL: Record<DegradeLevel, number> = {
  0: CARD_LIMITS.targetBytes,
  1: CARD_LIMITS.degradedBytes,
  2: CARD_LIMITS.degradedBytes / 2,
};

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

/**
 * The card in every locale (cards/i18n.ts), within the same budget; `options.strings` asks for one language.
 * A degraded card (the platform refused one) is in the bot's language alone: the i18n fields rest partly on
 * assumption (docs/feishu-platform.md §2.3), so the retry must not depend on them.
 */
export function buildProgressCard(
  view: ProgressView,
  pendingAsks: readonly CardAsk[],
  options: BuildOptions = {},
): Card {
  const redaction = options.redaction ?? "none";
  if (redaction !== "none") {
    view = redactView(view, redaction);
    pendingAsks = redactAsks(pendingAsks, redaction);
  }
  if (options.strings || (options.degraded ?? 0) > 0) return buildInOneLanguage(view, pendingAsks, options);
  const limits = limitsFor(options);
  return localizeCard(
    (strings, reserveBytes = 0) =>
      buildInOneLanguage(view, pendingAsks, {
        ...options,
        strings,
        limits: { ...limits, maxBytes: limits.maxBytes - reserveBytes },
      }),
    (card) => fits(card, limits),
    options.locales,
  );
}

function limitsFor(options: BuildOptions): { maxBytes: number; maxComponents: number } {
  return (
    options.limits ?? {
      maxBytes: BYTES_BY_LEVEL[options.degraded ?? 0],
      maxComponents: CARD_LIMITS.maxComponents,
    }
  );
}

function buildInOneLanguage(
  view: ProgressView,
  pendingAsks: readonly CardAsk[],
  options: BuildOptions,
): Card {
  const rung: Rendering = { level: options.degraded ?? 0, redaction: options.redaction ?? "none" };
  const limits = limitsFor(options);
  const base: Budget = { ...FULL, steps: options.maxStepsShown ?? FULL.steps, previews: rung.level === 0 };
  const s = options.strings ?? defaultStrings;
  // Fewer forms only when even the plainest text does not fit: a form beats every text the ladder trims.
  for (let full = formsThatFit(view, pendingAsks, base, s, rung, limits.maxComponents); ; full -= 1) {
    let budget = base;
    let card = render(view, pendingAsks, full, budget, s, rung);
    for (const give of LADDER) {
      if (fits(card, limits)) return card;
      budget = give(budget);
      card = render(view, pendingAsks, full, budget, s, rung);
    }
    if (fits(card, limits) || full <= 1) return card;
  }
}

/**
 * How many asks get a full form: as many as keep the card within the component limit (six asks of two
 * questions make ~246 and the card can no longer be updated); the rest share one compact block. The first
 * ask always gets its form. Trimming text does not change the count, so this is decided once, up front.
 */
function formsThatFit(
  view: ProgressView,
  asks: readonly CardAsk[],
  budget: Budget,
  s: Strings,
  rung: Rendering,
  maxComponents: number,
): number {
  if (view.status !== "running" || asks.length <= 1) return asks.length;
  // Counted without previews: a form is worth more than a preview, which the ladder drops when needed.
  // Components add up: the card with every ask compact, plus each form, minus the block once none is left.
  const lean = { ...budget, previews: false };
  const context: AskContext = {
    sessionId: view.sessionId,
    senderId: view.senderId,
    ...(view.chatType ? { chatType: view.chatType } : {}),
    budget: lean,
    strings: s,
  };
  let total = countComponents(render(view, asks, 0, lean, s, rung));
  let full = 0;
  for (const [i, ask] of asks.entries()) {
    const next =
      total + countComponents(askForm(ask, i, asks.length, context)) - (i === asks.length - 1 ? 1 : 0);
    if (next > maxComponents && full >= 1) break;
    total = next;
    full += 1;
  }
  return full;
}

function fits(card: Card, limits: { maxBytes: number; maxComponents: number }): boolean {
  return cardSize(card) <= limits.maxBytes && countComponents(card) <= limits.maxComponents;
}

const LOOK: Record<RunStatus | "waiting", { template: Template }> = {
  running: { template: "blue" },
  waiting: { template: "orange" },
  recovering: { template: "wathet" },
  completed: { template: "green" },
  failed: { template: "red" },
  cancelled: { template: "grey" },
  // The person said no: grey like a cancel, never a failure's red.
  rejected: { template: "grey" },
};

function render(
  view: ProgressView,
  asks: readonly CardAsk[],
  fullForms: number,
  budget: Budget,
  s: Strings,
  rung: Rendering,
): Card {
  const running = view.status === "running";
  // Terminal states and the recovery state render no form: nothing there can be answered any more.
  const shownAsks = running ? asks : [];
  const look = shownAsks.length > 0 ? "waiting" : view.status;
  const template = LOOK[look].template;
  const statusText = look === "waiting" ? s.card.status.waiting : s.card.status[view.status];
  const tag: TextTag = {
    tag: "text_tag",
    text: { tag: "plain_text", content: statusText },
    color: tagColorFor(template),
  };

  const elements: CardNode[] = [];
  if (view.status === "recovering") elements.push({ tag: "markdown", content: `⏳ ${s.recovering}` });
  const answerer = view.chatType === "group" ? { answerer: view.senderId } : {};
  const steps = stepsMarkdown({ ...view, ...answerer }, budget, s);
  if (steps) elements.push({ tag: "markdown", content: steps });
  elements.push(...outcome(view, budget, s, rung));
  // A cancelled card says so once, in its header's tag: not again as 任务已取消 and 问题已失效：已取消.
  const cancelledAsk = view.status === "cancelled" && view.notice?.kind === "cancelled";
  if (!cancelledAsk) elements.push(...askNotice(view, s, view.chatType === "group"));
  if (shownAsks.length > 0) {
    const context: AskContext = {
      sessionId: view.sessionId,
      senderId: view.senderId,
      ...(view.chatType ? { chatType: view.chatType } : {}),
      budget,
      strings: s,
      // Numbered across every open question ask, the compact ones too: a reply may name any of them.
      ...(numberedQuestionCount(shownAsks) > 1 ? { numbered: true as const } : {}),
    };
    const withForms = shownAsks.slice(0, fullForms);
    elements.push({ tag: "hr" });
    elements.push(...askForms(withForms, shownAsks.length, context));
    const rest = shownAsks.slice(fullForms);
    if (rest.length > 0) elements.push(compactAsks(rest, view.detailsUrl, s));
    // A reply answers the first question ask, never an MCP server's form (its fields are no options).
    if (view.replyToAnswer && shownAsks.some((ask) => !ask.elicitation))
      elements.push({ tag: "markdown", text_size: "notation", content: `💬 ${s.card.replyHint}` });
    elements.push(...askExtraLines(view, true, s));
  }
  const actions = actionButtons(view, s, shownAsks.length > 0);
  if (actions) elements.push(actions);
  const footer = usageFooter(view, s);
  if (footer) elements.push({ tag: "markdown", text_size: "notation", content: escapeText(footer) });

  // The footer says how long it took, with what it cost: the header does not say it again.
  const subtitle = agentLine(view, s) ?? (footer ? undefined : elapsed(view, s));
  // One table budget for the whole card: the result, and every preview panel (tables.ts).
  return budgetTables({
    schema: "2.0",
    config: { update_multi: true, width_mode: "fill", summary: { content: summary(view, shownAsks, s) } },
    header: {
      title: { tag: "plain_text", content: truncate(oneLine(view.title) || s.card.untitledTask, 60) },
      ...(subtitle ? { subtitle: { tag: "plain_text" as const, content: subtitle } } : {}),
      template,
      text_tag_list: [tag],
    },
    body: { elements },
  });
}
