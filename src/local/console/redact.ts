/**
 * What the console's API log may show of a call's headers and bodies: secrets blanked, card content (a JSON
 * string inside the JSON body) unfolded so it reads as a card, and every body clipped so a long run cannot
 * grow the log without bound. The console owns this rule; the logger has its own (REDACT_PATHS).
 */

export const REDACTED = "[redacted]";

/** Keys whose values are credentials wherever they appear: app_secret, tenant_access_token, Authorization… */
const SECRET_KEY = /secret|token|authorization|password|passwd|api[-_]?key|encrypt[-_]?key|cookie/i;

/** Characters of one shown body; the rest is cut with a note saying how much there was. */
export const MAX_BODY_CHARS = 16_000;

export function redactSecrets(value: unknown, depth = 0): unknown {
  if (depth > 20) return "…";
  if (Array.isArray(value)) return value.map((item) => redactSecrets(item, depth + 1));
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (SECRET_KEY.test(key)) out[key] = REDACTED;
    else if (key === "content" && typeof item === "string") out[key] = unfold(item, depth);
    else out[key] = redactSecrets(item, depth + 1);
  }
  return out;
}

/** A message's `content` is itself JSON (a card, a text); shown parsed, and redacted like the rest. */
function unfold(content: string, depth: number): unknown {
  if (!/^\s*[[{]/.test(content)) return content;
  try {
    return redactSecrets(JSON.parse(content), depth + 1);
  } catch (error) {
    // Not JSON after all: show the string as sent.
    return error instanceof SyntaxError ? content : String(error);
  }
}

/** Pretty JSON (or the text as is) of a redacted body, clipped to MAX_BODY_CHARS. */
export function showBody(body: unknown): string {
  const text = typeof body === "string" ? body : JSON.stringify(redactSecrets(body), null, 2);
  if (text.length <= MAX_BODY_CHARS) return text;
  return `${text.slice(0, MAX_BODY_CHARS)}\n…（已截断，共 ${text.length} 个字符）`;
}

export function redactHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [name, SECRET_KEY.test(name) ? redactAuth(value) : value]),
  );
}

/** `Bearer t-abc…` → `Bearer [redacted]`: the scheme says what kind of credential it was. */
function redactAuth(value: string): string {
  const scheme = /^(\w+)\s+/.exec(value)?.[1];
  return scheme ? `${scheme} ${REDACTED}` : REDACTED;
}
