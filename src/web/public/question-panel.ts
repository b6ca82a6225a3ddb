import {
  isAnswered as answered,
  MAX_CUSTOM_INPUT_CHARS,
  normalizeAnswer,
  type RuleAnswer,
} from "../../asks/answer-rule.ts";

/**
 * The web QuestionPanel (seed ask-user-questions-design §4), its pure half: the answer state of each
 * question, the Submit rule and the answers it sends. What an answer is comes from the server's own rule
 * (asks/answer-rule.ts, bundled in); this adds only how the inputs behave while someone is answering. No
 * DOM: runs in Node too (test/session-page.test.ts imports it). The panel's DOM is ask-panel.ts.
 */

export { MAX_CUSTOM_INPUT_CHARS };

export interface PanelOption {
  label: string;
  description: string;
  preview?: string;
}

export interface PanelQuestion {
  question: string;
  header: string;
  options: PanelOption[];
  multiSelect: boolean;
}

export interface QuestionState {
  readonly selected: readonly string[];
  readonly other: string;
}

export type PanelAnswer = RuleAnswer;

/** Nothing chosen, nothing typed, for every question. */
export function emptyState(questions: readonly PanelQuestion[]): QuestionState[] {
  return questions.map(() => ({ selected: [], other: "" }));
}

/**
 * Ticks (`checked`) or unticks an option. Single-select: choosing an option replaces the choice and clears
 * "其他" (seed §4.4). Multi-select: toggles the option and keeps "其他". Labels stay in the options' order.
 */
export function selectOption(
  question: PanelQuestion,
  state: QuestionState,
  label: string,
  checked = true,
): QuestionState {
  if (!question.options.some((option) => option.label === label)) return state;
  if (!checked) return { ...state, selected: state.selected.filter((chosen) => chosen !== label) };
  if (!question.multiSelect) return { selected: [label], other: "" };
  if (state.selected.includes(label)) return state;
  const selected = new Set([...state.selected, label]);
  return {
    ...state,
    selected: question.options.map((option) => option.label).filter((known) => selected.has(known)),
  };
}

/** Types into "其他". Single-select: non-blank text clears the choice (seed §4.4); multi-select keeps it. */
export function typeOther(question: PanelQuestion, state: QuestionState, text: string): QuestionState {
  if (!question.multiSelect && text.trim() !== "") return { selected: [], other: text };
  return { ...state, other: text };
}

/** A question counts as answered with a choice or non-blank "其他" text (seed decision #4): the rule's say. */
export function isAnswered(question: PanelQuestion, state: QuestionState): boolean {
  return answered(question, state.selected, state.other);
}

/**
 * Submit is enabled only when every question is answered, the viewer may answer (the run's sender),
 * and no answer from this panel is on its way.
 */
export function canSubmit(
  questions: readonly PanelQuestion[],
  states: readonly QuestionState[],
  flags: { canAnswer?: boolean; busy?: boolean } = {},
): boolean {
  const { canAnswer = true, busy = false } = flags;
  if (!canAnswer || busy) return false;
  return (
    questions.length > 0 &&
    states.length === questions.length &&
    questions.every((question, index) => {
      const state = states[index];
      return state !== undefined && isAnswered(question, state);
    })
  );
}

/**
 * The `answers` of an `ask_user_questions_result` frame: one per question, in order, `question` copied, as
 * the server's normalizeAnswer makes them (asks/answer-rule.ts). Only sent once canSubmit holds; a question
 * the rule finds unanswered goes as empty, which the server refuses with a clear error.
 */
export function collectAnswers(
  questions: readonly PanelQuestion[],
  states: readonly QuestionState[],
): PanelAnswer[] {
  return questions.map((question, index) => {
    const state = states[index] ?? { selected: [], other: "" };
    return (
      normalizeAnswer(question, state.selected, state.other) ?? {
        question: question.question,
        selectedLabels: [],
        customInput: null,
      }
    );
  });
}

/** Side-by-side preview layout: single-select questions with at least one option preview (seed §4.4). */
export function hasPreview(question: PanelQuestion): boolean {
  return (
    !question.multiSelect &&
    question.options.some((option) => typeof option.preview === "string" && option.preview.trim() !== "")
  );
}

/**
 * What the preview pane shows: the hovered option, else the chosen one; `text` is null when that option has
 * no preview, and `label` is null when nothing is chosen or hovered.
 */
export function previewFor(
  question: PanelQuestion,
  state: QuestionState,
  hoveredLabel: string | null = null,
): { label: string | null; text: string | null } {
  if (!hasPreview(question)) return { label: null, text: null };
  const label = hoveredLabel ?? state.selected[0] ?? null;
  const option = question.options.find((candidate) => candidate.label === label);
  if (!option) return { label: null, text: null };
  const preview = typeof option.preview === "string" && option.preview.trim() !== "" ? option.preview : null;
  return { label: option.label, text: preview === null ? null : unfence(preview) };
}

/** A preview that is one fenced code block shows as its code (it is displayed as code anyway). */
export function unfence(preview: string): string {
  const match = /^\s*(`{3,}|~{3,})[^\n]*\n([\s\S]*?)\n?\1\s*$/.exec(preview);
  return match ? (match[2] ?? "") : preview;
}
