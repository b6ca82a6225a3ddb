/**
 * Feishu card markdown → HTML that is safe by construction: every piece of source text is escaped, and
 * only the tags written here are produced (headings, paragraphs with line breaks, bold, italic, strike,
 * inline code, code blocks, lists, quotes, rules, tables, http(s) links). No DOM: runs in Node too.
 * Links open in a new tab with `rel="noopener noreferrer"`; any other scheme (javascript:, data:) stays text.
 *
 * One file for two pages: the console loads it from /console/assets/, and the session page (src/web) serves
 * this same file as /web/markdown.js to render a task's final answer. Keep it free of imports.
 */

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
/** Private-use characters that hold the place of finished HTML while the rest is formatted. */
const TOKEN_OPEN = "\uE001";
const TOKEN_CLOSE = "\uE002";
const TOKEN = new RegExp(`${TOKEN_OPEN}(\\d+)${TOKEN_CLOSE}`, "g");

export function escapeHtml(text) {
  return String(text ?? "").replace(/[&<>"']/g, (char) => ESCAPES[char]);
}

const FENCE = /^\s*(`{3,}|~{3,})\s*([\w+#.-]*)\s*$/;
const HEADING = /^\s*(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^\s*([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^\s*>\s?(.*)$/;
const LIST_ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const TABLE_RULE = /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/;
const BLANK = /^\s*$/;

export function markdownToHtml(source) {
  const lines = String(source ?? "")
    .replace(/\r\n?/g, "\n")
    .split("\n");
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (BLANK.test(line)) {
      i += 1;
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence) {
      const body = [];
      i += 1;
      while (i < lines.length && !closesFence(lines[i], fence[1])) body.push(lines[i++]);
      i += 1;
      const lang = fence[2] ? ` data-lang="${escapeHtml(fence[2])}"` : "";
      out.push(`<pre class="md-code"${lang}><code>${escapeHtml(body.join("\n"))}</code></pre>`);
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      const level = heading[1].length;
      out.push(`<h${level} class="md-h">${inlineMarkdownToHtml(heading[2])}</h${level}>`);
      i += 1;
      continue;
    }
    if (RULE.test(line)) {
      out.push('<hr class="md-hr">');
      i += 1;
      continue;
    }
    if (QUOTE.test(line)) {
      const quoted = [];
      while (i < lines.length && QUOTE.test(lines[i])) quoted.push(QUOTE.exec(lines[i++])[1]);
      out.push(`<blockquote class="md-quote">${markdownToHtml(quoted.join("\n"))}</blockquote>`);
      continue;
    }
    if (LIST_ITEM.test(line)) {
      const items = [];
      while (i < lines.length) {
        const item = LIST_ITEM.exec(lines[i]);
        if (item) items.push({ indent: item[1].length, marker: item[2], text: item[3] });
        else if (/^\s{2,}\S/.test(lines[i]) && items.length > 0)
          items[items.length - 1].text += `\n${lines[i].trim()}`;
        else break;
        i += 1;
      }
      out.push(renderList(items));
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1])) {
      const rows = [line];
      i += 2;
      while (i < lines.length && lines[i].includes("|") && !BLANK.test(lines[i])) rows.push(lines[i++]);
      out.push(renderTable(rows));
      continue;
    }
    const paragraph = [];
    while (i < lines.length && !BLANK.test(lines[i]) && !startsBlock(lines, i)) paragraph.push(lines[i++]);
    if (paragraph.length === 0) paragraph.push(lines[i++]);
    out.push(`<p class="md-p">${paragraph.map(inlineMarkdownToHtml).join("<br>")}</p>`);
  }
  return out.join("");
}

function closesFence(line, opener) {
  const trimmed = line.trim();
  return trimmed.length >= opener.length && trimmed === opener[0].repeat(trimmed.length);
}

function startsBlock(lines, i) {
  const line = lines[i];
  return (
    FENCE.test(line) ||
    HEADING.test(line) ||
    RULE.test(line) ||
    QUOTE.test(line) ||
    LIST_ITEM.test(line) ||
    (line.includes("|") && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1]))
  );
}

/** Nested by indentation: a deeper item opens a list inside the open item. */
function renderList(items) {
  let html = "";
  const stack = [];
  for (const item of items) {
    while (stack.length > 0 && item.indent < stack[stack.length - 1].indent) {
      html += `</li></${stack.pop().tag}>`;
    }
    const top = stack[stack.length - 1];
    if (!top || item.indent > top.indent) {
      const ordered = /^\d/.test(item.marker);
      const start = ordered ? Number.parseInt(item.marker, 10) : 1;
      const tag = ordered ? "ol" : "ul";
      html += `<${tag} class="md-list"${ordered && start !== 1 ? ` start="${start}"` : ""}>`;
      stack.push({ indent: item.indent, tag });
    } else {
      html += "</li>";
    }
    html += `<li>${item.text.split("\n").map(inlineMarkdownToHtml).join("<br>")}`;
  }
  while (stack.length > 0) html += `</li></${stack.pop().tag}>`;
  return html;
}

function renderTable(rows) {
  const cells = (row) =>
    row
      .trim()
      .replace(/^\|/, "")
      .replace(/\|$/, "")
      .split("|")
      .map((cell) => inlineMarkdownToHtml(cell.trim()));
  const [head, ...body] = rows.map(cells);
  const th = head.map((cell) => `<th>${cell}</th>`).join("");
  const tr = body.map((row) => `<tr>${row.map((cell) => `<td>${cell}</td>`).join("")}</tr>`).join("");
  return `<table class="md-table"><thead><tr>${th}</tr></thead><tbody>${tr}</tbody></table>`;
}

/** One line of markdown: code spans, links, bold, italic, strike. */
export function inlineMarkdownToHtml(source) {
  const tokens = [];
  const hold = (html) => `${TOKEN_OPEN}${tokens.push(html) - 1}${TOKEN_CLOSE}`;
  let text = String(source ?? "").replace(/[\uE001\uE002]/g, "");
  text = text.replace(/`([^`]+)`/g, (_match, code) =>
    hold(`<code class="md-inline-code">${escapeHtml(code)}</code>`),
  );
  text = escapeHtml(text);
  text = text.replace(/\[([^\]]+)\]\(([^()\s]+)\)/g, (_match, label, url) =>
    isWebUrl(url) ? hold(link(url, emphasis(label))) : emphasis(label),
  );
  text = text.replace(/https?:\/\/(?:(?!&lt;|&gt;|&quot;|&#39;)[^\s\uE001\uE002])+/g, (url) => {
    const trailing = /[.,;:!?)\]。，；：！？）]+$/.exec(url)?.[0] ?? "";
    const bare = url.slice(0, url.length - trailing.length);
    return hold(link(bare, bare)) + trailing;
  });
  text = emphasis(text);
  return text.replace(TOKEN, (_match, index) => tokens[Number(index)]);
}

function emphasis(escaped) {
  return escaped
    .replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, "<strong>$1</strong>")
    .replace(/~~(?=\S)([\s\S]*?\S)~~/g, "<del>$1</del>")
    .replace(/(^|[^*\w])\*(?=[^\s*])([^*]*?[^\s*])?\*(?!\*)/g, (match, before, inner) =>
      inner === undefined ? match : `${before}<em>${inner}</em>`,
    );
}

function isWebUrl(escapedUrl) {
  return /^https?:\/\/[^\s]+$/i.test(escapedUrl);
}

/** `url` is already escaped, so it cannot leave the attribute. */
function link(url, labelHtml) {
  return `<a class="md-link" href="${url}" target="_blank" rel="noopener noreferrer">${labelHtml}</a>`;
}
