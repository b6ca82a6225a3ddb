import { strings } from "../strings.ts";
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
    if (!normalized) return { ok: false, error: `answers.${index}: ${strings.needAnswer}` };
    answers.push(normalized);
  }
  return { ok: true, answers };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
