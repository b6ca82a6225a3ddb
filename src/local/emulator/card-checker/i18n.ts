import type { Report } from "./report.ts";

/**
 * Local i18n (配置卡片多语言, D-i18n): a text's `i18n_content` (and an input's `i18n_default_value`, the
 * header's `i18n_text_tag_list`) maps a language code to that language's version. The zod schemas already
 * refuse codes outside the 16 documented ones; this file adds what spans the card: `config.locales` names the
 * languages the card is written in, so a map may only use those, and the list names each language once.
 */

type Obj = Record<string, unknown>;
const isObj = (value: unknown): value is Obj =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const I18N_KEYS = ["i18n_content", "i18n_default_value", "i18n_text_tag_list"] as const;

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

export function checkLocales(report: Report, card: Obj): void {
  const config = isObj(card.config) ? card.config : undefined;
  const declared = Array.isArray(config?.locales) ? config.locales : undefined;
  if (declared === undefined) return;
  const listed = new Set<unknown>();
  declared.forEach((locale, i) => {
    if (listed.has(locale))
      report.add("i18n-locales", `config.locales[${i}]`, `${JSON.stringify(locale)} is listed twice`);
    listed.add(locale);
  });
  visit(card, "", (node, path) => {
    for (const key of I18N_KEYS) {
      const map = node[key];
      if (!isObj(map)) continue;
      for (const locale of Object.keys(map))
        if (!listed.has(locale))
          report.add(
            "i18n-locales",
            `${path}${key}.${locale}`,
            `${locale} is not in config.locales (${[...listed].join(", ")}): no client would show it`,
          );
    }
  });
}

/** Every object but callback values (free data); the card's depth was bounded before this runs. */
function visit(value: unknown, path: string, each: (node: Obj, path: string) => void): void {
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      visit(item, `${path.replace(/\.$/, "")}[${i}].`, each);
    });
    return;
  }
  if (!isObj(value)) return;
  each(value, path);
  for (const [key, child] of Object.entries(value))
    if (key !== "value" && !(I18N_KEYS as readonly string[]).includes(key))
      visit(child, `${path}${key}.`, each);
}
