import { randomBytes } from "node:crypto";
import type { WebSocket } from "ws";
import type { Logger } from "../logger.ts";
import { type Bucket, fullBucket, takeFrame, type WsLimits } from "./limits.ts";
import type { ServerFrame } from "./protocol.ts";

/**
 * The hub's open connections: who they are, what they subscribe to, and the limits each one lives within
 * (limits.ts). The frame logic (hub.ts) sees only `Connection` and `send`; sockets stay in here.
 */

/** The part of a WebSocket the hub uses; tests and other transports can satisfy it. */
export interface HubSocket {
  send(data: string): void;
  close(code?: number, reason?: string): void;
  readonly readyState: number;
}

export interface Connection {
  id: number;
  userId: string;
  socket: HubSocket;
  /** The sessions this connection is subscribed to; mirrored by the pool's index by session. */
  subscriptions: Set<string>;
  /** Set once its socket has closed: a closed connection is in no index and never re-enters one. */
  closed: boolean;
  /** The token it signed in with: checked again at every heartbeat (expiry, revocation). */
  token: { issuedAt: number; expiresAt: number; generation?: number };
}

interface Entry {
  connection: Connection;
  ws: WebSocket;
  bucket: Bucket;
  /** The payload of our last ping; only a pong that echoes it proves the client is reading. */
  pingNonce: Buffer | undefined;
  alive: boolean;
  resumeTimer: ReturnType<typeof setTimeout> | undefined;
  /** Frames refused since reading last resumed; the client hears about the first one only. */
  refused: number;
}

const OPEN = 1;
/** RFC 6455 §7.4.1: 1008 policy violation — the client broke a limit, or its token no longer holds. */
const POLICY = 1008;

export interface PoolDeps {
  limits: WsLimits;
  logger: Logger;
  /** A whole text frame from a connection (binary frames come as `null`). */
  onFrame: (connection: Connection, text: string | null) => void;
  /** The first frame refused for the rate since reading last resumed (the hub answers `rate_limited`). */
  onRateLimited: (connection: Connection) => void;
}

export class ConnectionPool {
  readonly #deps: PoolDeps;
  /** Open connections per user, oldest first (Set keeps insertion order). */
  readonly #byUser = new Map<string, Set<Entry>>();
  /** Open connections by the sessions they are subscribed to; a session with none has no entry. */
  readonly #bySession = new Map<string, Set<Connection>>();
  readonly #entries = new Map<Connection, Entry>();
  #nextId = 1;
  /** What the limits did so far: connections closed, by reason, and frames refused for the rate. */
  readonly dropped = { slowReader: 0, tooManyConnections: 0, rateLimitedFrames: 0 };

  constructor(deps: PoolDeps) {
    this.#deps = deps;
  }

