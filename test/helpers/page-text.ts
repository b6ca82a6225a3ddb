/**
 * What a person sees of an HTML page without a browser: its text nodes and the attributes a browser shows or
 * reads out (title, aria-label, placeholder, alt), entities decoded. Scripts, styles and comments are not
 * text. Written for the server's own small, well-formed pages; it knows nothing of the catalogue.
 */
export function visibleTexts(html: string): string[] {
  const body = html.replace(/<!--[\s\S]*?-->/g, "").replace(/<(script|style)\b[^>]*>[\s\S]*?<\/\1>/gi, "");
  const attributes = [...body.matchAll(/\s(?:title|aria-label|placeholder|alt)="([^"]*)"/gi)].map(
    (match) => match[1] ?? "",
  );
  const texts = body
    .split(/<[^>]*>/)
    .map((text) => text.replace(/\s+/g, " ").trim())
    .filter((text) => text !== "");
  return [...texts, ...attributes].map(decodeEntities);
}

/** Chinese characters and the CJK / full-width punctuation that would give an untranslated text away. */
export const CJK = /[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]/;

function decodeEntities(text: string): string {
  return text
    .replace(/&#(\d+);/g, (_whole, code: string) => String.fromCodePoint(Number(code)))
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");
}
