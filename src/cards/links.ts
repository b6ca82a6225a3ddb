/**
 * Links on their way into card markdown. Pure.
 *
 * A link a model wrote must reach the reader as the model wrote it: every valid URL is kept byte for byte,
 * and only what card markdown cannot carry is percent-encoded (issue 23: `**https://x/a**` once became
 * `…/a%2A%2A`, `?q=a+b#/route` became `?q=a%20b#%2Froute`, and every such link was dead). What cards cannot
 * carry, from the docs:
 * - characters outside a URL's own set (space, non-ASCII, quotes, `<>\^{|}`), and a `%` that starts no
 *   escape (FAQ 发送卡片 Q6: "卡片中的链接不支持特殊字符");
 * - `/` and `:` inside a query value: the FAQ's own fix turns `?time=31/12/2014 23:59:59` into
 *   `?time=31%2F12%2F2014%2023%3A59%3A59`;
 * - a scheme other than http(s) (FAQ Q4; 富文本 超链接), except `tel:` in a `[text](tel:…)` link, which
 *   the rich-text page documents as 可点击的电话号码 (mobile only). `mailto:` is not documented: text.
 * - parentheses that do not balance, which would end a `[text](…)` target early.
 */

/** A URL's own characters (RFC 3986 unreserved, reserved and `%`): these are kept as written. */
const CARRIED = /^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=]$/;
const HEX2 = /^[0-9A-Fa-f]{2}$/;

/**
 * An absolute http(s) URL as the card should carry it (the input itself when it needs nothing), or
 * undefined when it is not one a card may link to.
 */
export function safeUrl(raw: string): string | undefined {
  const trimmed = raw.trim().replace(/^<(.*)>$/, "$1");
  if (!/^https?:\/\//i.test(trimmed) || !URL.canParse(trimmed)) return undefined;
  const parsed = new URL(trimmed);
  if ((parsed.protocol !== "http:" && parsed.protocol !== "https:") || parsed.hostname === "")
    return undefined;
  const kept = keepAsWritten(trimmed);
  // The rewrite must name the same host as the parser read; anything odd (a backslash, an IDN host, a
  // user part with spaces) is rebuilt from the parsed URL instead, whose host is already encoded.
  if (kept !== undefined && URL.canParse(kept) && new URL(kept).host === parsed.host) return balanced(kept);
  return balanced(
    `${parsed.protocol}//${parsed.host}${encodePart(parsed.pathname)}${encodeQuery(parsed.search.slice(1), parsed.search !== "")}${parsed.hash ? `#${encodePart(parsed.hash.slice(1))}` : ""}`,
  );
}

/** A `tel:` target as the rich-text page shows it (`tel://<number>`): digits and visual separators only. */
export function safeTel(raw: string): string | undefined {
  const trimmed = raw.trim();
  const match = /^tel:(\/\/)?(\+?[0-9][0-9\-.() ]*)$/i.exec(trimmed);
  if (!match?.[2]) return undefined;
  const target = `tel:${match[1] ?? ""}${match[2].replaceAll(" ", "")}`;
  return balanced(target) === target ? target : undefined;
}

/** The target of a markdown `[text](…)` link: http(s), or a phone number. */
export function linkTarget(raw: string): string | undefined {
  return safeUrl(raw) ?? safeTel(raw);
}

/**
 * How much of a run of URL characters found in text is the URL: trailing punctuation and closing brackets
 * that open nowhere inside it belong to the text around it (as GFM autolinks read it), so `**https://x/a**`
 * ends before `**` and `(see https://x/Foo_(bar))` before the last `)`.
 */
export function urlLength(run: string): number {
  let end = run.length;
  for (;;) {
    const last = run[end - 1];
    if (last === undefined) return end;
    const head = run.slice(0, end);
    if ("?!.,:;*_~'".includes(last)) end -= 1;
    else if (last === ")" && count(head, ")") > count(head, "(")) end -= 1;
    else if (last === "]" && count(head, "]") > count(head, "[")) end -= 1;
    else return end;
  }
}

/** The input with only what cards cannot carry encoded, split where the raw text splits. */
function keepAsWritten(url: string): string | undefined {
  const start = url.indexOf("//") + 2;
  const authorityEnd = url.slice(start).search(/[/?#]/);
  const restAt = authorityEnd < 0 ? url.length : start + authorityEnd;
  const authority = url.slice(start, restAt);
  if (![...authority].every((char) => CARRIED.test(char) || char === "%")) return undefined;
  const rest = url.slice(restAt);
  const hashAt = rest.indexOf("#");
  const beforeHash = hashAt < 0 ? rest : rest.slice(0, hashAt);
  const queryAt = beforeHash.indexOf("?");
  const path = queryAt < 0 ? beforeHash : beforeHash.slice(0, queryAt);
  const query = queryAt < 0 ? "" : beforeHash.slice(queryAt + 1);
  const fragment = hashAt < 0 ? undefined : rest.slice(hashAt + 1);
  return `${url.slice(0, restAt)}${encodePart(path)}${encodeQuery(query, queryAt >= 0)}${fragment === undefined ? "" : `#${encodePart(fragment)}`}`;
}

/** Query pairs keep their `&`, `=` and `+`; keys and values also encode `/` and `:` (FAQ Q6). */
function encodeQuery(query: string, present: boolean): string {
  if (!present) return "";
  const pairs = query.split("&").map((pair) => {
    const eq = pair.indexOf("=");
    if (eq < 0) return encodePart(pair, /[/:]/);
    return `${encodePart(pair.slice(0, eq), /[/:]/)}=${encodePart(pair.slice(eq + 1), /[/:]/)}`;
  });
  return `?${pairs.join("&")}`;
}

/** Percent-encodes (UTF-8) every character outside the URL set, plus `also`; a stray `%` becomes `%25`. */
function encodePart(part: string, also?: RegExp): string {
  const chars = [...part];
  let out = "";
  chars.forEach((char, i) => {
    if (char === "%") out += HEX2.test((chars[i + 1] ?? "") + (chars[i + 2] ?? "")) ? "%" : "%25";
    else if (CARRIED.test(char) && !also?.test(char)) out += char;
    else out += utf8Escape(char);
  });
  return out;
}

function utf8Escape(char: string): string {
  try {
    return encodeURIComponent(char).replace(/[!'()*]/g, hexEscape);
  } catch (error) {
    // A lone surrogate has no UTF-8 form: the replacement character stands in for it.
    if (error instanceof URIError) return "%EF%BF%BD";
    throw error;
  }
}

function hexEscape(char: string): string {
  return `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`;
}

/** Parentheses that do not pair up would end a `[text](…)` target early: then all of them are encoded. */
function balanced(url: string): string {
  let depth = 0;
  for (const char of url) {
    if (char === "(") depth += 1;
    if (char === ")") depth -= 1;
    if (depth < 0) break;
  }
  return depth === 0 ? url : url.replace(/[()]/g, hexEscape);
}

function count(text: string, char: string): number {
  return text.split(char).length - 1;
}
