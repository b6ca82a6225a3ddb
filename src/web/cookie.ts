/**
 * The sign-in cookie: its name and the two header operations on it. Pure (no express, no ws), so the
 * HTTP routes (auth.ts) and the WebSocket upgrade (ws/hub.ts) read it the same way.
 * Its value is a signed user token (auth/token.ts); the cookie is HttpOnly, so page scripts never see it.
 */

export const SESSION_COOKIE = "fpb_session";

/** The value of cookie `name` in a `Cookie` request header, or null. */
export function readCookie(header: string | undefined, name: string = SESSION_COOKIE): string | null {
  if (!header) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() !== name) continue;
    let value = part.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
    return value === "" ? null : value;
  }
  return null;
}

export interface CookieOptions {
  /** Seconds until the browser drops it; 0 deletes it now. */
  maxAgeSeconds: number;
  secure: boolean;
}

/**
 * A `Set-Cookie` value for the sign-in cookie. HttpOnly: page scripts cannot read the token.
 * SameSite=Lax: a cross-site page cannot make the browser send it with a POST or a fetch.
 */
export function sessionCookie(value: string, options: CookieOptions): string {
  const parts = [
    `${SESSION_COOKIE}=${value}`,
    "Path=/",
    `Max-Age=${Math.max(0, Math.floor(options.maxAgeSeconds))}`,
    "HttpOnly",
    "SameSite=Lax",
  ];
  if (options.secure) parts.push("Secure");
  return parts.join("; ");
}

/** Whether an `Origin` header names the host the request was sent to (same scheme-less host:port). */
export function sameOrigin(origin: string | undefined, host: string | undefined): boolean {
  if (origin === undefined) return true;
  if (!host) return false;
  try {
    return new URL(origin).host.toLowerCase() === host.toLowerCase();
  } catch {
    return false;
  }
}
