import fc from "fast-check";
import type { AskAnswer, AskQuestion } from "../../../src/asks/schema.ts";
import { junk, questionsArb } from "./arbitraries.ts";

/**
 * WebSocket answer lists (`ask_user_questions_result.data.answers`, README protocol), modelled per answer,
 * and what the check must say about them.
 */

type LabelsModel =
  | { kind: "absent" }
  | { kind: "null" }
  | { kind: "not-array"; raw: unknown }
  | { kind: "non-string"; raw: unknown[] }
  | { kind: "labels"; labels: string[] };

type WsCustomModel =
  | { kind: "absent" }
  | { kind: "null" }
  | { kind: "string"; raw: string }
  | { kind: "other"; raw: unknown };

type ItemModel =
  | { kind: "not-object"; raw: unknown }
  | { kind: "object"; labels: LabelsModel; custom: WsCustomModel; extra: [string, unknown][] };

export interface AnswersModel {
  questions: AskQuestion[];
  shape: "tagged" | "untagged" | "wrong-length" | "not-array";
  items: ItemModel[];
  raw: unknown;
}

const labelsFor = (question: AskQuestion): fc.Arbitrary<LabelsModel> => {
  const known = fc.constantFrom(...question.options.map((option) => option.label));
  return fc.oneof(
    { weight: 2, arbitrary: fc.constant<LabelsModel>({ kind: "absent" }) },
    { weight: 1, arbitrary: fc.constant<LabelsModel>({ kind: "null" }) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom<unknown>("Docker", 1, {}, true)
        .map((raw): LabelsModel => ({ kind: "not-array", raw })),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.array(known, { maxLength: 2 }), fc.constantFrom<unknown>(1, null, {}, ["x"]))
        .map(([labels, bad]): LabelsModel => ({ kind: "non-string", raw: [...labels, bad] })),
    },
    {
      weight: 6,
      arbitrary: fc
        .array(
          fc.oneof({ weight: 5, arbitrary: known }, { weight: 1, arbitrary: fc.string({ maxLength: 8 }) }),
          {
            maxLength: 5,
          },
        )
        .map((labels): LabelsModel => ({ kind: "labels", labels })),
    },
  );
};

const wsCustomArb: fc.Arbitrary<WsCustomModel> = fc.oneof(
  { weight: 3, arbitrary: fc.constant<WsCustomModel>({ kind: "absent" }) },
  { weight: 3, arbitrary: fc.constant<WsCustomModel>({ kind: "null" }) },
  fc
    .oneof(
      fc.constantFrom("", " ", "\n\t"),
      fc.string({ unit: "grapheme", maxLength: 20 }),
      fc.string({ minLength: 1001, maxLength: 1050 }),
    )
    .map((raw): WsCustomModel => ({ kind: "string", raw })),
  fc
    .constantFrom<unknown>(42, ["x"], { text: "x" }, false)
    .map((raw): WsCustomModel => ({ kind: "other", raw })),
);

/** An answer as a well-behaved client would send it: known labels (one at most for single-select), maybe text. */
const plausibleItem = (question: AskQuestion): fc.Arbitrary<ItemModel> =>
  fc
    .record({
      labels: fc
        .subarray(
          question.options.map((option) => option.label),
          { maxLength: question.multiSelect ? question.options.length : 1 },
        )
        .map((labels): LabelsModel => ({ kind: "labels", labels })),
      custom: fc.oneof(
        { weight: 3, arbitrary: fc.constant<WsCustomModel>({ kind: "null" }) },
        {
          weight: 1,
          arbitrary: fc
            .string({ unit: "grapheme", maxLength: 12 })
            .map((raw): WsCustomModel => ({ kind: "string", raw })),
        },
      ),
    })
    .map((item): ItemModel => ({ kind: "object", ...item, extra: [] }));

const itemFor = (question: AskQuestion, allowNonObject: boolean): fc.Arbitrary<ItemModel> =>
  fc.oneof(
    { weight: 6, arbitrary: plausibleItem(question) },
    {
      weight: allowNonObject ? 1 : 0,
      arbitrary: fc
        .constantFrom<unknown>(null, 1, "answer", [], true)
        .map((raw): ItemModel => ({ kind: "not-object", raw })),
    },
    {
      weight: 3,
      arbitrary: fc
        .record({
          labels: labelsFor(question),
          custom: wsCustomArb,
          extra: fc.array(fc.tuple(fc.constantFrom("note", "id", "选择"), junk), { maxLength: 1 }),
        })
        .map((item): ItemModel => ({ kind: "object", ...item })),
    },
  );

