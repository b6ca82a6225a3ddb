/**
 * When two labels look the same to a person (issue 24 item 16): `prod` in Latin and `рrod` with a Cyrillic
 * `р`, `Ｏ` (fullwidth) and `O`, `0` and `O`. The skeleton of UTS #39 (Unicode Security Mechanisms §4),
 * taken after NFKC: texts with the same skeleton are confusable. Pure.
 *
 * The table is a small, deliberate subset of Unicode's confusables.txt — the Latin, Cyrillic and Greek
 * letters that render like a Latin letter or digit in common fonts, plus the few Latin-internal pairs
 * (`l`/`I`/`1`/`|`, `0`/`O`, `rn`/`m`). It is written here rather than imported because the full data file
 * would be a new npm dependency; scripts beyond these three (Armenian, Cherokee, mathematical letters NFKC
 * does not fold) are not covered. NFKC already folds fullwidth forms, ligatures and styled mathematical
 * letters onto plain ones, so they need no entries.
 */

// Each line: the look-alike characters, then the Latin text they map to (its prototype in confusables.txt).
const GROUPS: readonly (readonly [string, string])[] = [
  // Cyrillic lowercase
  ["а", "a"],
  ["е", "e"],
  ["о", "o"],
  ["р", "p"],
  ["с", "c"],
  ["у", "y"],
  ["х", "x"],
  ["ѕ", "s"],
  ["і", "i"],
  ["ј", "j"],
  ["һ", "h"],
  ["ԁ", "d"],
  ["ԛ", "q"],
  ["ԝ", "w"],
  ["ӏ", "l"],
  ["ү", "y"],
  ["ɡ", "g"],
  ["ɑ", "a"],
  // Cyrillic uppercase
  ["А", "A"],
  ["В", "B"],
  ["Е", "E"],
  ["З", "3"],
  ["К", "K"],
  ["М", "M"],
  ["Н", "H"],
  ["О", "O"],
  ["Р", "P"],
  ["С", "C"],
  ["Т", "T"],
  ["У", "Y"],
  ["Ү", "Y"],
  ["Х", "X"],
  ["Ѕ", "S"],
  ["ІӀ", "l"],
  ["Ј", "J"],
  ["Ԛ", "Q"],
  ["Ԝ", "W"],
  // Greek lowercase
  ["α", "a"],
  ["ο", "o"],
  ["ρ", "p"],
  ["ν", "v"],
  ["ι", "i"],
  ["υ", "u"],
  ["γ", "y"],
  ["ϲ", "c"],
  ["ϳ", "j"],
  // Greek uppercase
  ["Α", "A"],
  ["Β", "B"],
  ["Ε", "E"],
  ["Ζ", "Z"],
  ["Η", "H"],
  ["Ι", "l"],
  ["Κ", "K"],
  ["Μ", "M"],
  ["Ν", "N"],
  ["Ο", "O"],
  ["Ρ", "P"],
  ["Τ", "T"],
  ["Υ", "Y"],
  ["Χ", "X"],
  ["Ϲ", "C"],
  // Latin and digits among themselves
  ["I1|ǀ", "l"],
  ["0", "O"],
  ["ı", "i"],
  ["m", "rn"],
];

const PROTOTYPE = new Map<string, string>(
  GROUPS.flatMap(([chars, target]) => [...chars].map((char) => [char, target] as const)),
);

/** The text's confusable skeleton: NFKC, then NFD, each character mapped to its prototype, then NFD. */
export function skeleton(text: string): string {
  let mapped = "";
  for (const char of text.normalize("NFKC").normalize("NFD")) mapped += PROTOTYPE.get(char) ?? char;
  return mapped.normalize("NFD");
}
