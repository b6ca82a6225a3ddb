/**
 * Local i18n (配置卡片多语言, D-i18n): a text's `i18n_content` (and an input's `i18n_default_value`, the
 * header's `i18n_text_tag_list`) maps a language code to that language's version. The zod schemas refuse
 * codes outside the 16 documented ones. A language the card's `config.locales` does not list is not an error:
 * "如果配置 locales，则只有 locales 中的语言会生效" (结构 page) — it is simply never shown (§1.6).
 */

type Obj = Record<string, unknown>;
const isObj = (value: unknown): value is Obj =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** A text's versions as [path suffix, text]: `content`, then each `i18n_content.<locale>`. */
export function localizedTexts(text: unknown): [string, string][] {
  if (!isObj(text)) return [];
  const out: [string, string][] = [];
  if (typeof text.content === "string") out.push(["content", text.content]);
  if (isObj(text.i18n_content))
    for (const [locale, value] of Object.entries(text.i18n_content))
      if (typeof value === "string") out.push([`i18n_content.${locale}`, value]);
  return out;
}
