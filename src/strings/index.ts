import { enAgents, zhAgents } from "./agents.ts";
import { enAsks, zhAsks } from "./asks.ts";
import { enCard, zhCard } from "./card.ts";
import { enDemo, zhDemo } from "./demo.ts";
import { enFeishu, zhFeishu } from "./feishu.ts";
import { LOCALES, type Locale } from "./locales.ts";
import { enWeb, zhWeb } from "./web.ts";

export { LOCALES, type Locale };

/**
 * Every user-facing string, in one place: this folder, one file per area (asks, feishu, card, agents, demo,
 * web), each with its Chinese (zh_cn, as in the seeds) and English (en_us) side by side. The bot's locale is
 * chosen once at start-up (`selectLocale`, from BOT_LOCALE or FEISHU_DOMAIN); cards carry every locale, and
 * toasts answer in the operator's. English is written for Lark tenants and English clients: sentence case,
 * the same meaning, not a word-for-word rendering.
 */
export const zh = { ...zhAsks, ...zhFeishu, ...zhCard, ...zhAgents, ...zhDemo, ...zhWeb };

/** The English catalogue: each area's English is held to its Chinese shape there, the whole one here. */
export const en: Strings = { ...enAsks, ...enFeishu, ...enCard, ...enAgents, ...enDemo, ...enWeb };

/** The shape every locale fills in. */
export type Strings = typeof zh;

export const catalogues: Readonly<Record<Locale, Strings>> = { zh_cn: zh, en_us: en };

let botLocale: Locale = "zh_cn";
/**
 * The bot's catalogue. A live binding: `selectLocale` switches it once at start-up, so code that imports
 * `strings` (replies, summaries, the agents' words) speaks the bot's language without being handed it.
 */
export let strings: Strings = zh;

export function selectLocale(locale: Locale): void {
  botLocale = locale;
  strings = catalogues[locale];
}

export function currentLocale(): Locale {
  return botLocale;
}

/** The locales a card is written in: the bot's first (its `content`), then the others (`i18n_content`). */
export function cardLocales(): Locale[] {
  return [botLocale, ...LOCALES.filter((locale) => locale !== botLocale)];
}

/** One text in every locale. */
export type Localized = Record<Locale, string>;

/** A catalogue whose every text comes back in every locale: for answers written before the reader is known. */
export type Bilingual<T> = T extends string
  ? Localized
  : T extends (...args: infer A) => string
    ? (...args: A) => Localized
    : { [K in keyof T]: Bilingual<T[K]> };

export const bilingual: Bilingual<Strings> = both(catalogues);

/** One text worded by each locale's catalogue, for texts whose parts are worded too (a date in a sentence). */
export function inEveryLocale(word: (s: Strings) => string): Localized {
  return { zh_cn: word(catalogues.zh_cn), en_us: word(catalogues.en_us) };
}

function both(tables: Readonly<Record<Locale, unknown>>): Bilingual<Strings> {
  // The walk is untyped (keys and leaves of one table mirror the other's); `Strings` for every locale makes
  // the shapes equal, and strings-catalogue.test.ts checks the result leaf by leaf.
  return walk(tables) as Bilingual<Strings>;
}

function walk(tables: Readonly<Record<Locale, unknown>>): unknown {
  const first = tables.zh_cn;
  if (typeof first === "string") return pickEach(tables, (value) => String(value));
  if (typeof first === "function") {
    return (...args: unknown[]) =>
      pickEach(tables, (value) => (typeof value === "function" ? String(value(...args)) : ""));
  }
  if (first === null || typeof first !== "object") return undefined;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(first)) {
    out[key] = walk({ zh_cn: member(tables.zh_cn, key), en_us: member(tables.en_us, key) });
  }
  return out;
}

function pickEach(tables: Readonly<Record<Locale, unknown>>, text: (value: unknown) => string): Localized {
  return { zh_cn: text(tables.zh_cn), en_us: text(tables.en_us) };
}

function member(table: unknown, key: string): unknown {
  return table !== null && typeof table === "object" ? Reflect.get(table, key) : undefined;
}
