import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { readCookie } from "../web/cookie.ts";

/** The HTTP side of a WebSocket upgrade: where its token comes from, and how a refusal is written. */

/** The token an upgrade carries: `?token=`, else `Authorization: Bearer`, else the sign-in cookie. */
export function credential(
  request: IncomingMessage,
  url: URL,
): { token: string | null; via: "query" | "bearer" | "cookie" | "none" } {
  const query = url.searchParams.get("token");
  if (query) return { token: query, via: "query" };
  const header = bearer(request.headers.authorization);
  if (header) return { token: header, via: "bearer" };
  const cookie = readCookie(request.headers.cookie);
  if (cookie) return { token: cookie, via: "cookie" };
  return { token: null, via: "none" };
}

function bearer(header: string | undefined): string | null {
  const match = header?.match(/^Bearer\s+(\S+)$/i);
  return match?.[1] ?? null;
}

export function refuse(socket: Duplex, status: number, text: string): void {
  socket.end(
    `HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${text.length}\r\n\r\n${text}`,
  );
}
