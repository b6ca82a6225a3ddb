import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseAskInput } from "../../src/asks/schema.ts";
import { PROPERTY_RUNS, record } from "./helpers/env.ts";

/**
 * Issue 14 item 9: text a person reads on the form (questions, headers, labels, descriptions, previews)
 * must not hide characters. The characters below are written out here, not taken from the implementation,
 * so the test checks the rule rather than repeating it.
 */

const ATTACKS: readonly string[] = [
  "\u200B", // zero width space: "prod" vs "prod\u200b"
  "\u200C", // zero width non-joiner
  "\u200D", // zero width joiner, outside an emoji sequence
  "\u2060", // word joiner
  "\uFEFF", // zero width no-break space (BOM)
  "\u00AD", // soft hyphen
  "\u200E", // left-to-right mark
  "\u200F", // right-to-left mark
  "\u061C", // arabic letter mark
  "\u202A", // left-to-right embedding
  "\u202B", // right-to-left embedding
  "\u202C", // pop directional formatting
  "\u202D", // left-to-right override
  "\u202E", // right-to-left override: "\u202Eexe.txt" shows as "txt.exe"
  "\u2066", // left-to-right isolate
  "\u2067", // right-to-left isolate
  "\u2068", // first strong isolate
  "\u2069", // pop directional isolate
  "\u3164", // hangul filler, renders blank
  "\u{E0041}", // tag latin capital a
];

type Field = "question" | "header" | "label" | "description" | "preview";

function ask(field: Field, value: string) {
  const base = { question: "部署到哪个环境?", header: "环境", multiSelect: false };
  const options = [
    { label: "prod", description: "线上" },
    { label: "staging", description: "预发", ...(field === "preview" ? { preview: value } : {}) },
  ];
  if (field === "label") options[1] = { label: value, description: "预发" };
  if (field === "description") options[1] = { label: "staging", description: value };
  const question = { ...base, options, ...(field === "question" ? { question: value } : {}) };
  return { questions: [field === "header" ? { ...question, header: value } : question] };
}

const fieldArb = fc.constantFrom<Field>("question", "header", "label", "description", "preview");
/** Visible text that is valid in every field (headers allow 12 characters). */
const visibleArb = fc.stringMatching(/^[a-z0-9一-龥]{1,8}$/);
/** Any graphemes, with the attack characters mixed in among them. */
const mixedArb = fc
  .array(fc.oneof(fc.string({ unit: "grapheme", minLength: 1, maxLength: 2 }), fc.constantFrom(...ATTACKS)), {
    minLength: 1,
    maxLength: 6,
  })
  .map((parts) => parts.join(""));

describe("invisible and bidi control characters in an ask", () => {
  it("are refused in every field a person reads, naming the field and the character", () => {
    let refused = 0;
    fc.assert(
      fc.property(fieldArb, visibleArb, fc.constantFrom(...ATTACKS), fc.nat(), (field, text, attack, at) => {
        const position = at % (text.length + 1);
        const value = `${text.slice(0, position)}${attack}${text.slice(position)}`;
        const clean = parseAskInput(ask(field, text));
        expect(clean.ok, `${field} ${JSON.stringify(text)}`).toBe(true);
        const parsed = parseAskInput(ask(field, value));
        // Trimming may already remove one at either end (U+FEFF is white space to JavaScript): gone is fine too.
        if (parsed.ok) {
          expect(JSON.stringify(parsed.value), JSON.stringify(value)).not.toContain(attack);
          return;
        }
        const hex = attack.codePointAt(0)?.toString(16).toUpperCase().padStart(4, "0");
        expect(parsed.error).toMatch(/^Invalid arguments: /);
        expect(parsed.error).toContain(`${field} contains an invisible or bidirectional control character`);
        expect(parsed.error).toContain(`U+${hex}`);
        refused += 1;
      }),
      { numRuns: PROPERTY_RUNS },
    );
    expect(refused).toBeGreaterThan(PROPERTY_RUNS / 2);
    record("invisible characters refused in asks", {
      runs: PROPERTY_RUNS,
      refused,
      characters: ATTACKS.length,
    });
  });

  it("never lets any of them through, whatever else the text holds", () => {
    fc.assert(
      fc.property(fieldArb, mixedArb, (field, text) => {
        const parsed = parseAskInput(ask(field, text));
        if (!parsed.ok) return;
        const shown = JSON.stringify(parsed.value);
        for (const attack of ATTACKS.filter((a) => a !== "\u200D")) expect(shown).not.toContain(attack);
      }),
      { numRuns: PROPERTY_RUNS },
    );
  });

  it("keeps emoji written with a zero-width joiner, and text in any script", () => {
    for (const label of ["👩‍💻 开发", "❤️‍🔥", "部署 prod", "مرحبا", "café"]) {
      expect(parseAskInput(ask("label", label)).ok, label).toBe(true);
    }
  });

  it("normalizes to NFC, so one label typed two ways is a duplicate", () => {
    const decomposed = "cafe\u0301";
    const input = ask("label", decomposed);
    const first = input.questions[0]?.options[0];
    if (first) first.label = "café";
    const parsed = parseAskInput(input);
    expect(parsed.ok).toBe(false);
    expect(parsed.ok || parsed.error).toContain("option labels must be unique within a question");
    const alone = parseAskInput(ask("label", decomposed));
    expect(alone.ok && alone.value.questions[0]?.options[1]?.label).toBe("café");
  });
});
