/**
 * Markdown on its way into a card (Card JSON 2.0 markdown component). Pure.
 *
 * Two kinds of text reach a card:
 * - **markdown written by the model** (its answer, previews): kept as markdown, but every construct the
 *   platform refuses is rewritten first, because one refused construct makes the whole send/PATCH fail with
 *   230099 and every later render carries the same text (docs: 飞书卡片 常见问题 §4–§6, 富文本 §代码块):
 *   images need an uploaded image_key (200570) → a link; links must be http(s) → others become text; a bare
 *   URL glued to CJK text is read as one invalid URL → a space delimits it; a URL is kept as written, with
 *   only what cards cannot carry percent-encoded (links.ts); code-fence languages → the documented names,
 *   unknown ones dropped. Only the HTML tags we mean to allow survive; `<at>`, `<person>`, `<link>`,
 *   `<!--`… are shown as text, and inside code a `<at` is broken too (whether Feishu honours code context
 *   for mentions is undocumented: `<at id=all>` in a code block must not ping the group). Tables are
 *   budgeted per card (tables.ts).
 * - **text** (user-typed messages and 其他 answers, and every model field we place inside our own lines:
 *   titles, headers, options, questions, step summaries, errors): every character that markdown reads as
 *   syntax becomes the HTML entity the docs' escape table gives (富文本 §特殊字符转义说明), so it cannot
 *   add links, rules, headings, lists, `<font>`, mentions or a fake bold "系统通知".
 */

import { clean } from "../util/text.ts";
import { codeLanguage } from "./code-languages.ts";
import { linkTarget, safeUrl, urlLength } from "./links.ts";

export { codeLanguage, safeUrl };

/**
 * Markdown syntax in text, by where it acts. Everywhere: emphasis, code, strikethrough, links, tables, tags,
 * entities (`&reg;` turns into ®, FAQ §10) and `@` (an e-mail autolink would be mailto:, not http(s)).
 * At a line's start only: headings, quotes, list items and setext/thematic rules. `:` only where it makes
 * a URL (`://`) or an emoji shortcode (`:OK:`). The rest of the text stays readable in the card JSON.
 */
