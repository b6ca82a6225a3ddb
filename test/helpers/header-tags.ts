/**
 * Translated header tags live in `header.i18n_text_tag_list` (标题 page), one full list per language, not
 * in `i18n_content` on each tag's text. Tests that check "every text in every language" fold those lists
 * back into one tag list whose texts carry `i18n_content`, so the tags are checked like every other text.
 */
export function foldHeaderTags<T>(card: T): T {
  if (!isRecord(card) || !isRecord(card.header) || !isRecord(card.header.i18n_text_tag_list)) return card;
  const { i18n_text_tag_list: lists, ...header } = card.header;
  const locales = Object.keys(lists);
  const first = lists[locales[0] ?? ""];
  if (!Array.isArray(first)) return card;
  const text_tag_list = first.map((tag, i) => {
    if (!isRecord(tag) || !isRecord(tag.text)) return tag;
    const i18n: Record<string, unknown> = {};
    for (const locale of locales) {
      const own = lists[locale];
      const text = Array.isArray(own) && isRecord(own[i]) && isRecord(own[i].text) ? own[i].text : undefined;
      i18n[locale] = text?.content;
    }
    return { ...tag, text: { ...tag.text, i18n_content: i18n } };
  });
  return { ...card, header: { ...header, text_tag_list } } as T;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}
