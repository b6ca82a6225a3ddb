import fc from "fast-check";
import type { AskInput, AskQuestion } from "../../../src/asks/schema.ts";

/**
 * Generators shared by the property tests: valid asks (questions, options) and junk of every kind. The
 * models of what the code must do with generated input live beside them (form-model.ts, answers-model.ts),
 * written from DESIGN §6 and the README, not from the code.
 */

/**
 * Characters a person cannot see (format characters and blank fillers): a valid ask has none (issue 14
 * item 9). Written here from the Unicode categories, not taken from src/asks/invisible.ts.
 */
const INVISIBLE = /\p{Cf}|\u034F|\u17B4|\u17B5|[\u115F\u1160\u2800\u3164\uFFA0]/u;

/**
 * Text that survives the schema unchanged: NFC already, no surrounding whitespace, nothing invisible,
 * 1..max UTF-16 units.
 */
export const cleanText = (maxUnits: number, maxGraphemes = Math.min(maxUnits, 24)) =>
  fc
    .string({ unit: "grapheme", minLength: 1, maxLength: maxGraphemes })
    .map((text) => text.normalize("NFC").trim())
    .filter((text) => text.length > 0 && text.length <= maxUnits && !INVISIBLE.test(text));

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