const ANYWHERE = /[\\`*_~[\]|<>&@]/g;
const LINE_START = /^( {0,3})([#+=-])/gm;

/** The numeric entity for one character, as the docs' escape table writes them (`&#60;`). */
function entity(char: string): string {
  return `&#${char.codePointAt(0)};`;
}

/** Text shown as text inside markdown: nothing in it is read as markdown, HTML, a mention or a link. */
export function escapeText(text: string): string {
  return clean(text)
    .replace(ANYWHERE, entity)
    .replace(LINE_START, (_match, indent: string, char: string) => indent + entity(char))
    .replace(/:(?=\/\/)/g, entity)
    .replace(/:(?=(?:[A-Za-z0-9+-]|&#95;)+:)/g, entity)
    .replace(/www\./gi, (www) => `${www.slice(0, 3)}&#46;`);
}

/**
 * `<at` (and `</at`) in code: a zero-width joiner after `<` keeps it from ever being read as a mention tag
 * while it looks the same. Entities would show as `&#60;` inside code; the FAQ (Q9) uses `&zwj;` the same way.
 */
export function defuseMentions(code: string): string {
  return code.replace(/<(?=\/?at\b)/gi, "<\u200d");
}

/** Model-written markdown, rewritten so the platform accepts it (see the module comment). */
export function sanitizeMarkdown(markdown: string, options: { imageText?: string } = {}): string {
  const imageText = options.imageText ?? "image";
  const out: string[] = [];
  let fence: { char: string; length: number } | undefined;
  for (const line of clean(markdown).split("\n")) {
    if (fence) {
      const close = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(line);
      if (close?.[1]?.[0] === fence.char && close[1].length >= fence.length) fence = undefined;
      out.push(defuseMentions(line));
      continue;
    }
    const open = /^( {0,3})(`{3,}|~{3,})(.*)$/.exec(line);
    const marker = open?.[2];
    if (open && marker && !(marker[0] === "`" && open[3]?.includes("`"))) {
      fence = { char: marker[0] ?? "`", length: marker.length };
      const language = codeLanguage(open[3] ?? "");
      out.push(`${open[1]}${marker}${language ?? ""}`);
      continue;
    }
    out.push(sanitizeLine(line, imageText));
  }
  // A cut (truncation) can leave a fence open; close it so nothing after it turns into code.
  if (fence) out.push(fence.char.repeat(fence.length));
  return out.join("\n");
}

/** Outside code spans: links, images, tags and bare URLs rewritten; code spans are left as they are. */
function sanitizeLine(line: string, imageText: string): string {
  const definition = /^ {0,3}\[([^\]]+)\]:\s*(\S+)(.*)$/.exec(line);
  if (definition) {
    const url = linkTarget(definition[2] ?? "");
    return url ? `[${definition[1]}]: ${url}${definition[3]}` : escapeText(line);
  }
  let result = "";
  let at = 0;
  while (at < line.length) {
    const tick = line.indexOf("`", at);
    if (tick < 0) break;
    const run = /^`+/.exec(line.slice(tick))?.[0] ?? "`";
    const end = findRun(line, run, tick + run.length);
    if (end < 0) {
      // Unmatched backticks are literal text.
      result += rewriteText(line.slice(at, tick + run.length), imageText);
      at = tick + run.length;
      continue;
    }
    result +=
      rewriteText(line.slice(at, tick), imageText) + defuseMentions(line.slice(tick, end + run.length));
    at = end + run.length;
  }
  return result + rewriteText(line.slice(at), imageText);
}

/** The next run of exactly `run` backticks at or after `from`, or -1. */
function findRun(line: string, run: string, from: number): number {
  for (let i = line.indexOf(run, from); i >= 0; i = line.indexOf(run, i + 1)) {
    if (line[i - 1] !== "`" && line[i + run.length] !== "`") return i;
  }
  return -1;
}

// A link target may hold balanced parentheses one level deep, as CommonMark allows (`…/Foo_(bar)`), and
// spaces, which CommonMark does not allow but models write (`?t=31/12/2014 23:59:59`): Feishu may still read
// it as a link, to an invalid URL, so it is taken as one and encoded.
const TARGET = String.raw`\(\s*(<[^>\n]*>|[^()\n]*?(?:\([^()\n]*\)[^()\n]*?)*)(?:\s+(?:"[^"\n]*"|'[^'\n]*'))?\s*\)`;
const INLINE = new RegExp(
  [
    String.raw`!\[([^\[\]\n]*)\]${TARGET}`, // 1 alt, 2 target
    String.raw`\[([^\[\]\n]*)\]${TARGET}`, // 3 text, 4 target
    String.raw`<a\s+href\s*=\s*(["'])([^"'\n]*)\5[^>\n]*>([^<\n]*)</a\s*>`, // 6 href, 7 text
    String.raw`<(https?://[^\s<>]*)>`, // 8 autolink
    String.raw`<(/?)([A-Za-z][A-Za-z0-9_]*)([^<>\n]*)>`, // 9 slash, 10 tag, 11 attributes
    String.raw`https?://[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]+`, // bare URL
    "<[!?]", // comments, CDATA, processing instructions: HTML blocks, which cards do not support
  ].join("|"),
  "gi",
);
/** Tags of the card's HTML subset that a model's answer may use; anything else is shown as text. */
const ALLOWED_TAGS = new Set(["br", "hr", "font"]);

function rewriteText(text: string, imageText: string): string {
  return text.replace(INLINE, (match, ...groups: (string | undefined)[]) => {
    const [alt, imageTarget, linkText, target, , href, anchorText, autolink, slash, tag, attributes] = groups;
    const offset = Number(groups[11]);
    if (imageTarget !== undefined) return link(alt?.trim() || imageText, safeUrl(imageTarget));
    if (target !== undefined) return link(linkText ?? "", linkTarget(target));
    // <a href> is documented for http(s) only (富文本 超链接).
    if (href !== undefined) return link(anchorText ?? "", safeUrl(href));
    if (autolink !== undefined) {
      const url = safeUrl(autolink);
      return url ? `<${url}>` : escapeText(match);
    }
    if (tag !== undefined) {
      if (!ALLOWED_TAGS.has(tag.toLowerCase()) || /[`]/.test(attributes ?? "")) return escapeText(match);
      return `<${slash ?? ""}${tag}${attributes ?? ""}>`;
    }
    if (match.startsWith("<")) return escapeText(match);
    // The run of URL characters may end in text's punctuation (`**`, `)`, `.`): the URL stops before it.
    const end = urlLength(match);
    const url = safeUrl(match.slice(0, end));
    if (!url) return escapeText(match);
    const rest = match.slice(end);
    // A URL running into CJK (or any non-ASCII) text is read as one invalid URL: a space delimits it.
    const next = text.charAt(offset + match.length);
    return next && /[^\s\p{ASCII}]/u.test(next) ? `${url}${rest} ` : `${url}${rest}`;
  });
}

function link(text: string, url: string | undefined): string {
  // The label stays markdown, but cannot carry a tag (a mention, a nested link).
  const label = text.trim().replaceAll("<", "&#60;");
  if (!url) return label;
  return `[${label || url}](${url})`;
}

/** Markdown for a preview: kept as markdown when it brings its own code fence, else shown in a monospace block. */
export function previewBlock(preview: string, options: { imageText?: string } = {}): string {
  if (preview.includes("```")) return sanitizeMarkdown(preview, options);
  return `\`\`\`\n${defuseMentions(clean(preview))}\n\`\`\``;
}
