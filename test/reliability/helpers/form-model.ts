import fc from "fast-check";
import type { AskAnswer, AskQuestion } from "../../../src/asks/schema.ts";
import { junk, questionsArb } from "./arbitraries.ts";

/**
 * Card form values (`action.form_value`), modelled per question, and what the mapper must make of them
 * (DESIGN §6): fields `ask{i}_q{j}` / `ask{i}_c{j}`, option values are index strings, single-select custom
 * text wins, blank text is none, a question with neither has no answer.
 */

/** One value inside a choice field, and the option index it stands for (undefined: not an option). */
interface ChoiceToken {
  raw: unknown;
  index: number | undefined;
}

type ChoiceModel =
  | { kind: "absent" }
  | { kind: "empty"; raw: unknown }
  | { kind: "single"; token: ChoiceToken }
  | { kind: "array"; tokens: ChoiceToken[] };

type CustomModel = { kind: "absent" } | { kind: "value"; raw: unknown };

export interface FormModel {
  questions: AskQuestion[];
  /** The form the fields are written for (`ask{form}_…`). */
  form: number;
  /** What the callback says was submitted: `name` of the submit button, or absent. */
  name: string | undefined;
  formValue: Record<string, unknown>;
  perQuestion: { choice: ChoiceModel; custom: CustomModel }[];
}

const tokenFor = (optionCount: number): fc.Arbitrary<ChoiceToken> =>
  fc.oneof(
    // A real option: "1", or "01" (still index 1 to a reader of digits).
    {
      weight: 4,
      arbitrary: fc.nat({ max: optionCount - 1 }).map((index) => ({ raw: String(index), index })),
    },
    { weight: 1, arbitrary: fc.nat({ max: optionCount - 1 }).map((index) => ({ raw: `0${index}`, index })) },
    // Not an option: past the end, negative, padded, decimal, too many digits, words, other types.
    {
      weight: 2,
      arbitrary: fc
        .oneof(
          fc.integer({ min: optionCount, max: 99 }).map(String),
          fc.constantFrom("-1", " 1", "1 ", "1.0", "1e0", "100", "", "x", "Docker", "０"),
          // (An array here would be read as the list of choices itself, so none is generated as one token.)
          fc.constantFrom<unknown>(0, 1, Number.NaN, true, null, {}, { value: "0" }),
        )
        .map((raw) => ({ raw, index: undefined })),
    },
  );

const choiceFor = (optionCount: number): fc.Arbitrary<ChoiceModel> =>
  fc.oneof(
    { weight: 1, arbitrary: fc.constant<ChoiceModel>({ kind: "absent" }) },
    {
      weight: 1,
      arbitrary: fc.constantFrom<unknown>("", [], null).map((raw): ChoiceModel => ({ kind: "empty", raw })),
    },
    { weight: 3, arbitrary: tokenFor(optionCount).map((token): ChoiceModel => ({ kind: "single", token })) },
    {
      weight: 3,
      arbitrary: fc
        .array(tokenFor(optionCount), { maxLength: 6 })
        .map((tokens): ChoiceModel => ({ kind: "array", tokens })),
    },
  );

const customArb: fc.Arbitrary<CustomModel> = fc.oneof(
  fc.constant<CustomModel>({ kind: "absent" }),
  fc
    .oneof(
      fc.constantFrom<unknown>("", " ", "\t\n ", "\u3000"),
      fc.string({ unit: "grapheme", maxLength: 30 }),
      fc.string({ unit: "grapheme", minLength: 1, maxLength: 10 }).map((s) => `  ${s}  `),
      fc.string({ minLength: 1001, maxLength: 1100 }),
      fc.constantFrom<unknown>(42, ["x"], { text: "x" }, true, null),
    )
    .map((raw): CustomModel => ({ kind: "value", raw })),
);

