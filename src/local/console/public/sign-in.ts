/**
 * The console knows who you are (its user switcher); the session page knows you by its sign-in cookie.
 * These keep the two in step in local mode, so 会话详情 opens as the console's current user rather than on
 * a 请先登录 page or as whoever signed in last:
 *
 * - a card's link to a session page goes through `/auth/local?user=…&next=…` on the link's own host (the
 *   card says `localhost` even when the console was opened as 127.0.0.1, and cookies are per host);
 * - switching user also signs this origin in as them, so a session tab reloaded afterwards follows.
 *
 * Pure (no DOM, no fetch): runs in Node for tests. The fetch that signs in is console.ts `followUser`.
 */

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** Whether `url` points at this same server: same origin, or loopback names for the same port. */
function sameServer(url: URL, consoleOrigin: string): boolean {
  const here = new URL(consoleOrigin);
  if (url.origin === here.origin) return true;
  return (
    url.protocol === here.protocol &&
    url.port === here.port &&
    LOOPBACK.has(url.hostname) &&
    LOOPBACK.has(here.hostname)
  );
}

/**
 * The URL to open for a card link, as `userId`: a session page of this server goes through local sign-in
 * (back to the same path); any other link is returned unchanged.
 */
export function openAs(href: string, userId: string, consoleOrigin: string): string {
  let url: URL;
  try {
    url = new URL(href);
  } catch {
    return href;
  }
  if (!userId || !url.pathname.startsWith("/sessions/") || !sameServer(url, consoleOrigin)) return href;
  const next = `${url.pathname}${url.search}${url.hash}`;
  return `${url.origin}/auth/local?user=${encodeURIComponent(userId)}&next=${encodeURIComponent(next)}`;
}
