import { normalizeAnswer, type RuleAnswer } from "./answer-rule.ts";

/**
 * A text reply to a card as an answer to its pending question (issue 30): what a person types when they
 * quote the card instead of using its form. Pure, so the rule can be read and tested on its own; the answer
 * it makes goes through the same rule as the card's form (answer-rule.ts).
 *
 * - `2` (or `２`) picks option 2; `prod` picks the option labelled `prod`, in any case and width;
 * - for a multi-select, several of those, separated by commas, `、` or spaces: `1、3`, `dark, pdf`;
 * - for several questions, `1:2 2:暗色模式` (a full-width `：` too), or one line per question in order;
 * - anything else is the 其他 text of the question it was written for (the first one still unanswered).
 *
 * The result names the first question left without an answer, so the refusal is the card's own
 * (asks/answers.ts unansweredReason: 第 2 题「…」：请至少选择一项或填写其他).
 */

/** The surface a reply's answer is recorded under (the ask row's `answered_via`), beside feishu, websocket, mcp. */
export const REPLY_SURFACE = "reply";

export interface ReplyOption {
  label: string;
}

export interface ReplyQuestion {
  question: string;
  multiSelect: boolean;
  options: readonly ReplyOption[];
}

export type ReplyAnswer =
  | { ok: true; answers: RuleAnswer[] }
  /** `questionIndex` (from 0): the first question the reply left without a choice or text. */
  | { ok: false; questionIndex: number };

/** Where one piece of the reply went: chosen labels, or text for 其他. */
interface Piece {
  labels: string[];
  custom: string | null;
}

/** For matching only: full-width digits and punctuation folded (NFKC), case and runs of spaces ignored. */
function fold(text: string): string {
  return text.normalize("NFKC").toLowerCase().replace(/\s+/g, " ").trim();
}

/** `3` → the third option's label; an option's label in any case and width → that label. */
function optionFor(question: ReplyQuestion, token: string): string | undefined {
  const key = fold(token);
  if (/^[0-9]+$/.test(key)) {
    const option = question.options[Number(key) - 1];
    if (option) return option.label;
  }
  return question.options.find((option) => fold(option.label) === key)?.label;
}

/** Separators between the choices of a multi-select, after folding (NFKC makes `，` a `,`, `；` a `;`). */
const LIST_SEPARATORS = /[,、;]+/;

/** One question's part of the reply: its choices when every part names one, else the text for 其他. */
function pieceFor(question: ReplyQuestion, text: string): Piece {
  const trimmed = text.trim();
  const whole = optionFor(question, trimmed);
  if (whole !== undefined) return { labels: [whole], custom: null };
  if (question.multiSelect) {
    const folded = trimmed.normalize("NFKC");
    // Commas first, so a label with a space in it (`dark mode, pdf`) is still one choice; then spaces too.
    for (const separators of [LIST_SEPARATORS, /[,、;\s]+/]) {
      const parts = folded.split(separators).filter((part) => part.trim() !== "");
      if (parts.length < 2) continue;
      const labels = parts.map((part) => optionFor(question, part));
      if (labels.every((label) => label !== undefined)) return { labels: [...new Set(labels)], custom: null };
    }
  }
  return { labels: [], custom: trimmed === "" ? null : trimmed };
}

/** `1:2 2:暗色模式` → the text after each `N:` by question number; undefined when the reply is not in that form. */
function keyedParts(text: string, count: number): Map<number, string> | undefined {
  // A key is a number and a colon (either width) at the start or after a space, a comma, a `、` or a line
  // break. Matched on the text as typed, so a 其他 text after a key keeps its own characters.
  const key = /(^|[\s,，、;；])([0-9０-９]+)\s*[:：]/g;
  const body = text.trimStart();
  const marks = [...body.matchAll(key)].map((match) => ({
    number: Number(fold(match[2] ?? "")),
    start: (match.index ?? 0) + (match[1]?.length ?? 0),
    end: (match.index ?? 0) + match[0].length,
  }));
  if (marks.length === 0 || marks[0]?.start !== 0) return undefined;
  const parts = new Map<number, string>();
  for (const [i, mark] of marks.entries()) {
    if (mark.number < 1 || mark.number > count || parts.has(mark.number - 1)) return undefined;
    const value = body
      .slice(mark.end, marks[i + 1]?.start ?? body.length)
      .replace(/[\s,，、;；]+$/, "")
      .trim();
    parts.set(mark.number - 1, value);
  }
  return parts;
}

/**
 * What the reply says of each of `questions` (a card's questions in the card's numbering, across its asks):
 * the answer it makes, `null` where it names the question without a usable answer, `undefined` where it says
 * nothing of it. A bare answer (one piece of text, not keyed) is about the first question alone.
 */
export function readReply(
  questions: readonly ReplyQuestion[],
  text: string,
): (RuleAnswer | null | undefined)[] {
  const pieces: (Piece | undefined)[] = questions.map(() => undefined);
  const keyed = questions.length > 1 ? keyedParts(text, questions.length) : undefined;
  const lines = text.split(/\r?\n/).filter((line) => line.trim() !== "");
  if (keyed) {
    for (const [index, value] of keyed) pieces[index] = pieceFor(questions[index] as ReplyQuestion, value);
  } else if (questions.length > 1 && lines.length > 1 && lines.length <= questions.length) {
    lines.forEach((line, index) => {
      pieces[index] = pieceFor(questions[index] as ReplyQuestion, line);
    });
  } else if (questions[0]) {
    // One piece of text: it answers the first question, as a choice or as its 其他.
    pieces[0] = pieceFor(questions[0], text);
  }
  return questions.map((question, index) => {
    const piece = pieces[index];
    if (!piece) return undefined;
    return normalizeAnswer(question, piece.labels, piece.custom) ?? null;
  });
}

/** The reply as answers to `questions`, or the first question it leaves unanswered. */
export function parseReplyAnswer(questions: readonly ReplyQuestion[], text: string): ReplyAnswer {
  const read = readReply(questions, text);
  const answers: RuleAnswer[] = [];
  for (const [index, answer] of read.entries()) {
    if (!answer) return { ok: false, questionIndex: index };
    answers.push(answer);
  }
  return { ok: true, answers };
}
