import { cardLocales, catalogues, type Locale, type Strings } from "../strings/index.ts";
import { type Card, type CardNode, cardSchema } from "./model.ts";

/**
 * One card for every reader of a shared group card, each in their client's language (issue 19). Card JSON
 * 2.0 has no whole-card language switch (`i18n_elements` is gone), only per-text `i18n_content` next to
 * `content` and the languages in `config.locales` (配置卡片多语言). So the card is rendered once per locale
 * with that locale's catalogue and the renderings are laid over each other: where a text differs, it gets
 * `i18n_content`; everything else (layout, names, callback values) must be identical, or the card stays in
 * the bot's language alone. Pure.
 *
 * Header tags are the one text with a documented list of their own: `header.i18n_text_tag_list` (标题 page:
 * "配置后缀标签的多语言属性，在所需语种字段下添加完整的后缀标签结构体"; only one of it and `text_tag_list` may
 * be set, and the i18n one wins). Translated tags go there, one complete list per language.
 *
 * Size (the 28 KB target): English repeats every text that differs, so a long block (a result under its
 * 结果 heading) would double. In order: every text in every language; only texts up to SHORT_TEXT
 * characters in every language (titles, tags, buttons, placeholders, headings), long blocks in the bot's
 * language; the bot's language alone. The first that fits is sent. The last two end with a footnote, in
 * every language, saying which language the rest is in: a reader must not take a card they half read for
 * the whole (issue 23).
 */

/** The longest text (in characters, in every locale) kept bilingual when the whole card does not fit. */
export const SHORT_TEXT = 120;

/** Room the last rung's footnote takes (under 300 bytes in either language, with its `i18n_content`). */
export const NOTE_RESERVE_BYTES = 600;

/**
 * `render(strings, reserveBytes)` draws the card in one language; `reserveBytes` asks it to leave that much of
 * its size budget unused (the last rung's footnote goes there).
 */
export function localizeCard(
  render: (strings: Strings, reserveBytes?: number) => Card,
  fits: (card: Card) => boolean,
  locales: readonly Locale[] = cardLocales(),
): Card {
  const cards = locales.map((locale) => render(catalogues[locale]));
  const [primary] = cards;
  if (!primary) throw new Error("no card locale");
  if (cards.length < 2) return primary;
  const full = mergeRenderings(locales, cards, Number.POSITIVE_INFINITY);
  if (full && fits(full)) return full;
  // From here some text stays in the bot's language alone: the card says so, in every language (issue 23).
  const noted = cards.map((card, i) =>
    withNote(card, catalogues[locales[i] ?? primaryLocale(locales)], locales),
  );
  const short = mergeRenderings(locales, noted, SHORT_TEXT);
  if (short && fits(short)) return short;
  const lean = render(catalogues[primaryLocale(locales)], NOTE_RESERVE_BYTES);
  const alone = cardSchema.safeParse(withNote(lean, undefined, locales));
  return alone.success && fits(alone.data) ? alone.data : primary;
}

function primaryLocale(locales: readonly Locale[]): Locale {
  const [first] = locales;
  if (!first) throw new Error("no card locale");
  return first;
}

/**
 * The card with a footnote that names the language some of it is left in. With `strings`, in that
 * catalogue (one rendering, merged later); without, already in every language with `config.locales`.
 */
function withNote(card: Card, strings: Strings | undefined, locales: readonly Locale[]): Card {
  const language = primaryLocale(locales);
  const words = (s: Strings) => s.card.oneLanguage(language);
  const note: CardNode = strings
    ? { tag: "markdown", text_size: "notation", content: words(strings) }
    : {
        tag: "markdown",
        text_size: "notation",
        content: words(catalogues[language]),
        i18n_content: Object.fromEntries(locales.map((locale) => [locale, words(catalogues[locale])])),
      };
  const config = strings ? card.config : { ...card.config, locales: [...locales] };
  return { ...card, config, body: { ...card.body, elements: [...card.body.elements, note] } };
}

/**
 * The renderings laid over each other, or undefined when they differ anywhere but in text (a budget rung
 * one language needed and the other did not, say): then no merge is honest.
 */