  accept(ws: WebSocket, userId: string, token: Connection["token"]): Connection {
    const connection: Connection = {
      id: this.#nextId++,
      userId,
      socket: ws,
      subscriptions: new Set(),
      closed: false,
      token,
    };
    const entry: Entry = {
      connection,
      ws,
      bucket: fullBucket(this.#deps.limits, performance.now()),
      pingNonce: undefined,
      alive: true,
      resumeTimer: undefined,
      refused: 0,
    };
    let set = this.#byUser.get(userId);
    if (!set) {
      set = new Set();
      this.#byUser.set(userId, set);
    }
    set.add(entry);
    this.#entries.set(connection, entry);
    this.#evictOldest(userId);
    ws.on("pong", (data) => {
      // An unsolicited pong (RFC 6455 allows them) proves nothing: a client that never reads can send those.
      if (entry.pingNonce && data.equals(entry.pingNonce)) entry.alive = true;
    });
    ws.on("message", (data, isBinary) => {
      if (!this.#throttle(entry)) return;
      if (isBinary) return this.#deps.onFrame(connection, null);
      const text = Array.isArray(data)
        ? Buffer.concat(data).toString("utf8")
        : Buffer.from(data as ArrayBuffer).toString("utf8");
      this.#deps.onFrame(connection, text);
    });
    ws.on("error", (error) => this.#deps.logger.debug({ err: error, userId }, "websocket error"));
    ws.on("close", () => this.#forget(entry));
    return connection;
  }

  count(): number {
    return this.#entries.size;
  }

  countFor(userId: string): number {
    return this.#byUser.get(userId)?.size ?? 0;
  }

  /** The users with a connection open (each once): whose revocations a heartbeat reads. */
  users(): string[] {
    return [...this.#byUser.keys()];
  }

  sessionCount(): number {
    return this.#bySession.size;
  }

  /** Bytes queued to all connections and not yet on the network. */
  bufferedBytes(): number {
    let total = 0;
    for (const entry of this.#entries.values()) total += entry.ws.bufferedAmount;
    return total;
  }

  *ofUser(userId: string): Iterable<Connection> {
    for (const entry of this.#byUser.get(userId) ?? []) yield entry.connection;
  }

  subscribers(sessionId: string): ReadonlySet<Connection> | undefined {
    return this.#bySession.get(sessionId);
  }

  /** False when the connection is at its subscription limit (it stays subscribed to what it had). */
  subscribe(connection: Connection, sessionId: string): boolean {
    if (connection.closed) return true;
    if (
      !connection.subscriptions.has(sessionId) &&
      connection.subscriptions.size >= this.#deps.limits.maxSubscriptionsPerConnection
    ) {
      return false;
    }
    connection.subscriptions.add(sessionId);
    let set = this.#bySession.get(sessionId);
    if (!set) {
      set = new Set();
      this.#bySession.set(sessionId, set);
    }
    set.add(connection);
    return true;
  }

  unsubscribe(connection: Connection, sessionId: string): void {
    connection.subscriptions.delete(sessionId);
    const set = this.#bySession.get(sessionId);
    if (!set?.delete(connection)) return;
    if (set.size === 0) this.#bySession.delete(sessionId);
  }

  /**
   * Sends one frame, unless the connection already holds more unsent bytes than the bound: then it is
   * terminated (a close frame could not get through a full buffer either), and the client reconnects and
   * subscribes again, which re-sends its snapshot and pending asks (DESIGN §7).
   */
  send(connection: Connection, frame: ServerFrame): void {
    const entry = this.#entries.get(connection);
    if (!entry || connection.socket.readyState !== OPEN) return;
    if (entry.ws.bufferedAmount > this.#deps.limits.maxBufferedBytes) {
      this.dropped.slowReader += 1;
      this.#deps.logger.warn(
        { userId: connection.userId, bufferedBytes: entry.ws.bufferedAmount },
        "websocket closed: client is not reading",
      );
      entry.ws.terminate();
      this.#forget(entry);
      return;
    }
    try {
      connection.socket.send(JSON.stringify(frame));
    } catch (error) {
      this.#deps.logger.debug({ err: error, userId: connection.userId }, "websocket send failed");
    }
  }

  /**
   * One heartbeat: terminate connections that did not answer the last ping, close those whose token no
   * longer holds (`tokenValid`), ping the rest with a fresh nonce.
   */
  beat(tokenValid: (connection: Connection) => boolean = () => true): void {
    for (const entry of [...this.#entries.values()]) {
      if (!tokenValid(entry.connection)) {
        this.#deps.logger.info(
          { userId: entry.connection.userId },
          "websocket closed: token expired or revoked",
        );
        entry.ws.close(POLICY, "token expired or revoked");
        this.#forget(entry);
        continue;
      }
      if (!entry.alive) {
        entry.ws.terminate();
        this.#forget(entry);
        continue;
      }
      entry.alive = false;
      entry.pingNonce = randomBytes(8);
      try {
        entry.ws.ping(entry.pingNonce);
      } catch (error) {
        this.#deps.logger.debug({ err: error }, "websocket ping failed");
      }
    }
  }

  terminateAll(): void {
    for (const entry of [...this.#entries.values()]) {
      entry.ws.terminate();
      this.#forget(entry);
    }
  }

  /**
   * Above the sustained rate, stop reading the socket: TCP pushes back on the sender and we do no extra work.
   * False when the frame is refused.
   */
  #throttle(entry: Entry): boolean {
    const { bucket, verdict } = takeFrame(entry.bucket, this.#deps.limits, performance.now());
    entry.bucket = bucket;
    if (!verdict.handle) {
      this.dropped.rateLimitedFrames += 1;
      entry.refused += 1;
      if (entry.refused === 1) this.#deps.onRateLimited(entry.connection);
    }
    if (verdict.pauseMs > 0 && !entry.resumeTimer && !entry.connection.closed) {
      entry.ws.pause();
      entry.resumeTimer = setTimeout(() => {
        entry.resumeTimer = undefined;
        entry.refused = 0;
        if (!entry.connection.closed) entry.ws.resume();
      }, verdict.pauseMs);
      entry.resumeTimer.unref();
    }
    return verdict.handle;
  }

  #evictOldest(userId: string): void {
    const set = this.#byUser.get(userId);
    while (set && set.size > this.#deps.limits.maxConnectionsPerUser) {
      const oldest = set.values().next().value;
      if (!oldest) return;
      this.dropped.tooManyConnections += 1;
      this.#deps.logger.info({ userId }, "websocket closed: too many connections for one user");
      oldest.ws.close(POLICY, "too many connections");
      this.#forget(oldest);
    }
  }

  /** Idempotent: the socket's close event may come after we already let the connection go. */
  #forget(entry: Entry): void {
    const { connection } = entry;
    if (connection.closed) return;
    // A disconnect never fails an ask (resume seed D1): the user may come back and answer.
    connection.closed = true;
    if (entry.resumeTimer) clearTimeout(entry.resumeTimer);
    this.#entries.delete(connection);
    const set = this.#byUser.get(connection.userId);
    set?.delete(entry);
    if (set?.size === 0) this.#byUser.delete(connection.userId);
    for (const sessionId of [...connection.subscriptions]) this.unsubscribe(connection, sessionId);
  }
}
