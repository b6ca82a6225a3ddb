import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { checkToken, isRevoked } from "../auth/token.ts";
import { describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import type { Revocation, TokenRevocations } from "../store/token-revocations.ts";
import { readCookie, sameOrigin } from "../web/cookie.ts";
import type { Connection } from "./connections.ts";

/**
 * The HTTP side of a WebSocket upgrade: where its token comes from, whether it gets in, and how a refusal is
 * written; and the revocations a heartbeat reads to close the sockets of revoked tokens.
 */

export type Admission =
  | { ok: true; userId: string; token: Connection["token"] }
  | { ok: false; status: number; text: string };

/** Whether an upgrade may become a connection, and as whom (the revocations read now, from the store). */
export async function admit(
  request: IncomingMessage,
  url: URL,
  deps: { authSecret: string; now: () => number; revocations?: TokenRevocations; logger: Logger },
): Promise<Admission> {
  const { token, via } = credential(request, url);
  // A browser attaches the sign-in cookie to an upgrade that any page may start (cross-site WebSocket
  // hijacking); a cookie counts only when the page that opened the socket is our own.
  if (via === "cookie" && !sameOrigin(request.headers.origin, request.headers.host)) {
    deps.logger.info({ origin: request.headers.origin }, "websocket refused: foreign origin");
    return { ok: false, status: 403, text: "Forbidden" };
  }
  const check = token
    ? await checkToken(deps.authSecret, token, deps.now(), deps.revocations)
    : { ok: false as const, reason: "no token" };
  if (!check.ok) {
    deps.logger.info({ reason: check.reason, via }, "websocket refused");
    return { ok: false, status: 401, text: "Unauthorized" };
  }
  const { issuedAt, expiresAt, generation } = check;
  return {
    ok: true,
    userId: check.userId,
    token: { issuedAt, expiresAt, ...(generation !== undefined ? { generation } : {}) },
  };
}

/**
 * What a heartbeat keeps: a connection whose token has not expired and whose user was not revoked since, each
 * connected user's revocation read once. Unreadable revocations close nobody (an outage of the store is not a
 * revocation; the upgrade refuses while it lasts); the next beat reads them again.
 */
export async function tokensHolding(
  deps: { now: () => number; revocations?: TokenRevocations; logger: Logger },
  users: readonly string[],
): Promise<(connection: Connection) => boolean> {
  let found: Map<string, Revocation | undefined>;
  try {
    const store = deps.revocations;
    found = new Map(
      store
        ? await Promise.all(users.map(async (user) => [user, await store.revocation(user)] as const))
        : [],
    );
  } catch (error) {
    deps.logger.warn({ err: describeError(error) }, "websocket heartbeat: revocations unreadable");
    found = new Map();
  }
  const now = deps.now();
  return (connection) =>
    connection.token.expiresAt > now && !isRevoked(connection.token, found.get(connection.userId));
}

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
