import { domainToUnicode } from "node:url";

/**
 * What an MCP server's URL-mode elicitation may send a person to (issue 24 item 12). The card used to say
 * only 打开链接, so `https://gооgle.com` (Cyrillic о), `https://xn--ggle-55da.com` or
 * `https://google.com@evil.example` looked like anywhere. Now: https only, no user:password part, and the
 * host the browser will really open shown beside the link — in Unicode, and in punycode when that differs —
 * and, when the server's `MCP_CONFIG` entry lists `elicitationHosts`, only those hosts (or `*.domain` for its
 * subdomains). Hosts are compared in their ASCII (punycode) form, as the browser resolves them.
 */

export interface ElicitUrlHost {
  /** The host as a person reads it (`例子.com`). */
  unicode: string;
  /** The host as the browser resolves it (`xn--fsqu00a.com`); the same as `unicode` for plain ASCII. */
  ascii: string;
}

export type ElicitUrlCheck = { ok: true; href: string; host: ElicitUrlHost } | { ok: false; reason: string };

export function checkElicitUrl(raw: string, allowedHosts?: readonly string[]): ElicitUrlCheck {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: "not an absolute URL" };
  }
  if (url.protocol !== "https:")
    return { ok: false, reason: `only https links are shown (got ${url.protocol})` };
  if (url.username !== "" || url.password !== "")
    return { ok: false, reason: "a link with a user name or password before the host is refused" };
  // WHATWG URL parsing already gives the host in ASCII (IDNA to punycode) and lower case; a trailing dot is
  // dropped so that `example.com.` and `example.com` are one host.
  const ascii = url.hostname.replace(/\.$/, "");
  if (ascii === "") return { ok: false, reason: "no host" };
  if (allowedHosts && allowedHosts.length > 0 && !allowedHosts.some((allowed) => hostMatches(ascii, allowed)))
    return { ok: false, reason: `host ${ascii} is not in this server's elicitationHosts` };
  const unicode = domainToUnicode(ascii) || ascii;
  return { ok: true, href: url.href, host: { unicode, ascii } };
}

/** `allowed` is a host (`auth.example.com`) or `*.example.com` (its subdomains, not itself). */
function hostMatches(ascii: string, allowed: string): boolean {
  const pattern = normalizeHost(allowed.startsWith("*.") ? allowed.slice(2) : allowed);
  if (pattern === undefined) return false;
  return allowed.startsWith("*.") ? ascii.endsWith(`.${pattern}`) : ascii === pattern;
}

/** A configured host in the form `checkElicitUrl` compares: ASCII, lower case; undefined when it is no host. */
export function normalizeHost(host: string): string | undefined {
  if (host === "" || /[/:@?#\s]/.test(host)) return undefined;
  try {
    return new URL(`https://${host}`).hostname.replace(/\.$/, "") || undefined;
  } catch {
    return undefined;
  }
}
