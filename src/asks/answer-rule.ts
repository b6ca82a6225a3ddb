/**
 * The one rule for what an answer to a question is (seed ask-user-questions §4.4, DESIGN §6), shared by
 * every surface that produces or receives one: the server (asks/answers.ts for WebSocket and agent answers,
 * cards/form-value.ts for card forms) and the session page's question panel (web/public/question-panel.ts,
 * bundled for the browser from this same file). So it imports nothing: no zod, no strings, no Node.
 *
 * - blank 其他 text is none; kept text is trimmed and cut to MAX_CUSTOM_INPUT_CHARS characters;
 * - single-select: non-blank 其他 text wins and clears the choice, else at most the first label;
 * - multi-select: the labels and the text both go;
 * - neither a label nor text: no answer (null), and the question counts as unanswered.
 */

/** Longest 其他 text kept, in characters (code points), not UTF-16 units. */
export const MAX_CUSTOM_INPUT_CHARS = 1000;

/** What the rule needs of a question (asks/schema.ts AskQuestion has more). */
export interface RuleQuestion {
  question: string;
  multiSelect: boolean;
}

export interface RuleAnswer {
  question: string;
  selectedLabels: string[];
  customInput: string | null;
}

/** The answer `selectedLabels` and `custom` make, or null when they make none. */
export function normalizeAnswer(
  question: RuleQuestion,
  selectedLabels: readonly string[],
  custom: string | null,
): RuleAnswer | null {
  const text = custom?.trim() ?? "";
  const customInput = text === "" ? null : [...text].slice(0, MAX_CUSTOM_INPUT_CHARS).join("");
  const labels = question.multiSelect
    ? selectedLabels
    : customInput !== null
      ? []
      : selectedLabels.slice(0, 1);
  if (labels.length === 0 && customInput === null) return null;
  return { question: question.question, selectedLabels: [...labels], customInput };
}

/** Whether a question with these choices and this text is answered (the same rule, as a yes/no). */
export function isAnswered(
  question: RuleQuestion,
  selectedLabels: readonly string[],
  custom: string,
): boolean {
  return normalizeAnswer(question, selectedLabels, custom) !== null;
}
