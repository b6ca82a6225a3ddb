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

/**
 * Variation selectors (issue 24 item 16) are marks, not format characters, so the rule above lets them by:
 * `prod` + U+FE0F shows as `prod`. Kept only where they belong to an emoji: VS15/VS16 (U+FE0E, U+FE0F)
 * after an emoji, or in a keycap (`1️⃣` is `1`, U+FE0F, U+20E3). Every other selector — VS1–14, the
 * ideographic VS17–256, the Mongolian free variation selectors, VS15/16 after ordinary text — is refused.
 */
const KEYCAP_BASE = String.raw`[0-9\#\*]`;
const STRAY_VS = new RegExp(
  [
    String.raw`[\u{FE00}-\u{FE0D}\u{E0100}-\u{E01EF}\u{180B}-\u{180D}\u{180F}]`,
    String.raw`(?<!${EMOJI})(?<!${KEYCAP_BASE})[\u{FE0E}\u{FE0F}]`,
    String.raw`(?<=${KEYCAP_BASE})[\u{FE0E}\u{FE0F}](?!\u{20E3})`,
  ].join("|"),
  "v",
);

/** The first variation selector in `text` that is not part of an emoji, as `U+FE0F`; undefined when none. */
export function findStrayVariationSelector(text: string): string | undefined {
  const codePoint = STRAY_VS.exec(text)?.[0].codePointAt(0);
  if (codePoint === undefined) return undefined;
  return `U+${codePoint.toString(16).toUpperCase().padStart(4, "0")}`;
}
