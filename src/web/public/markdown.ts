import type { RendererRule, Token } from "markdown-it";
import MarkdownIt from "markdown-it";

/**
 * Feishu card markdown → HTML, by markdown-it with raw HTML off: every piece of source text is escaped, and
 * only markdown's own tags come out (headings, paragraphs with line breaks, bold, italic, strike, inline
 * code, code blocks, lists, quotes, rules, tables, http(s) links). markdown-it parses in linear time; the
 * regular expressions this file used to hold took 17-27 s on a heading of 4,000 spaces.
 * Links open in a new tab with `rel="noopener noreferrer"`; any other scheme (javascript:, data:) stays text.
 *
 * One file for two pages: it is bundled, with markdown-it from node_modules, into the console's script and
 * the session page's (web/bundle.ts), so both run the library Node runs. No DOM: runs in Node too.
 */

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

export function escapeHtml(text: unknown): string {
  return String(text ?? "").replace(/[&<>"']/g, (char) => ESCAPES[char] ?? char);
}

const md = new MarkdownIt({ html: false, linkify: true, breaks: true, typographer: false });
// Only links someone wrote out: no guessing that "example.com" or an e-mail address is one.
md.linkify.set({ fuzzyLink: false, fuzzyEmail: false });
md.validateLink = (url) => /^https?:\/\//i.test(url.trim());
// Images would load from anywhere (a tracking pixel in an answer); the CSP blocks them anyway.
md.disable("image");

/**
 * Compact output, as the cards' CSS expects: no newline between tags (a block token would add one),
 * `<del>` for strike as before.
 */
md.core.ruler.push("compact", (state) => {
  for (const token of state.tokens) {
    token.block = false;
    if (token.type === "inline") inlineOnly(token.children ?? []);
  }
});

/**
 * `<del>` for strike; and a link whose target is not http(s) keeps its label as text. (`[a]()` is a link
 * with an empty href in CommonMark: validateLink cannot refuse it, it only blanks the href.)
 */
function inlineOnly(children: Token[]): void {
  const open: boolean[] = [];
  for (const child of children) {
    if (child.tag === "s") child.tag = "del";
    if (child.type === "link_open") {
      const keep = /^https?:\/\//i.test(String(child.attrGet("href") ?? ""));
      open.push(keep);
      if (!keep) Object.assign(child, { type: "text", content: "", attrs: null });
    } else if (child.type === "link_close" && open.pop() === false) {
      Object.assign(child, { type: "text", content: "" });
    }
  }
}

const CLASSES = {
  heading_open: "md-h",
  paragraph_open: "md-p",
  bullet_list_open: "md-list",
  ordered_list_open: "md-list",
  blockquote_open: "md-quote",
  hr: "md-hr",
  table_open: "md-table",
  link_open: "md-link",
};
for (const [type, className] of Object.entries(CLASSES)) {
  md.renderer.rules[type] = (tokens, index, options, _env, self) => {
    const token = tokens[index];
    if (!token) return "";
    // Class first, as the old renderer wrote it (the console's tests and CSS selectors read it that way).
    token.attrs = [["class", className], ...(token.attrs ?? []).filter(([name]) => name !== "class")];
    if (type === "link_open") {
      token.attrSet("target", "_blank");
      token.attrSet("rel", "noopener noreferrer");
    }
    return self.renderToken(tokens, index, options);
  };
}
const codeBlock: RendererRule = (tokens, index) => {
  const token = tokens[index];
  if (!token) return "";
  const lang = token.info.trim().split(/\s+/)[0] ?? "";
  const attr = lang ? ` data-lang="${escapeHtml(lang)}"` : "";
  return `<pre class="md-code"${attr}><code>${escapeHtml(token.content.replace(/\n$/, ""))}</code></pre>`;
};
md.renderer.rules.fence = codeBlock;
md.renderer.rules.code_block = codeBlock;
md.renderer.rules.code_inline = (tokens, index) =>
  `<code class="md-inline-code">${escapeHtml(tokens[index]?.content)}</code>`;
md.renderer.rules.softbreak = () => "<br>";
md.renderer.rules.hardbreak = () => "<br>";

export function markdownToHtml(source: unknown): string {
  return md.render(String(source ?? ""));
}

/** One line of markdown (a title): code spans, links, bold, italic, strike. */
export function inlineMarkdownToHtml(source: unknown): string {
  return md.renderInline(String(source ?? ""));
}
