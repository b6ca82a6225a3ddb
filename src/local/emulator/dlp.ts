import { CODES, fail } from "./errors.ts";

/**
 * The tenant's data-loss-prevention audit (数据防泄漏), off unless the tenant turns it on: send, reply and
 * PATCH answer 230028 "The messages do NOT pass the audit." for content with a plain e-mail address or
 * phone number (docs: 发送消息, 回复消息, 更新应用发送的消息卡片, error 230028: "当消息内容包含有明文电话号码、
 * 明文邮箱地址等内容时可能会触发该错误"; docs/feishu-platform.md §3.3).
 *
 * What the audit matches is not documented; this is the emulator's own reading, written apart from the
 * bot's masking (src/cards/contacts.ts) so that one cannot vouch for the other: it reads the text a person
 * sees (entities decoded, tag attributes dropped) and looks for ASCII e-mail addresses, mainland mobile and
 * landline numbers, and `+`-prefixed international numbers. A tenant may add its own keywords, as a
 * tenant's custom rule would (the only way a test can make the audit refuse what masking leaves).
 */
export interface DlpAudit {
  /** Words the tenant's own rules refuse as well (case-insensitive). */
  keywords?: readonly string[];
}

export const AUDIT_MESSAGE = "The messages do NOT pass the audit.";

const FINDINGS: readonly { what: string; pattern: RegExp }[] = [
  { what: "e-mail address", pattern: /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/ },
  { what: "mobile number", pattern: /(?<![0-9])(?:\+?86[ -]?)?1[3-9][0-9](?:[ -]?[0-9]{4}){2}(?![0-9])/ },
  { what: "landline number", pattern: /(?<![0-9])0[1-9][0-9]{1,2}-[0-9]{7,8}(?![0-9])/ },
  {
    what: "international number",
    pattern: /\+[1-9][0-9]{0,2}[ -]?\(?[0-9]{1,4}\)?(?:[ -]?[0-9]{2,4}){2,4}(?![0-9])/,
  },
];

/** Keys whose string values a reader sees, in cards, texts and posts; `behaviors`, urls and ids are not read. */
const SHOWN_KEYS = new Set(["content", "text", "title", "default_value", "placeholder"]);
const LOCALIZED = /^i18n/;

/** Throws 230028 when the audit is on and finds something in `content` (a message body, JSON as sent). */
export function auditContent(content: string, audit: DlpAudit | undefined): void {
  if (!audit) return;
  const finding = findInContent(content, audit);
  if (finding !== undefined) throw fail(CODES.auditFailed, AUDIT_MESSAGE);
}

/** What the audit would object to in `content`, if anything (for tests and the console). */
export function findInContent(content: string, audit: DlpAudit): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch {
    // The content checks before this one refuse what is not JSON; read it as text all the same.
    parsed = { text: content };
  }
  const texts: string[] = [];
  collect(parsed, false, texts, 0);
  const shown = texts.map(visibleText).join("\n");
  for (const { what, pattern } of FINDINGS) if (pattern.test(shown)) return what;
  const lower = shown.toLowerCase();
  return audit.keywords?.find((word) => word !== "" && lower.includes(word.toLowerCase()));
}

function collect(node: unknown, shown: boolean, out: string[], depth: number): void {
  if (depth > 64) return;
  if (typeof node === "string") {
    if (shown) out.push(node);
    return;
  }
  if (Array.isArray(node)) {
    for (const item of node) collect(item, shown, out, depth + 1);
    return;
  }
  if (typeof node !== "object" || node === null) return;
  for (const [key, value] of Object.entries(node)) {
    if (key === "behaviors" || key === "value") continue;
    // A string under a shown key, or anything inside one (a post's nested content, i18n maps).
    collect(value, shown || SHOWN_KEYS.has(key) || LOCALIZED.test(key), out, depth + 1);
  }
}

/** The text as rendered: tags' attributes are not shown, entities are. */
function visibleText(text: string): string {
  return text
    .replace(/<\/?[A-Za-z_][\w-]*(?:\s[^<>]*)?\/?>/g, " ")
    .replace(/&#x([0-9a-fA-F]{1,6});/g, (_m, hex: string) => codePoint(Number.parseInt(hex, 16)))
    .replace(/&#([0-9]{1,7});/g, (_m, dec: string) => codePoint(Number(dec)))
    .replace(/&(amp|lt|gt|quot|nbsp);/g, (_m, name: string) => NAMED[name] ?? "");
}

/** An entity's character; one outside Unicode shows as nothing (a client would show a replacement). */
function codePoint(value: number): string {
  return value <= 0x10ffff ? String.fromCodePoint(value) : "";
}

const NAMED: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', nbsp: " " };
