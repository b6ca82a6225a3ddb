import MarkdownIt from "markdown-it";
import type { CardRuleId } from "./rules.ts";

/**
 * The markdown rules a send can fail on (富文本 page and the FAQ's 发送卡片问题): images need an uploaded
 * image key (200570), links must be http(s) and hold only URL characters, and a bare URL may not run
 * straight into Chinese text. Code spans and code blocks are literal text and are not judged.
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

const MAX_TABLES = 4;
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
const HTML_ATTR = /([A-Za-z_]+)\s*=\s*(?:'([^']*)'|"([^"]*)"|([^\s>]+))/g;
const URL_ATTRS = new Set(["href", "url", "pc_url", "ios_url", "android_url", "link"]);

type Token = ReturnType<typeof md.parse>[number];

/** The problems of one markdown text, and how many tables it holds (they count towards the card's 5). */
export function checkMarkdown(content: string): { problems: MarkdownProblem[]; tables: number } {
  const problems: MarkdownProblem[] = [];
  const tokens = md.parse(content, {});
  const tables = tokens.filter((token) => token.type === "table_open").length;
  if (tables > MAX_TABLES)
    problems.push({ rule: "md-tables", message: `${tables} tables; one markdown component holds at most 4` });
  for (const token of tokens) {
    if (token.type === "html_block") problems.push(...checkHtml(token.content));
    if (token.type === "inline") problems.push(...checkInline(token.children ?? []));
  }
  return { problems, tables };
}

function checkInline(children: readonly Token[]): MarkdownProblem[] {
  const problems: MarkdownProblem[] = [];
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
        break;
      case "text":
        // Inside a link the text is the link's label, which the FAQ suggests as the fix (use <a> or […]()).
        if (linkDepth === 0) problems.push(...checkBareUrls(token.content));
        break;
      default:
        break;
    }
  }
  return problems;
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
  return [];
}