/** Fields that must never count: other forms' (when a form is named), unknown keys, questions past the end. */
const noiseFor = (questionCount: number, form: number, named: boolean) =>
  fc.array(
    fc.tuple(
      fc.oneof(
        fc.constantFrom(
          "foo",
          "q0",
          "c0",
          "ask0_x0",
          "Ask0_q0",
          "ask0_q0_extra",
          "ask0_submit",
          "__proto__",
          "constructor",
          "toString",
        ),
        fc.integer({ min: questionCount, max: 99 }).map((j) => `ask${form}_q${j}`),
        fc.integer({ min: questionCount, max: 99 }).map((j) => `ask${form}_c${j}`),
        ...(named
          ? [
              fc
                .tuple(
                  fc.integer({ min: 0, max: 9 }).filter((other) => other !== form),
                  fc.nat({ max: 3 }),
                  fc.constantFrom("q", "c"),
                )
                .map(([other, j, kind]) => `ask${other}_${kind}${j}`),
            ]
          : []),
      ),
      junk,
    ),
    { maxLength: 4 },
  );

/** Form values written for these questions: each field modelled, plus fields that must not count. */
export function formModelFor(questions: AskQuestion[]): fc.Arbitrary<FormModel> {
  return fc
    .record({
      form: fc.nat({ max: 3 }),
      naming: fc.constantFrom("same", "other", "absent", "garbage"),
      perQuestion: fc.tuple(
        ...questions.map((question) =>
          fc.record({ choice: choiceFor(question.options.length), custom: customArb }),
        ),
      ),
    })
    .chain(({ form, naming, perQuestion }) =>
      // Other forms' fields may be present only when the name picks ours; otherwise every form's fields count.
      noiseFor(questions.length, form, naming === "same").map((noise): FormModel => {
        const name =
          naming === "same"
            ? `ask${form}_submit`
            : naming === "other"
              ? `ask${form + 1}_submit`
              : naming === "garbage"
                ? "submit"
                : undefined;
        const entries: [string, unknown][] = [...noise];
        perQuestion.forEach(({ choice, custom }, j) => {
          if (choice.kind === "empty") entries.push([`ask${form}_q${j}`, choice.raw]);
          if (choice.kind === "single") entries.push([`ask${form}_q${j}`, choice.token.raw]);
          if (choice.kind === "array") entries.push([`ask${form}_q${j}`, choice.tokens.map((t) => t.raw)]);
          if (custom.kind === "value") entries.push([`ask${form}_c${j}`, custom.raw]);
        });
        // Own properties even for "__proto__" (as JSON.parse makes them); the real fields come last and win.
        return { questions, form, name, formValue: Object.fromEntries(entries), perQuestion };
      }),
    );
}

export const formModelArb: fc.Arbitrary<FormModel> = questionsArb.chain(formModelFor);

/**
 * What the card form must map to (DESIGN §6): the submitted form's fields only when its name is known
 * (`ask{i}_submit`), any form's otherwise; an unparseable name counts as unknown.
 */
export function expectedFormMapping(
  model: FormModel,
): { ok: true; answers: AskAnswer[] } | { ok: false; questionIndex: number } {
  const formName = model.name?.match(/^(ask\d+)_submit$/)?.[1];
  const fieldsCount = formName === undefined || formName === `ask${model.form}`;
  const answers: AskAnswer[] = [];
  for (const [j, question] of model.questions.entries()) {
    const spec = model.perQuestion[j];
    const choice = fieldsCount && spec ? spec.choice : ({ kind: "absent" } as const);
    const custom = fieldsCount && spec ? spec.custom : ({ kind: "absent" } as const);
    const tokens = choice.kind === "single" ? [choice.token] : choice.kind === "array" ? choice.tokens : [];
    const indices = [...new Set(tokens.flatMap((t) => (t.index === undefined ? [] : [t.index])))].sort(
      (a, b) => a - b,
    );
    const text = custom.kind === "value" && typeof custom.raw === "string" ? custom.raw.trim() : "";
    const customInput = text === "" ? null : [...text].slice(0, 1000).join("");
    const labels = indices.map((index) => question.options[index]?.label ?? "?");
    const selectedLabels = question.multiSelect ? labels : customInput !== null ? [] : labels.slice(0, 1);
    if (selectedLabels.length === 0 && customInput === null) return { ok: false, questionIndex: j };
    answers.push({ question: question.question, selectedLabels, customInput });
  }
  return { ok: true, answers };
}
