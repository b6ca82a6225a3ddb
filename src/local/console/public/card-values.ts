/**
 * The pure half of cards.ts (no DOM: Node tests import it): what a click on a card sends, as the Feishu
 * client builds it, and a card's one-line preview.
 *
 * This is the emulated Feishu client's rule for `form_value`, not the bot's answer rule: the bot reads
 * form_value defensively (cards/form-value.ts) and checks answers with asks/answer-rule.ts, and the console
 * must not share that code, or a mistake in it would be invisible here (a checker must not share rules with
 * what it checks).
 */

import { words } from "./words.ts";

const FIELD_TAGS = new Set(["select_static", "multi_select_static", "input"]);

/** One form field as the page read it back from the DOM. */
export interface FormField {
  tag: string;
  name: string;
  value?: string;
  values?: string[];
  required?: boolean;
}

export type FormValue = Record<string, string | string[]>;

export interface CardAction {
  value?: Record<string, unknown>;
  name?: string;
  formValue?: FormValue;
}

/**
 * `form_value` as Feishu sends it on submit: `{[name]: value}` — select_static → the option's value,
 * multi_select_static → the chosen values, input → the text. Empty fields are left out.
 */
export function collectFormValue(fields: readonly FormField[]): FormValue {
  const formValue: FormValue = {};
  for (const field of fields) {
    if (!field.name || !FIELD_TAGS.has(field.tag)) continue;
    if (field.tag === "multi_select_static") {
      const values = (field.values ?? []).filter((value) => typeof value === "string" && value !== "");
      if (values.length > 0) formValue[field.name] = values;
    } else if (typeof field.value === "string" && field.value !== "") {
      formValue[field.name] = field.value;
    }
  }
  return formValue;
}

/** Names of required fields left empty; the client refuses to submit then, and sends no callback. */
export function missingRequired(fields: readonly FormField[]): string[] {
  const filled = collectFormValue(fields);
  return fields.filter((field) => field.required === true && !(field.name in filled)).map((f) => f.name);
}

/** The callback value of a button (its first callback behavior), or undefined. */
export function callbackValue(button: unknown): Record<string, unknown> | undefined {
  const behavior = list(record(button)?.behaviors)
    .map(record)
    .find((b) => b?.type === "callback");
  return record(behavior?.value);
}

/** What a click sends: the button's callback value and name, and for a submit the form's values. */
export function buttonAction(button: unknown, formValue?: FormValue): CardAction {
  const value = callbackValue(button);
  const name = record(button)?.name;
  return {
    ...(value !== undefined ? { value } : {}),
    ...(typeof name === "string" && name !== "" ? { name } : {}),
    ...(formValue !== undefined ? { formValue } : {}),
  };
}

/** Links a card may open: http(s) only. */
export function safeUrl(url: unknown): string | undefined {
  if (typeof url !== "string" || !URL.canParse(url)) return undefined;
  const parsed = new URL(url);
  return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : undefined;
}

/** A one-line description of a card for the chat list: its summary, else its title, in the console's language. */
export function cardPreview(card: unknown, locale?: string): string {
  const shown = locale ? localizeCard(card, locale) : card;
  const summary = record(record(record(shown)?.config)?.summary)?.content;
  const title = record(record(record(shown)?.header)?.title)?.content;
  const label = typeof summary === "string" && summary ? summary : typeof title === "string" ? title : "";
  return `${words().cardPreview} ${label}`.trim();
}

/**
 * Feishu shows `<at id=ou_…></at>` in card markdown as @ and the person's name (`<at id=all></at>` as
 * @所有人). Done before markdownToHtml, as plain text that it then escapes like any other. Text a user or a
 * model wrote reaches the card with its `<` escaped by the bot, so it never matches here.
 */
export function resolveMentions(
  content: unknown,
  mentionName: (openId: string) => string | undefined,
): string {
  return String(content ?? "").replace(AT_TAG, (_match, _quote, id: string) => {
    if (id === "all") return `@${words().mentionAll}`;
    return `@${mentionName(id) ?? id}`;
  });
}
const AT_TAG = /<at\s+id=(["']?)([A-Za-z0-9_-]+)\1\s*>\s*<\/at>/g;

/**
 * Feishu shows `<local_datetime millisecond='…' format_type='…'>` (富文本 国际化时间) as that moment in the
 * viewer's own time zone; the console does the same in the browser's zone (or `timeZone`, for tests).
 * Done before markdownToHtml, as plain text. Formats the console does not draw keep the date and time.
 */
export function resolveLocalDatetimes(content: string, language = "zh_cn", timeZone?: string): string {
  return content.replace(LOCAL_DATETIME, (_match, ms: string, format: string | undefined) => {
    const at = Number(ms);
    const read = (options: Intl.DateTimeFormatOptions) =>
      new Intl.DateTimeFormat(language === "en_us" ? "en-US" : "zh-CN", { timeZone, ...options }).format(at);
    switch (format) {
      case "time":
        return read({ hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
      case "date_short":
        return read({ month: "short", day: "numeric" });
      default:
        return read({ dateStyle: "medium", timeStyle: "short" });
    }
  });
}
const LOCAL_DATETIME =
  /<local_datetime\s+millisecond=['"]?(\d+)['"]?(?:\s+format_type=['"]?([a-z_]+)['"]?)?[^>]*><\/local_datetime>/g;

/** Card JSON arrives as anything: these read it without trusting a shape. */
export type Json = Record<string, unknown>;

export function record(value: unknown): Json | undefined {
  return isJson(value) ? value : undefined;
}

function isJson(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/**
 * The card as a client in `locale` reads it (配置卡片多语言): each text's `i18n_content[locale]` in place of
 * its `content`, else `content` as it is; the header's `i18n_text_tag_list[locale]` (标题 page) as its
 * `text_tag_list`, else the first language listed ("默认展示已有的语言"). Callback values are free data.
 */
export function localizeCard(card: unknown, locale: string): unknown {
  if (Array.isArray(card)) return card.map((item) => localizeCard(item, locale));
  if (typeof card !== "object" || card === null) return card;
  const i18n: unknown = "i18n_content" in card ? card.i18n_content : undefined;
  const own =
    typeof i18n === "object" && i18n !== null && locale in i18n
      ? (i18n as Record<string, unknown>)[locale]
      : undefined;
  const out: Record<string, unknown> = {};
  const tagLists: unknown = "i18n_text_tag_list" in card ? card.i18n_text_tag_list : undefined;
  if (typeof tagLists === "object" && tagLists !== null) {
    const lists = tagLists as Record<string, unknown>;
    out.text_tag_list = locale in lists ? lists[locale] : Object.values(lists)[0];
  }
  for (const [key, value] of Object.entries(card)) {
    if (key === "i18n_content" || key === "i18n_text_tag_list") continue;
    if (key === "content" && typeof own === "string") out[key] = own;
    else out[key] = key === "value" ? value : localizeCard(value, locale);
  }
  return out;
}
