/**
 * Characters a person cannot see, or that reorder what they see, refused in the text of an ask (issue 14
 * item 9): `prod` and `prod\u200b` are two options that look the same, and `\u202Eexe.txt` shows as
 * `txt.exe`. Pure.
 *
 * Refused: every format character (Unicode category Cf — zero-width spaces and joiners, bidi marks,
 * embeddings, overrides and isolates, the BOM, soft hyphen, tag characters), plus the blank letters and
 * marks that render as nothing (Hangul fillers, the combining grapheme joiner, Khmer inherent vowels,
 * the braille blank). One exception: a zero-width joiner between two emoji, which is how 👩‍💻 is written.
 */

const EMOJI = String.raw`\p{Extended_Pictographic}`;
// A ZWJ that is not glued between two emoji (an optional VS16 or skin tone may follow the first one).
const STRAY_ZWJ = String.raw`(?<!${EMOJI}[\u{FE0F}\u{1F3FB}-\u{1F3FF}]?)\u200D|\u200D(?!${EMOJI})`;
const OTHER_FORMAT = String.raw`[\p{Cf}--\u200D]`;
const BLANKS = String.raw`[\u034F\u115F\u1160\u17B4\u17B5\u2800\u3164\uFFA0]`;

const INVISIBLE = new RegExp(`${STRAY_ZWJ}|${OTHER_FORMAT}|${BLANKS}`, "v");

/** The first invisible or bidi control character in `text`, as `U+200B`; undefined when there is none. */
export function findInvisible(text: string): string | undefined {
  const match = INVISIBLE.exec(text);
  const codePoint = match?.[0].codePointAt(0);
  if (codePoint === undefined) return undefined;
  return `U+${codePoint.toString(16).toUpperCase().padStart(4, "0")}`;
}
