/**
 * The one owner of the names our card forms carry, and of reading them back from a callback. The card
 * builders (ask-form.ts, elicit-form.ts) write these names; the callback side (form-value.ts,
 * feishu/card-actions.ts) reads `action.name` and `action.form_value` keys through the parsers here, so a
 * renamed field cannot drift between the two halves. Pure.
 *
 * Names are unique across the whole card, or a submit fails (feishu-platform §1.2 form), so each carries the
 * index of its form on the card:
 *   form                 `ask{i}`
 *   question j's choice  `ask{i}_q{j}`      (select_static / multi_select_static; values are option indices)
 *   question j's 其他     `ask{i}_c{j}`      (input)
 *   MCP form field j     `ask{i}_f{j}`      (asks/elicitation.ts)
 *   a button             `ask{i}_{act}`     (submit / decline / cancel, all submit buttons of the form)
 *   stacked asks' form   `asks`, its one submit `asks_submit` (two or more question asks share one form,
 *                        each keeping its `ask{i}_…` field names; the button's value says which ask is `i`)
 * The parsers accept only what the builders write (plain decimal indices, no leading zeros, bounded
 * length): anything else in a callback is not one of our fields and is ignored.
 */

export type FieldKind = "choice" | "custom" | "elicit";
export type ButtonAct = "submit" | "decline" | "cancel";

const KIND_LETTER: Record<FieldKind, string> = { choice: "q", custom: "c", elicit: "f" };
const LETTER_KIND: Record<string, FieldKind> = { q: "choice", c: "custom", f: "elicit" };

export const formFields = {
  form: (askIndex: number): string => `ask${askIndex}`,
  choice: (askIndex: number, questionIndex: number): string => field(askIndex, "choice", questionIndex),
  custom: (askIndex: number, questionIndex: number): string => field(askIndex, "custom", questionIndex),
  elicit: (askIndex: number, fieldIndex: number): string => field(askIndex, "elicit", fieldIndex),
  button: (askIndex: number, act: ButtonAct): string => `ask${askIndex}_${act}`,
  stack: "asks",
  stackSubmit: "asks_submit",
};

/** The asks a stacked form holds, for its submit's value: `0:req-a 1:req-b` (form index, request id). */
export function writeStack(asks: readonly { askIndex: number; requestId: string }[]): string {
  return asks.map((ask) => `${ask.askIndex}:${ask.requestId}`).join(" ");
}

/** A stacked submit's value back to its asks; entries that are not ours are dropped. */
export function readStack(value: string): { askIndex: number; requestId: string }[] {
  return value.split(" ").flatMap((entry) => {
    const match = /^(0|[1-9]\d{0,2}):([^\s:]{1,300})$/.exec(entry);
    return match?.[2] ? [{ askIndex: Number(match[1]), requestId: match[2] }] : [];
  });
}

function field(askIndex: number, kind: FieldKind, index: number): string {
  return `ask${askIndex}_${KIND_LETTER[kind]}${index}`;
}

// Up to 3 digits for the form and 2 for a field: far above what a card can hold (cards/rules.ts budgets).
const INDEX3 = "(0|[1-9]\\d{0,2})";
const INDEX2 = "(0|[1-9]\\d?)";
const FORM = new RegExp(`^ask${INDEX3}$`);
const FIELD = new RegExp(`^ask${INDEX3}_([qcf])${INDEX2}$`);
const BUTTON = new RegExp(`^ask${INDEX3}_(submit|decline|cancel)$`);

/** `ask{i}` → i; undefined for anything else. */
export function parseFormName(name: unknown): number | undefined {
  if (typeof name !== "string") return undefined;
  const match = FORM.exec(name);
  return match ? Number(match[1]) : undefined;
}

/** A field name → its form, kind and index; undefined when it is not one of ours. */
export function parseFieldName(
  name: string,
): { askIndex: number; kind: FieldKind; index: number } | undefined {
  const match = FIELD.exec(name);
  const kind = match?.[2] === undefined ? undefined : LETTER_KIND[match[2]];
  if (!match || !kind) return undefined;
  return { askIndex: Number(match[1]), kind, index: Number(match[3]) };
}

/** A clicked button's `action.name` → the form it submits and its act; undefined when not one of ours. */
export function parseButtonName(name: unknown): { askIndex: number; act: ButtonAct } | undefined {
  if (typeof name !== "string") return undefined;
  const match = BUTTON.exec(name);
  const act = match?.[2];
  if (!match || (act !== "submit" && act !== "decline" && act !== "cancel")) return undefined;
  return { askIndex: Number(match[1]), act };
}

/** One form's fields out of a `form_value`, by kind and index (raw values: the readers judge them). */
export interface FormFields {
  choice: Map<number, unknown>;
  custom: Map<number, unknown>;
  elicit: Map<number, unknown>;
}

/**
 * Sorts a callback's `form_value` into our fields. `askIndex`: only that form's fields count; `undefined`:
 * any form's (a form_value only ever holds the fields of the form that was submitted, so a card re-rendered
 * with new indices still maps); `null`: none (the submit named a form that is not ours). Never throws:
 * anything but a plain object holds no fields.
 */
export function readFormFields(formValue: unknown, askIndex: number | null | undefined): FormFields {
  const fields: FormFields = { choice: new Map(), custom: new Map(), elicit: new Map() };
  if (typeof formValue !== "object" || formValue === null || Array.isArray(formValue)) return fields;
  if (askIndex === null) return fields;
  for (const [key, value] of Object.entries(formValue)) {
    const parsed = parseFieldName(key);
    if (!parsed || (askIndex !== undefined && parsed.askIndex !== askIndex)) continue;
    fields[parsed.kind].set(parsed.index, value);
  }
  return fields;
}
