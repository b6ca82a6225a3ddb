import MarkdownIt from "markdown-it";
import type { CardRuleId } from "./rules.ts";

/**
 * The markdown rules a send can fail on (富文本 page and the FAQ's 发送卡片问题): images need an uploaded
 * image key (200570), links must be http(s) and hold only URL characters, and a bare URL may not run
 * straight into Chinese text; an `<at>` names someone. Code spans and code blocks are literal text and are not
 * judged, except for a raw `<at`: whether a mention in code is honoured is undocumented, so it is refused.
 * 2.0 markdown follows CommonMark, so a CommonMark parser finds what Feishu would read as an image or link.
 */

export interface MarkdownProblem {
  rule: CardRuleId;
  message: string;
}

// Raw hrefs: no link validation (we judge it) and no normalising (it would percent-encode what we check).
const md = new MarkdownIt({ html: true, linkify: false });
md.validateLink = () => true;
md.normalizeLink = (url) => url;
md.normalizeLinkText = (text) => text;
// Keep escaped characters (`\:`, `&#58;`) as separate tokens, as a linkifier sees them: an escaped URL is
// no bare URL. (That Feishu's linkifier also skips escaped text is assumed.)
md.core.ruler.disable("text_join");

/** An uploaded image's key, e.g. img_v3_0238_073f1823-df2b-… (the emulator cannot tell which were uploaded). */
const IMAGE_KEY = /^img_[A-Za-z0-9_-]+$/;
/** RFC 3986 characters; anything else (space, CJK, `<`, `"`, …) must be percent-encoded (FAQ send Q6). */
const URL_CHARS = /^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]*$/;
const BAD_PERCENT = /%(?![0-9A-Fa-f]{2})/;
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):/;
/**
 * A bare URL as a linkifier reads it: printable ASCII plus any Unicode letter, digit or mark. Full-width
 * punctuation and symbols (。，）✅) end it, as in common linkifiers (assumed for Feishu).
 */
const BARE_URL = /https?:\/\/(?:[\x21-\x7e]|[\p{L}\p{N}\p{M}])+/gu;
const HTML_TAG = /<(a|link|number_tag|local_datetime)\b([^>]*)>/gi;
const AT_OPEN = /<at\b([^>]*)>/gi;
const AT_CLOSE = /<\/at\s*>/gi;
const AT_IN_CODE = /<\/?at\b/i;
/** 富文本 @指定人: `id` (open_id, user_id or `all`), `ids` (comma-separated) or `email`. */
const AT_ATTRS = new Set(["id", "ids", "email"]);
const HTML_ATTR = /([A-Za-z_]+)\s*=\s*(?:'([^']*)'|"([^"]*)"|([^\s>]+))/g;
const URL_ATTRS = new Set(["href", "url", "pc_url", "ios_url", "android_url", "link"]);

type Token = ReturnType<typeof md.parse>[number];

/** The problems of one markdown text, and how many tables it holds (they count towards the card's 5). */
export function checkMarkdown(content: string): { problems: MarkdownProblem[]; tables: number } {
  const problems: MarkdownProblem[] = [];
  const tokens = md.parse(content, {});
  // Tables count towards the card's limit (index.ts), which is below the docs' 4 per component.
  const tables = tokens.filter((token) => token.type === "table_open").length;
  for (const token of tokens) {
    if (token.type === "html_block")
      problems.push(...checkHtml(token.content), ...checkAtClosed(token.content));
    if (token.type === "inline") problems.push(...checkInline(token.children ?? []));
    if ((token.type === "fence" || token.type === "code_block") && AT_IN_CODE.test(token.content))
      problems.push(atInCode());
  }
  return { problems, tables };
}

function checkInline(children: readonly Token[]): MarkdownProblem[] {
  const problems: MarkdownProblem[] = [];
  const html: string[] = [];
  let linkDepth = 0;
  for (const token of children) {
    switch (token.type) {
      case "image": {
        const src = String(token.attrGet("src") ?? "");
        if (!IMAGE_KEY.test(src))
          problems.push({
            rule: "md-image",
            message: `image "${src}" is not an image key: markdown images need an uploaded img_key (200570)`,
          });
        break;
      }
      case "link_open":
        linkDepth += 1;
        problems.push(...checkUrl(String(token.attrGet("href") ?? ""), { allowTel: true }));
        break;
      case "link_close":
        linkDepth = Math.max(0, linkDepth - 1);
        break;
      case "html_inline":
        problems.push(...checkHtml(token.content));
        html.push(token.content);
        break;
      case "code_inline":
        if (AT_IN_CODE.test(token.content)) problems.push(atInCode());
        break;
      case "text":
        // Inside a link the text is the link's label, which the FAQ suggests as the fix (use <a> or […]()).
        if (linkDepth === 0) problems.push(...checkBareUrls(token.content));
        break;
      default:
        break;
    }
  }
  problems.push(...checkAtClosed(html.join("")));
  return problems;
}

