/**
 * Text helpers for one-line texts: card content (escaping and sanitizing markdown lives in
 * `cards/markdown.ts`), step summaries (`asks/summary.ts`) and the session page's lines, which the browser
 * bundle takes from here too. Pure, imports nothing: it runs on the server and in the pages.
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
