import { parseCookie, stringifySetCookie } from "cookie";

/**
 * The sign-in cookie: its name and the two header operations on it, done by the `cookie` package (the one
 * express itself uses) rather than by hand. No express, no ws, so the HTTP routes (auth.ts) and the WebSocket
 * upgrade (ws/upgrade.ts) read it the same way.
 * Its value is a signed user token (auth/token.ts); the cookie is HttpOnly, so page scripts never see it.
 */

export const SESSION_COOKIE = "fpb_session";

/**
 * The value of cookie `name` in a `Cookie` request header, or null (absent or empty). The first of two
 * same-named cookies wins, as the package reads them; a value in double quotes (RFC 6265 allows
 * DQUOTE *cookie-octet DQUOTE) is read without them, which the package leaves to its caller.
 */
export function readCookie(header: string | undefined, name: string = SESSION_COOKIE): string | null {
  if (!header) return null;
  let value = parseCookie(header)[name];
  if (value === undefined) return null;
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
  return value === "" ? null : value;
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
  return stringifySetCookie({
    name: SESSION_COOKIE,
    value,
    path: "/",
    maxAge: Math.max(0, Math.floor(options.maxAgeSeconds)),
    httpOnly: true,
    sameSite: "lax",
    secure: options.secure,
  });
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
