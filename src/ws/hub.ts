import type { IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";
import { checkAnswers } from "../asks/answers.ts";
import type { AskOutcome, AskRegistry, PendingAsk } from "../asks/registry.ts";
import { verifyToken } from "../auth/token.ts";
import { describeError } from "../errors.ts";
import { canViewSession } from "../harness/access.ts";
import type { AskSurface } from "../harness/dispatcher.ts";
import type { SessionRunner } from "../harness/runner.ts";
import type { Logger } from "../logger.ts";
import { readCookie, sameOrigin } from "../web/cookie.ts";
import {
  askFrame,
  type ClientFrame,
  type ErrorCode,
  MAX_FRAME_BYTES,
  parseClientFrame,
  type ServerFrame,
  type SessionSnapshot,
} from "./protocol.ts";

/** The part of a WebSocket the hub uses; tests and other transports can satisfy it. */
export interface HubSocket {
  send(data: string): void;
  close(code?: number, reason?: string): void;
  readonly readyState: number;
}

interface Connection {
  id: number;
  userId: string;
  socket: HubSocket;
  /** The sessions this connection is subscribed to; mirrored by `WsHub#bySession`. */
  subscriptions: Set<string>;
  /** Set once its socket has closed: a closed connection is in no index and never re-enters one. */
  closed: boolean;
}

export interface HubDeps {
  registry: AskRegistry;
  runner: SessionRunner;
  authSecret: string;
  now: () => number;
  logger: Logger;
  heartbeatIntervalMs?: number;
}

export const WS_PATH = "/ws";
const OPEN = 1;

/**
 * The WebSocket hub (DESIGN §7). Authenticated connections, grouped by user. It is also an ask surface:
 * a run's sender with a connection open can be asked, every one of their connections gets the question,
 * and every settle — answer from any surface, timeout, cancel — withdraws it everywhere.
 * A disconnect never fails an ask; `subscribe` re-sends the pending ones with their original ids.
 */
export class WsHub implements AskSurface {
  readonly name = "websocket";
  readonly #deps: HubDeps;
  readonly #byUser = new Map<string, Set<Connection>>();
  /** Open connections by the sessions they are subscribed to; a session with none has no entry. */
  readonly #bySession = new Map<string, Set<Connection>>();
  readonly #wss: WebSocketServer;
  readonly #unsubscribe: (() => void)[] = [];
  readonly #heartbeat: ReturnType<typeof setInterval>;
  readonly #alive = new WeakMap<WebSocket, boolean>();
  #nextId = 1;
  /** Set only while `registry.complete` runs for an answer from this hub. */
  #answering: { requestId: string; connection: Connection } | undefined;

  constructor(deps: HubDeps) {
    this.#deps = deps;
    // ws closes the socket (1009) above maxPayload; below it, our own 1 MiB check answers with an error frame.
    this.#wss = new WebSocketServer({ noServer: true, maxPayload: 4 * MAX_FRAME_BYTES });
    this.#unsubscribe.push(
      deps.registry.on("registered", (ask) => this.#sendAround(ask, askFrame(ask))),
      // 延长 moved the deadline: the same ask again, with its new expiresAt (clients keep one per request id).
      deps.registry.on("extended", (ask) => this.#sendAround(ask, askFrame(ask))),
      deps.registry.on("settled", ({ ask, outcome }) => {
        // The connection whose answer won hears "accepted" before the "cancelled" every connection gets.
        const winner = this.#answering;
        if (winner?.requestId === ask.requestId) {
          const data = { requestId: ask.requestId };
          this.#send(winner.connection, {
            type: "ask_user_questions_accepted",
            sessionId: ask.sessionId,
            data,
          });
        }
        this.#sendAround(ask, cancelledFrame(ask, outcome));
      }),
      deps.runner.on("run_updated", (run) => this.#sendToSubscribers(run.sessionId)),
      deps.runner.on("queue_changed", ({ sessionId }) => this.#sendToSubscribers(sessionId)),
    );
    this.#heartbeat = setInterval(() => this.#beat(), deps.heartbeatIntervalMs ?? 30_000);
    this.#heartbeat.unref();
  }

  canReach(target: { userId: string }): boolean {
    return (this.#byUser.get(target.userId)?.size ?? 0) > 0;
  }

  connectionCount(): number {
    let count = 0;
    for (const set of this.#byUser.values()) count += set.size;
    return count;
  }

  /** How many sessions at least one open connection is subscribed to. */
  subscribedSessionCount(): number {
    return this.#bySession.size;
  }

  /**
   * Serves `GET /ws` upgrades on an HTTP server. The token comes as `?token=`, `Authorization: Bearer`, or —
   * from the session page — the HttpOnly `fpb_session` cookie (web/cookie.ts), accepted from our own origin only.
   */
  attach(server: Server): void {
    server.on("upgrade", (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on("error", (error) => this.#deps.logger.debug({ err: error }, "upgrade socket error"));
      const url = new URL(request.url ?? "/", "http://localhost");
      if (url.pathname !== WS_PATH) return refuse(socket, 404, "Not Found");
      const { token, via } = credential(request, url);
      // A browser attaches the sign-in cookie to an upgrade that any page may start (cross-site WebSocket
      // hijacking); a cookie counts only when the page that opened the socket is our own.
      if (via === "cookie" && !sameOrigin(request.headers.origin, request.headers.host)) {
        this.#deps.logger.info({ origin: request.headers.origin }, "websocket refused: foreign origin");
        return refuse(socket, 403, "Forbidden");
      }
      const check = token
        ? verifyToken(this.#deps.authSecret, token, this.#deps.now())
        : { ok: false as const, reason: "no token" };
      if (!check.ok) {
        this.#deps.logger.info({ reason: check.reason, via }, "websocket refused");
        return refuse(socket, 401, "Unauthorized");
      }
      this.#wss.handleUpgrade(request, socket, head, (ws) => this.#accept(ws, check.userId));
    });
  }

  async close(): Promise<void> {
    clearInterval(this.#heartbeat);
    for (const off of this.#unsubscribe) off();
    for (const client of this.#wss.clients) client.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
  }

  #accept(ws: WebSocket, userId: string): void {
    const connection: Connection = {
      id: this.#nextId++,
      userId,
      socket: ws,
      subscriptions: new Set(),
      closed: false,
    };
    let set = this.#byUser.get(userId);
    if (!set) {
      set = new Set();
      this.#byUser.set(userId, set);
    }
    set.add(connection);
    this.#alive.set(ws, true);
    ws.on("pong", () => this.#alive.set(ws, true));
    ws.on("message", (data, isBinary) => {
      if (isBinary)
        return this.#error(connection, null, "bad_frame", "binary frames are not supported; send JSON text");
      const text = Array.isArray(data)
        ? Buffer.concat(data).toString("utf8")
        : Buffer.from(data as ArrayBuffer).toString("utf8");
      try {
        this.#handle(connection, text);
      } catch (error) {
        this.#deps.logger.error({ err: error, userId }, "websocket frame handling failed");
        this.#error(connection, null, "bad_frame", `could not handle frame: ${describeError(error)}`);
      }
    });
    ws.on("error", (error) => this.#deps.logger.debug({ err: error, userId }, "websocket error"));
    ws.on("close", () => {
      // A disconnect never fails an ask (resume seed D1): the user may come back and answer.
      connection.closed = true;
      set.delete(connection);
      if (set.size === 0) this.#byUser.delete(userId);
      for (const sessionId of connection.subscriptions) this.#removeSubscriber(connection, sessionId);
      connection.subscriptions.clear();
    });
  }

  #handle(connection: Connection, text: string): void {
    const parsed = parseClientFrame(text);
    if (!parsed.ok) return this.#error(connection, null, parsed.code, parsed.message);
    const frame: ClientFrame = parsed.frame;
    switch (frame.type) {
      case "ping":
        return this.#send(connection, { type: "pong", sessionId: frame.sessionId ?? "", data: {} });
      case "subscribe":
        return this.#subscribe(connection, frame.sessionId);
      case "unsubscribe":
        connection.subscriptions.delete(frame.sessionId);
        this.#removeSubscriber(connection, frame.sessionId);
        return;
      case "ask_user_questions_result":
        return this.#answer(connection, frame.sessionId, frame.data.requestId, frame.data.answers);
      case "cancel":
        return this.#cancel(connection, frame.sessionId);
    }
  }

  #subscribe(connection: Connection, sessionId: string): void {
    // An unknown session is "forbidden" too, so a stranger cannot probe which sessions exist.
    if (!this.#canView(connection.userId, sessionId)) {
      return this.#error(connection, sessionId, "forbidden", "you may not view this session");
    }
    this.#addSubscriber(connection, sessionId);
    const active = this.#deps.runner.activeRun(sessionId);
    const canAnswer = active?.senderId === connection.userId;
    this.#send(connection, { type: "subscribed", sessionId, data: { canAnswer } });
    this.#send(connection, { type: "session_snapshot", sessionId, data: this.#snapshot(sessionId) });
    for (const ask of this.#deps.registry.getPendingForSession(sessionId)) {
      // Viewers who are not the sender get it too and show it read-only (`subscribed.canAnswer` is false).
      this.#send(connection, askFrame(ask));
    }
  }

  #answer(connection: Connection, sessionId: string, requestId: string, rawAnswers: unknown): void {
    const ask = this.#deps.registry.get(requestId);
    if (!ask || ask.sessionId !== sessionId) {
      return this.#error(
        connection,
        sessionId,
        "stale_request",
        "this question is no longer waiting for an answer",
        requestId,
      );
    }
    if (ask.answererId !== connection.userId) {
      return this.#error(
        connection,
        sessionId,
        "forbidden",
        "only the person who started the task may answer",
        requestId,
      );
    }
    const checked = checkAnswers(ask.questions, rawAnswers);
    if (!checked.ok) return this.#error(connection, sessionId, "invalid_answers", checked.error, requestId);
    this.#answering = { requestId, connection };
    let won: boolean;
    try {
      won = this.#deps.registry.complete(sessionId, requestId, checked.answers, {
        surface: this.name,
        userId: connection.userId,
      });
    } finally {
      this.#answering = undefined;
    }
    if (!won) {
      return this.#error(
        connection,
        sessionId,
        "stale_request",
        "this question is no longer waiting for an answer",
        requestId,
      );
    }
  }

  #cancel(connection: Connection, sessionId: string): void {
    // Strangers learn nothing, not even whether something is running.
    if (!this.#canView(connection.userId, sessionId)) {
      return this.#error(
        connection,
        sessionId,
        "forbidden",
        "only the person who started the task may cancel it",
      );
    }
    const run = this.#deps.runner.activeRun(sessionId);
    const result = this.#deps.runner.cancel(sessionId, connection.userId);
    if (result.ok && run)
      return this.#send(connection, { type: "cancelled", sessionId, data: { runId: run.id } });
    if (!result.ok && result.reason === "forbidden") {
      return this.#error(
        connection,
        sessionId,
        "forbidden",
        "only the person who started the task may cancel it",
      );
    }
    this.#error(connection, sessionId, "not_running", "no task is running in this session");
  }

  #canView(userId: string, sessionId: string): boolean {
    return canViewSession(this.#deps.runner, userId, sessionId);
  }

  #snapshot(sessionId: string): SessionSnapshot {
    const active = this.#deps.runner.activeRun(sessionId);
    const run = active ?? this.#deps.runner.currentRun(sessionId) ?? null;
    return {
      active: active !== undefined,
      run,
      queued: this.#deps.runner
        .queued(sessionId)
        .map(({ id, senderId, text, createdAt }) => ({ id, senderId, text, createdAt })),
    };
  }

  /**
   * Every connection of the answerer (subscribed or not, like the seed's send(userId)), and every other
   * connection subscribed to the session, which may view it read-only.
   */
  #sendAround(ask: PendingAsk, frame: ServerFrame): void {
    this.#sendToUser(ask.answererId, frame);
    for (const connection of this.#bySession.get(ask.sessionId) ?? [])
      if (connection.userId !== ask.answererId) this.#send(connection, frame);
  }

  #sendToUser(userId: string, frame: ServerFrame): void {
    for (const connection of this.#byUser.get(userId) ?? []) this.#send(connection, frame);
  }

  #sendToSubscribers(sessionId: string): void {
    const subscribers = this.#bySession.get(sessionId);
    if (!subscribers) return;
    const snapshot = this.#snapshot(sessionId);
    for (const connection of subscribers)
      this.#send(connection, { type: "session_snapshot", sessionId, data: snapshot });
  }

  #addSubscriber(connection: Connection, sessionId: string): void {
    if (connection.closed) return;
    connection.subscriptions.add(sessionId);
    let set = this.#bySession.get(sessionId);
    if (!set) {
      set = new Set();
      this.#bySession.set(sessionId, set);
    }
    set.add(connection);
  }

  #removeSubscriber(connection: Connection, sessionId: string): void {
    const set = this.#bySession.get(sessionId);
    if (!set?.delete(connection)) return;
    if (set.size === 0) this.#bySession.delete(sessionId);
  }

  #error(
    connection: Connection,
    sessionId: string | null,
    code: ErrorCode,
    message: string,
    requestId?: string,
  ): void {
    this.#send(connection, {
      type: "error",
      sessionId,
      data: { code, message, ...(requestId ? { requestId } : {}) },
    });
  }

  #send(connection: Connection, frame: ServerFrame): void {
    if (connection.socket.readyState !== OPEN) return;
    try {
      connection.socket.send(JSON.stringify(frame));
    } catch (error) {
      this.#deps.logger.debug({ err: error, userId: connection.userId }, "websocket send failed");
    }
  }

  #beat(): void {
    for (const ws of this.#wss.clients) {
      if (this.#alive.get(ws) === false) {
        ws.terminate();
        continue;
      }
      this.#alive.set(ws, false);
      ws.ping();
    }
  }
}

function cancelledFrame(ask: PendingAsk, outcome: AskOutcome): ServerFrame {
  const reason =
    outcome.kind === "answered"
      ? `answered via ${outcome.surface}`
      : outcome.kind === "timeout"
        ? "timeout"
        : outcome.reason;
  return {
    type: "ask_user_questions_cancelled",
    sessionId: ask.sessionId,
    data: { requestId: ask.requestId, reason },
  };
}

/** The token an upgrade carries: `?token=`, else `Authorization: Bearer`, else the sign-in cookie. */
function credential(
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

function refuse(socket: Duplex, status: number, text: string): void {
  socket.end(
    `HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${text.length}\r\n\r\n${text}`,
  );
}
