import { strings } from "../strings.ts";
import type { AskAnswer, AskQuestion } from "./schema.ts";
import { LIMITS } from "./schema.ts";

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

/**
 * The one rule for what an answer is, shared by every surface (WebSocket, card form): blank custom text is
 * none; in a single-select question non-blank custom text wins and clears the choice (seed §4.4, DESIGN §6);
 * a question with neither a choice nor text has no answer (null).
 */
export function normalizeAnswer(
  question: AskQuestion,
  selectedLabels: readonly string[],
  custom: string | null,
): AskAnswer | null {
  const text = custom?.trim() ?? "";
  const customInput = text === "" ? null : [...text].slice(0, LIMITS.maxCustomInputChars).join("");
  const labels = question.multiSelect
    ? selectedLabels
    : customInput !== null
      ? []
      : selectedLabels.slice(0, 1);
  if (labels.length === 0 && customInput === null) return null;
  return { question: question.question, selectedLabels: [...labels], customInput };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
