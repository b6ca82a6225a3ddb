/**
 * E-mail addresses and phone numbers in text, masked: what a card carries once the tenant's data-loss-prevention
 * audit refused it (230028: "plain phone numbers, plain e-mail addresses", docs: 发送消息 / 回复消息 / 更新应用发送的消息卡片,
 * docs/feishu-platform.md §3.3). Which patterns the audit applies is not documented, so this casts wider than
 * a plausible audit does (any script in an address, separators in numbers, international forms); a number it
 * misses is caught by the next rung, which drops the text (cards/progress.ts `Redaction`). Pure.
 *
 * The mask keeps what a reader needs to tell two apart (`a•••@•••.com`, `138••••5678`) and leaves nothing an
 * address or number pattern matches: `•` is no letter, digit or markdown syntax.
 */

const MASK = "•";

/** Local part, `@`, a domain of two labels or more; letters of any script (IDN mail exists). */
const EMAIL = /[\p{L}\p{N}._%+'-]+@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)+/gu;

/**
 * Phone numbers in the shapes people write them, each bounded by a non-digit on both sides:
 * `+` and a country code with any grouping; mainland mobile (11 digits from 13x–19x, with or without +86/0086
 * and spaces or dashes); mainland landline (0 + area code + 7–8 digits); North American (xxx) xxx-xxxx.
 */
const PHONES: readonly RegExp[] = [
  /(?<!\d)(?:\+|00)[1-9]\d{0,2}(?:[\s.-]?\(?\d{1,5}\)?){1,5}(?!\d)/gu,
  /(?<!\d)(?:86[\s-]?)?1[3-9]\d(?:[\s-]?\d{4}){2}(?!\d)/g,
  /(?<!\d)(?:\(0\d{2,3}\)\s?|0\d{2,3}[\s-])\d{7,8}(?!\d)/g,
  /(?<!\d)\(?\d{3}\)?[\s.-]\d{3}[\s.-]\d{4}(?!\d)/g,
];

/** A number is a phone number when it has as many digits as one: 7 to 15 (E.164's bound). */
const DIGITS_MIN = 7;
const DIGITS_MAX = 15;

export function maskEmail(address: string): string {
  const at = address.lastIndexOf("@");
  const domain = address.slice(at + 1);
  const tld = domain.slice(domain.lastIndexOf(".") + 1);
  const first = Array.from(address)[0] ?? "";
  return `${first}${MASK.repeat(3)}@${MASK.repeat(3)}.${tld}`;
}

/** Every digit but the first three and the last four (the last two of a short number) becomes `•`. */
export function maskPhone(number: string): string {
  const digits = number.replace(/\D/g, "").length;
  const keepHead = digits > 9 ? 3 : 0;
  const keepTail = digits > 9 ? 4 : 2;
  let seen = 0;
  return number.replace(/\d/g, (digit) => {
    seen += 1;
    return seen <= keepHead || seen > digits - keepTail ? digit : MASK;
  });
}

/** `text` with every e-mail address and phone number masked; unchanged when it has none. */
export function maskContacts(text: string): string {
  let out = text.replace(EMAIL, maskEmail);
  for (const pattern of PHONES) {
    out = out.replace(pattern, (match) => {
      const digits = match.replace(/\D/g, "").length;
      return digits >= DIGITS_MIN && digits <= DIGITS_MAX ? maskPhone(match) : match;
    });
  }
  return out;
}
