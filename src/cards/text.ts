/**
 * Text helpers for card markdown. Pure.
 *
 * Feishu markdown renders `<at>`, `<font>`, `<text_tag>` and similar tags. Text that comes from a model or a
 * user must not be able to @-mention everyone or restyle the card, so such text is escaped before it goes
 * into markdown; the agent's own reply keeps its markdown but loses any mention tags.
 */

/**
 * Drops terminal escape sequences and control characters (keeping newlines and tabs). Text pasted from tool
 * output carries ANSI colours; each control character costs 6 bytes as `\u001b` in the JSON sent.
 */
export function clean(text: string): string {
  return text.replace(ANSI_SEQUENCE, "").replace(CONTROL_CHARS, "");
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching terminal escapes is the point.
const ANSI_SEQUENCE = /\u001b\[[0-9;?]*[ -/]*[@-~]/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const CONTROL_CHARS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/** For plain text placed inside markdown: no tags, no HTML entities, no control characters. */
export function escapeMarkdown(text: string): string {
  return clean(text).replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/** For markdown written by the agent: keep formatting, neutralise mention and person tags. */
export function sanitizeMarkdown(markdown: string): string {
  return clean(markdown).replace(/<(\/?)(at|person)\b/gi, "&lt;$1$2");
}

/** Cuts `text` to at most `max` characters (code points), marking the cut with `suffix`. */
export function truncate(text: string, max: number, suffix = "…"): string {
  const chars = [...text];
  if (chars.length <= max) return text;
  const keep = Math.max(0, max - [...suffix].length);
  return chars.slice(0, keep).join("") + suffix;
}

/** One line: whitespace runs collapsed, trimmed. */
export function oneLine(text: string): string {
  return clean(text).replace(/\s+/g, " ").trim();
}

/** Markdown for a preview: kept as markdown when it brings its own code fence, else shown in a monospace block. */
export function previewBlock(preview: string): string {
  if (preview.includes("```")) return sanitizeMarkdown(preview);
  return `\`\`\`\n${clean(preview)}\n\`\`\``;
}