export function mergeRenderings(
  locales: readonly Locale[],
  cards: readonly Card[],
  maxChars: number,
): Card | undefined {
  const merged = overlay(locales, cards, maxChars);
  if (merged === MISMATCH || !isRecord(merged) || !isRecord(merged.config)) return undefined;
  const withLocales = {
    ...merged,
    config: { ...merged.config, locales: [...locales] },
    ...(isRecord(merged.header) ? { header: translatedTags(merged.header, locales) } : {}),
  };
  // Re-read through the strict model: what goes out is a Card by construction, not by assertion.
  const parsed = cardSchema.safeParse(withLocales);
  return parsed.success ? parsed.data : undefined;
}

const MISMATCH = Symbol("mismatch");
const TEXT_TAGS = new Set(["plain_text", "markdown", "lark_md"]);

function overlay(locales: readonly Locale[], nodes: readonly unknown[], maxChars: number): unknown {
  const [first, ...rest] = nodes;
  if (Array.isArray(first)) {
    if (!rest.every((node) => Array.isArray(node) && node.length === first.length)) return MISMATCH;
    const out: unknown[] = [];
    for (let i = 0; i < first.length; i += 1) {
      const item = overlay(
        locales,
        nodes.map((node) => (Array.isArray(node) ? node[i] : undefined)),
        maxChars,
      );
      if (item === MISMATCH) return MISMATCH;
      out.push(item);
    }
    return out;
  }
  if (isRecord(first)) {
    if (!rest.every(isRecord)) return MISMATCH;
    const keys = Object.keys(first);
    if (!rest.every((node) => sameKeys(keys, Object.keys(node)))) return MISMATCH;
    if (isText(first)) return overlayText(locales, nodes, maxChars);
    const out: Record<string, unknown> = {};
    for (const key of keys) {
      const value = overlay(
        locales,
        nodes.map((node) => (isRecord(node) ? node[key] : undefined)),
        maxChars,
      );
      if (value === MISMATCH) return MISMATCH;
      out[key] = value;
    }
    return out;
  }
  return rest.every((node) => node === first) ? first : MISMATCH;
}

/** A text object: `{tag: plain_text|markdown|lark_md, content}`, or the summary's bare `{content}`. */
function isText(node: Record<string, unknown>): boolean {
  if (typeof node.content !== "string") return false;
  if (typeof node.tag === "string") return TEXT_TAGS.has(node.tag);
  return Object.keys(node).length === 1;
}

function overlayText(locales: readonly Locale[], nodes: readonly unknown[], maxChars: number): unknown {
  const texts = nodes.map((node) => (isRecord(node) && typeof node.content === "string" ? node.content : ""));
  const [first] = nodes;
  if (!isRecord(first)) return MISMATCH;
  // Everything but the words is shared: the same tag and style in every language.
  for (const node of nodes) {
    if (!isRecord(node)) return MISMATCH;
    for (const [key, value] of Object.entries(node))
      if (key !== "content" && value !== first[key]) return MISMATCH;
  }
  if (texts.every((text) => text === texts[0])) return first;
  if (texts.some((text) => [...text].length > maxChars)) return first;
  const i18n: Record<string, string> = {};
  locales.forEach((locale, i) => {
    i18n[locale] = texts[i] ?? "";
  });
  return { ...first, i18n_content: i18n };
}

/** `text_tag_list` whose texts got `i18n_content` → `i18n_text_tag_list`, one full list per language. */
function translatedTags(
  header: Record<string, unknown>,
  locales: readonly Locale[],
): Record<string, unknown> {
  const tags = header.text_tag_list;
  if (
    !Array.isArray(tags) ||
    !tags.some((tag) => isRecord(tag) && isRecord(tag.text) && tag.text.i18n_content)
  )
    return header;
  const { text_tag_list: _, ...rest } = header;
  const perLocale: Record<string, unknown[]> = {};
  for (const locale of locales)
    perLocale[locale] = tags.map((tag) => {
      if (!isRecord(tag) || !isRecord(tag.text)) return tag;
      const { i18n_content: words, ...text } = tag.text;
      const content = isRecord(words) && typeof words[locale] === "string" ? words[locale] : text.content;
      return { ...tag, text: { ...text, content } };
    });
  return { ...rest, i18n_text_tag_list: perLocale };
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((key) => b.includes(key));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
