import fc from "fast-check";
import type { AskInput, AskQuestion } from "../../../src/asks/schema.ts";

/**
 * Generators shared by the property tests: valid asks (questions, options) and junk of every kind. The
 * models of what the code must do with generated input live beside them (form-model.ts, answers-model.ts),
 * written from DESIGN §6 and the README, not from the code.
 */

/** Text that survives the schema's trim: 1..max UTF-16 units, no surrounding whitespace. */
export const cleanText = (maxUnits: number, maxGraphemes = Math.min(maxUnits, 24)) =>
  fc
    .string({ unit: "grapheme", minLength: 1, maxLength: maxGraphemes })
    .map((text) => text.trim())
    .filter((text) => text.length > 0 && text.length <= maxUnits);

export const optionArb = fc.record(
  {
    label: cleanText(60),
    description: cleanText(500),
    preview: fc.string({ maxLength: 80 }),
  },
  { requiredKeys: ["label", "description"] },
);

export const questionArb: fc.Arbitrary<AskQuestion> = fc.record({
  question: cleanText(500, 40),
  header: cleanText(12, 6),
  multiSelect: fc.boolean(),
  options: fc.uniqueArray(optionArb, { minLength: 2, maxLength: 4, selector: (option) => option.label }),
});

export const questionsArb: fc.Arbitrary<AskQuestion[]> = fc.uniqueArray(questionArb, {
  minLength: 1,
  maxLength: 4,
  selector: (question) => question.question,
});

export const askInputArb: fc.Arbitrary<AskInput> = fc.record(
  {
    questions: questionsArb,
    metadata: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
  },
  { requiredKeys: ["questions"] },
);

/** Any JSON-ish or JS value, including the odd ones (NaN, -0, sparse arrays, null-prototype objects). */
export const junk = fc.anything({
  maxDepth: 3,
  withNullPrototype: true,
  withBigInt: false,
  withDate: true,
  withMap: false,
  withSet: false,
  withSparseArray: true,
  withTypedArray: false,
});
