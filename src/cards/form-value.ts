import { normalizeAnswer } from "../asks/answers.ts";
import type { AskAnswer, AskQuestion } from "../asks/schema.ts";
import { strings } from "../strings.ts";

/**
 * Turns a card submit's `form_value` back into the tool's answers (DESIGN §6, seed feishu-card-ask §4.3).
 * Defensive by design: Feishu may send an unfilled field as absent, `""` or `[]` (UNCONFIRMED which), and a
 * forged callback may send anything. Nothing here throws; a bad value counts as empty.
 */

export type FormMapping =
  | { ok: true; answers: AskAnswer[] }
  | { ok: false; reason: string; questionIndex: number };

/**
 * @param questions the original ask's questions (their texts are copied into the answers)
 * @param formValue `action.form_value` as received
 * @param formName  the submitted form's name (`ask{i}`); fields of other forms are ignored. When absent,
 *                  any `ask{n}_q{j}` / `ask{n}_c{j}` field counts, so a card re-rendered with new indices
 *                  still maps (a form_value only ever holds the fields of the form that was submitted).
 */
export function mapFormValue(
  questions: readonly AskQuestion[],
  formValue: unknown,
  formName?: string,
): FormMapping {
  const fields = collectFields(formValue, formName);
  const answers: AskAnswer[] = [];
  for (const [j, question] of questions.entries()) {
    const answer = normalizeAnswer(
      question,
      chosenLabels(question, fields.choices.get(j)),
      customText(fields.customs.get(j)),
    );
    if (!answer) return { ok: false, reason: strings.needAnswer, questionIndex: j };
    answers.push(answer);
  }
  return { ok: true, answers };
}

const FIELD = /^ask(\d{1,3})_([qc])(\d{1,2})$/;

function collectFields(formValue: unknown, formName: string | undefined) {
  const choices = new Map<number, unknown>();
  const customs = new Map<number, unknown>();
  if (typeof formValue !== "object" || formValue === null || Array.isArray(formValue))
    return { choices, customs };
  for (const [key, value] of Object.entries(formValue)) {
    const match = FIELD.exec(key);
    if (!match) continue;
    const [, form, kind, question] = match;
    if (formName !== undefined && `ask${form}` !== formName) continue;
    (kind === "q" ? choices : customs).set(Number(question), value);
  }
  return { choices, customs };
}

/** Index strings back to labels, in the options' order, unknown indices and odd types ignored. */
function chosenLabels(question: AskQuestion, raw: unknown): string[] {
  return chosenIndices(question, raw).map((index) => question.options[index]?.label ?? "");
}

function chosenIndices(question: AskQuestion, raw: unknown): number[] {
  const values = Array.isArray(raw) ? raw : raw === undefined || raw === null ? [] : [raw];
  const picked = new Set<number>();
  for (const value of values) {
    if (typeof value !== "string" || !/^\d{1,2}$/.test(value)) continue;
    const index = Number(value);
    if (index < question.options.length) picked.add(index);
  }
  return [...picked].sort((a, b) => a - b);
}

function customText(raw: unknown): string | null {
  return typeof raw === "string" ? raw : null;
}

/** Per question, what a submit carried: the chosen option indices and the 其他 text. */
export type FormDraft = readonly { choices: readonly number[]; custom: string }[];

/**
 * What a submit that did not complete the ask carried, so the card answering it (and every later render)
 * shows the form as the person left it instead of empty. Same defensive reading as mapFormValue.
 */
export function readDraft(
  questions: readonly AskQuestion[],
  formValue: unknown,
  formName?: string,
): FormDraft {
  const fields = collectFields(formValue, formName);
  return questions.map((question, j) => {
    const choices = chosenIndices(question, fields.choices.get(j));
    const custom = customText(fields.customs.get(j)) ?? "";
    return { choices: question.multiSelect ? choices : choices.slice(0, 1), custom: custom.slice(0, 1000) };
  });
}