function encodeItem(item: ItemModel, question: string | undefined): unknown {
  if (item.kind === "not-object") return item.raw;
  const entries: [string, unknown][] = [...item.extra];
  if (question !== undefined) entries.push(["question", question]);
  if (item.labels.kind === "null") entries.push(["selectedLabels", null]);
  if (item.labels.kind === "not-array" || item.labels.kind === "non-string")
    entries.push(["selectedLabels", item.labels.raw]);
  if (item.labels.kind === "labels") entries.push(["selectedLabels", item.labels.labels]);
  if (item.custom.kind === "null") entries.push(["customInput", null]);
  if (item.custom.kind === "string" || item.custom.kind === "other")
    entries.push(["customInput", item.custom.raw]);
  return Object.fromEntries(entries);
}

/** Answer lists for these questions: each answer modelled, then encoded in one of the list's shapes. */
export function answersModelFor(questions: AskQuestion[]): fc.Arbitrary<AnswersModel> {
  const shapes = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom("tagged", "untagged") },
    { weight: 1, arbitrary: fc.constantFrom("wrong-length", "not-array") },
  );
  return shapes.chain((shape) => {
    if (shape === "not-array") {
      return junk
        .filter((raw) => !Array.isArray(raw))
        .map((raw): AnswersModel => ({ questions, shape, items: [], raw }));
    }
    const allowNonObject = shape !== "tagged";
    return fc.tuple(...questions.map((question) => itemFor(question, allowNonObject))).chain((items) => {
      if (shape === "tagged") {
        // Each answer names its question, in any order.
        const encoded = items.map((item, j) => encodeItem(item, questions[j]?.question));
        return fc
          .shuffledSubarray(encoded, { minLength: encoded.length, maxLength: encoded.length })
          .map((raw): AnswersModel => ({ questions, shape, items, raw }));
      }
      const encoded = items.map((item) => encodeItem(item, undefined));
      if (shape === "untagged") return fc.constant<AnswersModel>({ questions, shape, items, raw: encoded });
      return fc
        .oneof(
          fc.constant(encoded.slice(0, -1)),
          fc.array(junk, { minLength: 1, maxLength: 2 }).map((more) => [...encoded, ...more]),
        )
        .map((raw): AnswersModel => ({ questions, shape, items: [], raw }));
    });
  });
}

export const answersModelArb: fc.Arbitrary<AnswersModel> = questionsArb.chain(answersModelFor);

/** What the WebSocket answer check must say (README protocol + DESIGN §6): the first bad answer, or the answers. */
export function expectedAnswers(
  model: AnswersModel,
): { ok: true; answers: AskAnswer[] } | { ok: false; index: number | "list"; empty?: true } {
  if (model.shape === "not-array" || model.shape === "wrong-length") return { ok: false, index: "list" };
  const answers: AskAnswer[] = [];
  for (const [j, question] of model.questions.entries()) {
    const item = model.items[j];
    if (!item || item.kind === "not-object") return { ok: false, index: j };
    if (item.labels.kind === "not-array" || item.labels.kind === "non-string") return { ok: false, index: j };
    if (item.custom.kind === "other") return { ok: false, index: j };
    const labels = item.labels.kind === "labels" ? item.labels.labels : [];
    const known = new Set(question.options.map((option) => option.label));
    if (labels.some((label) => !known.has(label))) return { ok: false, index: j };
    const unique = [...new Set(labels)];
    if (!question.multiSelect && unique.length > 1) return { ok: false, index: j };
    const text = item.custom.kind === "string" ? item.custom.raw.trim() : "";
    const customInput = text === "" ? null : [...text].slice(0, 1000).join("");
    const selectedLabels = question.multiSelect ? unique : customInput !== null ? [] : unique.slice(0, 1);
    // Well-formed but empty: refused in the words the card's toast uses, naming the question.
    if (selectedLabels.length === 0 && customInput === null) return { ok: false, index: j, empty: true };
    answers.push({ question: question.question, selectedLabels, customInput });
  }
  return { ok: true, answers };
}

/** Every rule a completed answer set must obey, whatever produced it. Empty when it is well-formed. */
export function answerViolations(questions: readonly AskQuestion[], answers: readonly AskAnswer[]): string[] {
  const out: string[] = [];
  if (answers.length !== questions.length)
    out.push(`${answers.length} answers for ${questions.length} questions`);
  answers.forEach((answer, j) => {
    const question = questions[j];
    if (!question) return;
    if (answer.question !== question.question) out.push(`answer ${j}: wrong question text`);
    const labels = question.options.map((option) => option.label);
    if (answer.selectedLabels.some((label) => !labels.includes(label)))
      out.push(`answer ${j}: unknown label`);
    if (new Set(answer.selectedLabels).size !== answer.selectedLabels.length)
      out.push(`answer ${j}: a label twice`);
    if (!question.multiSelect && answer.selectedLabels.length > 1) out.push(`answer ${j}: several labels`);
    if (answer.customInput !== null && answer.customInput.trim() !== answer.customInput)
      out.push(`answer ${j}: untrimmed text`);
    if (answer.customInput === "") out.push(`answer ${j}: blank text`);
    if (answer.selectedLabels.length === 0 && answer.customInput === null) out.push(`answer ${j}: empty`);
  });
  return out;
}
