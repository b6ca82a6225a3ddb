import { normalizeAnswer } from "../asks/answers.ts";
import { type ElicitField, type ElicitMapping, mapElicitForm } from "../asks/elicitation.ts";
import type { AskAnswer, AskQuestion } from "../asks/schema.ts";
import { strings } from "../strings/index.ts";
import { type FormFields, parseFormName, readFormFields } from "./form-fields.ts";

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
 * @param formName  the submitted form's name (form-fields.ts); fields of other forms are ignored. When
 *                  absent, any form's question fields count, so a card re-rendered with new indices still
 *                  maps (a form_value only ever holds the fields of the form that was submitted).
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
      chosenLabels(question, fields.choice.get(j)),
      customText(fields.custom.get(j)),
    );
    if (!answer) return { ok: false, reason: strings.needAnswer, questionIndex: j };
    answers.push(answer);
  }
  return { ok: true, answers };
}

/** A named form that is not one of ours holds none of our fields (null), unlike no name at all (any form). */
function collectFields(formValue: unknown, formName: string | undefined): FormFields {
  return readFormFields(formValue, formName === undefined ? undefined : (parseFormName(formName) ?? null));
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
    const choices = chosenIndices(question, fields.choice.get(j));
    const custom = customText(fields.custom.get(j)) ?? "";
    return { choices: question.multiSelect ? choices : choices.slice(0, 1), custom: custom.slice(0, 1000) };
  });
}

/**
 * An MCP server's form (asks/elicitation.ts) out of a `form_value`: its `ask{i}_f{j}` fields, then the
 * schema's mapping. `askIndex` undefined: any form's fields, as for mapFormValue.
 */
export function mapElicitFormValue(
  fields: readonly ElicitField[],
  formValue: unknown,
  askIndex: number | undefined,
): ElicitMapping {
  return mapElicitForm(fields, readFormFields(formValue, askIndex).elicit);
}
