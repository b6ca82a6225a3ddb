import { type Strings, strings } from "../strings/index.ts";
import { normalizeAnswer } from "./answer-rule.ts";
import type { AskAnswer, AskQuestion } from "./schema.ts";

export { normalizeAnswer };

/**
 * Checks answers that arrive from a client against the questions that were asked, and normalises them:
 * one answer per question in the original order, `question` copied from the ask, labels that exist,
 * at most one label for a single-select question, blank custom text treated as none.
 * Pure: shared by the WebSocket hub and any other surface that receives ready-made answers.
 */
export type AnswersCheck = { ok: true; answers: AskAnswer[] } | { ok: false; error: string };

export function checkAnswers(questions: readonly AskQuestion[], raw: unknown): AnswersCheck {
  if (!Array.isArray(raw)) return { ok: false, error: "answers must be an array" };
  if (raw.length !== questions.length) {
    return { ok: false, error: `answers must have ${questions.length} item(s), one per question` };
  }
  const answers: AskAnswer[] = [];
  for (const [index, question] of questions.entries()) {
    const item: unknown = raw.find(
      (candidate) => isRecord(candidate) && candidate.question === question.question,
    );
    const answer = item ?? raw[index];
    if (!isRecord(answer)) return { ok: false, error: `answers.${index} must be an object` };
    const labels = answer.selectedLabels ?? [];
    if (!Array.isArray(labels) || !labels.every((label) => typeof label === "string")) {
      return { ok: false, error: `answers.${index}.selectedLabels must be an array of strings` };
    }
    const custom = answer.customInput ?? null;
    if (custom !== null && typeof custom !== "string") {
      return { ok: false, error: `answers.${index}.customInput must be a string or null` };
    }
    const known = new Set(question.options.map((option) => option.label));
    const unknown = labels.find((label) => !known.has(label));
    if (unknown !== undefined) return { ok: false, error: `answers.${index}: "${unknown}" is not an option` };
    const unique = [...new Set(labels as string[])];
    if (!question.multiSelect && unique.length > 1) {
      return { ok: false, error: `answers.${index}: "${question.header}" allows one choice` };
    }
    const normalized = normalizeAnswer(question, unique, custom);
    if (!normalized) return { ok: false, error: unansweredReason(strings, questions, index) };
    answers.push(normalized);
  }
  return { ok: true, answers };
}

/**
 * Why an answer was refused when question `index` (from 0) has neither a choice nor text, in the words of
 * catalogue `s`: `第 1 题「部署方式」：请至少选择一项或填写其他`, the seed's words after the question they are
 * about. The one place that text is made: the card's toast (in every locale), the WebSocket hub's
 * `invalid_answers` error and so the session page, and the benchmarks' oracle all call this.
 */
export function unansweredReason(s: Strings, questions: readonly AskQuestion[], index: number): string {
  const question = questions[index];
  if (!question) return s.needAnswer;
  // A toast is one line: a header is trimmed and visible (schema.ts) but may still hold a line break.
  return s.unanswered(index + 1, question.header.replace(/[\s\p{Cc}]+/gu, " ").trim());
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
