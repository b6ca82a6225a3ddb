/** Feishu's own locale codes (card `config.locales`, `i18n_content` keys, the toast's `i18n`). */
export const LOCALES = ["zh_cn", "en_us"] as const;
export type Locale = (typeof LOCALES)[number];
