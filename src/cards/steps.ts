import { ASK_TOOL_NAME } from "../asks/schema.ts";
import { PLAN_STEP_TOOL, type RunStatus, type StepStatus } from "../domain/types.ts";
import { catalogues, LOCALES, type Strings } from "../strings/index.ts";
import { oneLine, truncate } from "../util/text.ts";
import type { Budget } from "./ask-context.ts";
import { escapeText } from "./markdown.ts";

/**
 * The progress card's step list: a plan's entries, then the most recent tool calls. A step the bot named
 * carries its words in every language, and each rendering picks its own (issue 19); a step an agent or a
 * model named reads as they wrote it. Pure.
 */

export interface ProgressStepView {
  /** `PLAN_STEP_TOOL` marks a plan entry, kept in view however many tool steps follow. */
  tool?: string;
  title: string;
  status: StepStatus;
  summary?: string;
  /** The bot's words of title and summary by locale (等待你的回答 / Waiting for your answer). */
  words?: { title?: Readonly<Record<string, string>>; summary?: Readonly<Record<string, string>> };
}

/**
 * ⬜ is a plan entry or call not begun yet: a checklist reads wrong if it looks already under way.
 * Emoji, not standard_icon: the rich-text component renders standard emoji from Feishu's own image set (no
 * font needed in the client), while an icon can only prefix a whole element, not each step line. Our own
 * renderings (console, session page) draw these as SVG (web/public/icons.ts).
 */
const STEP_ICONS: Record<ProgressStepView["status"], string> = {
  pending: "⬜",
  running: "⏳",
  done: "✅",
  failed: "❌",
  // Cancelled while under way, or refused by the person: grey, not the red of a failure.
  stopped: "⏹️",
};

/** The text of `words` in the language of catalogue `s`, if it has one. */
export function wordsIn(words: Readonly<Record<string, string>> | undefined, s: Strings): string | undefined {
  const locale = LOCALES.find((code) => catalogues[code] === s);
  const text = locale === undefined ? undefined : words?.[locale];
  return text === "" ? undefined : text;
}

/**
 * `answerer`: in a group, whom the bot's own 等待你的回答 step waits for (an open id): everyone reads the card,
 * so it names that person (`等待 @Bob 回答`, an `<at>` Feishu shows as the name) instead of 你.
 */
export function stepsMarkdown(
  view: { steps: readonly ProgressStepView[]; status: RunStatus; answerer?: string },
  budget: Pick<Budget, "steps">,
  s: Strings,
): string | undefined {
  const total = view.steps.length;
  if (total === 0) return view.status === "running" ? s.card.noSteps : undefined;
  // A plan is the task's checklist: its entries stay on the card while older tool steps give way.
  const plan = view.steps.filter((step) => step.tool === PLAN_STEP_TOOL).slice(0, budget.steps);
  const others = view.steps.filter((step) => step.tool !== PLAN_STEP_TOOL);
  const recent = budget.steps > 0 ? others.slice(-budget.steps) : [];
  const hidden = total - plan.length - recent.length;
  const line = (step: ProgressStepView) => {
    // A step without words of its own reads as its agent wrote it.
    const titleText = wordsIn(step.words?.title, s) ?? step.title;
    // A cancelled task's question ended with it: its 提问已取消 would repeat the header's 已取消.
    const endedByCancel =
      view.status === "cancelled" && step.tool === ASK_TOOL_NAME && step.status !== "done";
    const summaryText = endedByCancel ? undefined : (wordsIn(step.words?.summary, s) ?? step.summary);
    // Only the bot's own 等待你的回答 is reworded: a step titled otherwise (请求权限：…) keeps its words.
    const named =
      view.answerer !== undefined &&
      step.tool === ASK_TOOL_NAME &&
      LOCALES.every((code) => step.words?.title?.[code] === catalogues[code].model.askTitle);
    const title = named
      ? s.card.askStepGroup(`<at id=${view.answerer}></at>`)
      : escapeText(truncate(oneLine(titleText), 60));
    // A stopped step says so when it has nothing else to say: ⏹️ alone reads like a media button.
    const noteText = summaryText ?? (step.status === "stopped" ? s.card.stepStopped : undefined);
    const note = noteText ? ` · ${escapeText(truncate(oneLine(noteText), 80))}` : "";
    return `${STEP_ICONS[step.status]} ${title}${note}`;
  };
  return [
    s.card.stepsHeading,
    ...plan.map(line),
    ...(hidden > 0 ? [s.card.earlierSteps(hidden)] : []),
    ...recent.map(line),
  ].join("\n");
}