function atInCode(): MarkdownProblem {
  return {
    rule: "md-at-code",
    message: "a raw <at> inside code: whether Feishu reads it as a mention there is undocumented",
  };
}

/** Each `<at …>` is closed by `</at>` (富文本: 闭合标签 `<at></at>`). */
function checkAtClosed(html: string): MarkdownProblem[] {
  const opened = [...html.matchAll(AT_OPEN)].length;
  const closed = [...html.matchAll(AT_CLOSE)].length;
  return opened > closed
    ? [{ rule: "md-at", message: `${opened - closed} <at> without its </at>: a mention is a closed tag` }]
    : [];
}

/** FAQ send Q5: `https://xxxx.xxx中文文本` is read as one invalid link. */
function checkBareUrls(text: string): MarkdownProblem[] {
  const problems: MarkdownProblem[] = [];
  for (const match of text.matchAll(BARE_URL)) {
    const run = match[0];
    if (/[^\x21-\x7e]/.test(run))
      problems.push({
        rule: "md-bare-url",
        message: `bare URL "${run}" runs into non-ASCII text; put a space after it or use a link`,
      });
  }
  return problems;
}

function checkHtml(html: string): MarkdownProblem[] {
  const problems: MarkdownProblem[] = [];
  for (const at of html.matchAll(AT_OPEN)) {
    const named = [...(at[1] ?? "").matchAll(HTML_ATTR)].some((attr) => {
      const value = attr[2] ?? attr[3] ?? attr[4] ?? "";
      return AT_ATTRS.has((attr[1] ?? "").toLowerCase()) && value.split(",").every((id) => id.trim() !== "");
    });
    if (!named)
      problems.push({
        rule: "md-at",
        message: `${at[0]} names no one: an <at> needs id, ids or email (100290 invalid user in at)`,
      });
  }
  for (const tag of html.matchAll(HTML_TAG)) {
    for (const attr of (tag[2] ?? "").matchAll(HTML_ATTR)) {
      const name = (attr[1] ?? "").toLowerCase();
      const value = attr[2] ?? attr[3] ?? attr[4] ?? "";
      // The docs' own examples leave the per-platform URLs empty (pc_url='').
      if (URL_ATTRS.has(name) && value !== "") problems.push(...checkUrl(value, { allowTel: false }));
    }
  }
  return problems;
}

/** A URL a card may carry: http(s) (markdown links may also dial `tel:`), with only URL characters. */
export function checkUrl(
  url: string,
  options: { allowTel?: boolean; allowUnsupportedAction?: boolean } = {},
): MarkdownProblem[] {
  const scheme = SCHEME.exec(url)?.[1]?.toLowerCase();
  const allowed = ["http", "https", ...(options.allowTel ? ["tel"] : [])];
  if (options.allowUnsupportedAction && url === "lark://msgcard/unsupported_action") return [];
  if (!scheme || !allowed.includes(scheme))
    return [
      {
        rule: "url-scheme",
        message: `link "${url}" is not ${allowed.join("/")}: Feishu only accepts http and https links`,
      },
    ];
  if (!URL_CHARS.test(url) || BAD_PERCENT.test(url))
    return [
      {
        rule: "url-chars",
        message: `link "${url}" holds characters a URL must percent-encode (spaces, non-ASCII, quotes, …)`,
      },
    ];
  if (scheme !== "tel" && queryValues(url).some((value) => /[/:]/.test(value)))
    return [
      {
        rule: "url-query",
        message: `link "${url}" has a raw / or : in a query value; the FAQ's fix encodes them (%2F, %3A)`,
      },
    ];
  return [];
}

/** The keys and values of a URL's query (between `?` and `#`), as written. */
function queryValues(url: string): string[] {
  const beforeHash = url.split("#")[0] ?? "";
  const at = beforeHash.indexOf("?");
  if (at < 0) return [];
  return beforeHash
    .slice(at + 1)
    .split("&")
    .flatMap((pair) => pair.split("="));
}
