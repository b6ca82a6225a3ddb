import type { IncomingMessage } from "node:http";
import net from "node:net";
import type { NextFunction, Request, Response } from "express";
import { AppError } from "../errors.ts";

/**
 * DNS rebinding defence. A page on `evil.example` whose name is re-pointed at 127.0.0.1 talks to us with
 * the browser's full trust, but its requests still say `Host: evil.example`. So a request is served only
 * when its Host names us: a loopback name, an IP literal (a page loaded from an IP is our own page — no
 * name, nothing to rebind), or the host of PUBLIC_URL. Every other name is refused, on every route and on
 * the WebSocket upgrade, before any handler runs.
 */
export interface HostPolicy {
  /**
   * The public URL (PUBLIC_URL, else localhost on the bound port), read per request; its hostname is the one
   * DNS name we answer to besides loopback names. Ports are not compared: a proxy, `docker -p 8080:3000` or
   * `ssh -L` forwards to us under another port, and a rebinding page differs by its name, not its port.
   */
  publicUrl: () => string;
  /**
   * Paths served whatever the Host says. Feishu mode exempts the webhook: Feishu calls it by the request URL
   * set in its console, a reverse proxy may rewrite that Host, and a browser cannot sign a webhook anyway.
   */
  exemptPaths?: readonly string[];
}

/** hostname[:port] or [v6]:port, nothing else: no userinfo, path or spaces that a URL parser would reinterpret. */
const HOST_HEADER = /^(?:\[([0-9a-f:.]+)\]|([a-z0-9_.-]+))(?::\d{1,5})?$/i;

/** The hostname a Host header names (lower case, no trailing dot), or undefined when it is malformed. */
export function hostnameOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = HOST_HEADER.exec(header.trim());
  if (!match) return undefined;
  const v6 = match[1];
  if (v6 !== undefined) return net.isIPv6(v6) ? v6.toLowerCase() : undefined;
  return (match[2] ?? "").toLowerCase().replace(/\.$/, "");
}

export function isLoopbackName(hostname: string): boolean {
  if (hostname === "localhost" || hostname.endsWith(".localhost")) return true; // RFC 6761: never leaves the host
  if (net.isIPv4(hostname)) return hostname.startsWith("127.");
  return hostname === "::1";
}

/** Binding to this address listens on loopback only (else main.ts warns that the console is exposed). */
export function isLoopbackAddress(address: string): boolean {
  return net.isIP(address) !== 0 ? isLoopbackName(address) : address.toLowerCase() === "localhost";
}

export function hostAllowed(header: string | undefined, policy: HostPolicy): boolean {
  const hostname = hostnameOf(header);
  if (hostname === undefined || hostname === "") return false;
  if (isLoopbackName(hostname) || net.isIP(hostname) !== 0) return true;
  return hostname === publicHostname(policy.publicUrl());
}

function publicHostname(publicUrl: string): string | undefined {
  try {
    return new URL(publicUrl).hostname.toLowerCase().replace(/\.$/, "");
  } catch (error) {
    // config.ts validated PUBLIC_URL already; a value that still does not parse names no host.
    if (error instanceof TypeError) return undefined;
    throw error;
  }
}

function refusal(header: string | undefined): AppError {
  const shown = (header ?? "").slice(0, 100);
  return new AppError(
    "FORBIDDEN",
    `Host "${shown}" is not served here: open the bot by localhost, its IP address, or the host of PUBLIC_URL`,
  );
}

/** Express middleware: first in the chain, so no route ever sees a rebound request. */
export function hostGuard(policy: HostPolicy) {
  const exempt = new Set(policy.exemptPaths ?? []);
  return (req: Request, _res: Response, next: NextFunction): void => {
    if (exempt.has(req.path) || hostAllowed(req.headers.host, policy)) return next();
    next(refusal(req.headers.host));
  };
}

/** The same check for an upgrade, which Express never sees; answers 403 on the raw socket when refused. */
export function upgradeAllowed(
  request: IncomingMessage,
  socket: { end(data: string): void },
  policy: HostPolicy,
): boolean {
  if (hostAllowed(request.headers.host, policy)) return true;
  const body = refusal(request.headers.host).message;
  socket.end(
    `HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  return false;
}
