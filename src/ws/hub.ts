import type { IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer } from "ws";
import type { PendingAsk } from "../asks/pending.ts";
import { EXTEND_MS, type ExtendTimes } from "../asks/person-actions.ts";
import type { AskRegistry } from "../asks/registry.ts";
import type { AskSurface, RunCommands } from "../domain/ports.ts";
import type { RunFeed } from "../domain/run-feed.ts";
import { topicInfo } from "../domain/topic-view.ts";
import { describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { isStorageError } from "../store/db.ts";
import type { TokenRevocations } from "../store/token-revocations.ts";
import { AnswersInFlight } from "./answers-in-flight.ts";
import { type Connection, ConnectionPool } from "./connections.ts";
import { FrameOrder } from "./frame-order.ts";
import { DEFAULT_WS_LIMITS, type WsLimits } from "./limits.ts";
import {
  type PageActionDeps,
  type PageActionFrame,
  pageAction,
  type Refusal,
  refusalTarget,
} from "./page-actions.ts";
import {
  askFrame,
  type ClientFrame,
  cancelledFrame,
  type ErrorCode,
  MAX_FRAME_BYTES,
  parseClientFrame,
  type ServerFrame,
} from "./protocol.ts";
import { SnapshotSender } from "./snapshot.ts";
import { admit, refuse, tokensHolding } from "./upgrade.ts";

export type { HubSocket } from "./connections.ts";

export interface HubDeps {
  registry: AskRegistry;
  /** Every run, whoever runs it (core.runs): the hub names no owner of runs. */
  runs: RunFeed;
  /** Cancelling, for a session whose `allows.cancel` says a viewer may. */
  commands: Pick<RunCommands, "cancel">;
  /** 延长 from a page: the card's own step and bound (ASK_EXTEND_MAX_MS); one hour in all by default. */
  askTimes?: Partial<ExtendTimes>;
  authSecret: string;
  /** Revoked tokens are refused at the upgrade, and open connections using one close at the next heartbeat. */
  revocations?: TokenRevocations;
  now: () => number;
  logger: Logger;
  heartbeatIntervalMs?: number;
  /** Overrides of DEFAULT_WS_LIMITS (tests use small ones). */
  limits?: Partial<WsLimits>;
}

export const WS_PATH = "/ws";

/**
 * The WebSocket hub (DESIGN §7). Authenticated connections, grouped by user. It is also an ask surface:
 * a run's sender with a connection open can be asked, every one of their connections gets the question,
 * and every settle — answer from any surface, timeout, cancel — withdraws it everywhere.
 * A disconnect never fails an ask; `subscribe` re-sends the pending ones with their original ids.
 */
export class WsHub implements AskSurface {
  readonly name = "websocket";
  readonly #deps: HubDeps;
  readonly #times: ExtendTimes;
  readonly #pool: ConnectionPool;
  readonly #wss: WebSocketServer;
  readonly #unsubscribe: (() => void)[] = [];
  readonly #heartbeat: ReturnType<typeof setInterval>;
  /** Set only while `registry.complete` runs for an answer from this hub. */
  readonly #inFlight = new AnswersInFlight<Connection>();
  readonly #frames = new FrameOrder();
  readonly #snapshots: SnapshotSender;
  /** A heartbeat still reading revocations: the next one waits its turn rather than pile up reads. */
  #beating = false;

  constructor(deps: HubDeps) {
    this.#deps = deps;
    this.#times = { extendMs: EXTEND_MS, extendMaxMs: 60 * 60_000, ...deps.askTimes };
    this.#snapshots = new SnapshotSender(deps.runs, (error, sessionId) =>
      deps.logger.warn({ err: describeError(error), sessionId }, "session snapshot not read"),
    );
    this.#pool = new ConnectionPool({
      limits: { ...DEFAULT_WS_LIMITS, ...deps.limits },
      logger: deps.logger,
      onFrame: (connection, text) => this.#onFrame(connection, text),
      onRateLimited: (connection) =>
        this.#error(connection, null, "rate_limited", "too many frames; slow down and send again"),
    });
    // ws closes the socket (1009) above maxPayload; below it, our own 1 MiB check answers with an error frame.
    this.#wss = new WebSocketServer({ noServer: true, maxPayload: 4 * MAX_FRAME_BYTES });
    this.#unsubscribe.push(
      // Asked here, asked on another instance (mirrored), or 延长 moved the deadline: the ask with its expiresAt
      // (clients keep one per request id). An MCP elicitation is shown on the Feishu card only: no page form.
      ...(["registered", "mirrored", "extended"] as const).map((event) =>
        deps.registry.on(event, (ask) => {
          if (!ask.elicitation) this.#sendAround(ask, askFrame(ask, this.#times));
        }),
      ),
      deps.registry.on("settled", ({ ask, outcome }) => {
        // A connection still writing its answer hears this after its "accepted" (answers-in-flight.ts).
        if (!ask.elicitation) this.#sendAround(ask, cancelledFrame(ask, outcome));
      }),
      deps.runs.on("run_updated", (run) => this.#sendToSubscribers(run.sessionId)),
      deps.runs.on("queue_changed", ({ sessionId }) => this.#sendToSubscribers(sessionId)),
    );
    this.#heartbeat = setInterval(() => void this.#beat(), deps.heartbeatIntervalMs ?? 30_000);
    this.#heartbeat.unref();
  }

  canReach(target: { userId: string }): boolean {
    return this.#pool.countFor(target.userId) > 0;
  }

  /** Open connections: all of them, or one user's. */
  connectionCount(userId?: string): number {
    return userId === undefined ? this.#pool.count() : this.#pool.countFor(userId);
  }

  /** How many sessions at least one open connection is subscribed to. */
  subscribedSessionCount = (): number => this.#pool.sessionCount();

  /** Bytes queued to clients and not yet written to the network (bounded per connection by the limits). */
  bufferedBytes = (): number => this.#pool.bufferedBytes();

  /** What the limits did: connections closed, by reason, and frames refused for the rate. */
  droppedConnections(): Readonly<ConnectionPool["dropped"]> {
    return { ...this.#pool.dropped };
  }

  /**
   * Serves `GET /ws` upgrades on an HTTP server. The token comes as `?token=`, `Authorization: Bearer`, or —
   * from the session page — the HttpOnly `fpb_session` cookie (web/cookie.ts), accepted from our own origin only.
   */
  attach(server: Server): void {
    server.on("upgrade", (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      socket.on("error", (error) => this.#deps.logger.debug({ err: error }, "upgrade socket error"));
      this.#upgrade(request, socket, head).catch((error: unknown) => {
        // The revocations could not be read (the store is down): nobody is let in unchecked.
        this.#deps.logger.warn({ err: describeError(error) }, "websocket refused: revocations unreadable");
        refuse(socket, 503, "Service Unavailable");
      });
    });
  }

  async #upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const url = new URL(request.url ?? "/", "http://localhost");
    if (url.pathname !== WS_PATH) return refuse(socket, 404, "Not Found");
    const admitted = await admit(request, url, this.#deps);
    if (!admitted.ok) return refuse(socket, admitted.status, admitted.text);
    this.#wss.handleUpgrade(request, socket, head, (ws) =>
      this.#pool.accept(ws, admitted.userId, admitted.token),
    );
  }

  async close(): Promise<void> {
    clearInterval(this.#heartbeat);
    for (const off of this.#unsubscribe) off();
    this.#pool.terminateAll();
    for (const client of this.#wss.clients) client.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
  }

  /** One heartbeat: the tokens checked again (upgrade.ts), then the pool's pings. One at a time. */
  async #beat(): Promise<void> {
    if (this.#beating) return;
    this.#beating = true;
    try {
      this.#pool.beat(await tokensHolding(this.#deps, this.#pool.users()));
    } finally {
      this.#beating = false;
    }
  }

  /**
   * A connection's frames are handled in the order they came, each one's replies before the next one's (an
   * answer waits for its row; a ping sent after it is answered after it). The rate limit bounds the queue.
   */
  #onFrame(connection: Connection, text: string | null): void {
    const handle = (): void | Promise<void> => {
      if (text === null)
        return this.#error(connection, null, "bad_frame", "binary frames are not supported; send JSON text");
      const failed = (error: unknown) => {
        // The database refused (a read for a subscribe): the client may send it again; nothing else is wrong.
        if (isStorageError(error))
          return this.#error(
            connection,
            null,
            "unavailable",
            "the store cannot be read right now; try again",
          );
        this.#deps.logger.error({ err: error, userId: connection.userId }, "websocket frame handling failed");
        this.#error(connection, null, "bad_frame", `could not handle frame: ${describeError(error)}`);
      };
      try {
        // Never rejects: the next frame of this connection waits on it (frame-order.ts).
        return this.#handle(connection, text)?.catch(failed);
      } catch (error) {
        failed(error);
      }
    };
    this.#frames.handle(connection, handle);
  }

  #handle(connection: Connection, text: string): void | Promise<void> {
    const parsed = parseClientFrame(text);
    if (!parsed.ok) return this.#error(connection, null, parsed.code, parsed.message);
    const frame: ClientFrame = parsed.frame;
    switch (frame.type) {
      case "ping":
        return this.#send(connection, { type: "pong", sessionId: frame.sessionId ?? "", data: {} });
      case "subscribe":
        return this.#subscribe(connection, frame.sessionId);
      case "unsubscribe":
        return this.#pool.unsubscribe(connection, frame.sessionId);
      case "ask_user_questions_result":
      case "ask_user_questions_decline":
      case "cancel":
      case "extend":
        return this.#act(connection, frame as PageActionFrame);
    }
  }

  async #subscribe(connection: Connection, sessionId: string): Promise<void> {
    // An unknown session is "forbidden" too, so a stranger cannot probe which sessions exist.
    const { runs } = this.#deps;
    const [mayView, session] = await Promise.all([
      runs.canView(connection.userId, sessionId),
      runs.session(sessionId),
    ]);
    if (!mayView) return this.#error(connection, sessionId, "forbidden", "you may not view this session");
    if (!this.#pool.subscribe(connection, sessionId)) {
      return this.#error(
        connection,
        sessionId,
        "too_many_subscriptions",
        "this connection is subscribed to too many sessions; unsubscribe from one first",
      );
    }
    const canAnswer = runs.activeRun(sessionId)?.senderId === connection.userId;
    const canCancel = session?.allows.cancel !== false;
    // topics (issue 19): a topic session is named and placed in its group, so a client can list it as a topic;
    // every other session's frame stays as it was.
    const topic = topicInfo(session);
    const title = topic ? session?.title : undefined;
    this.#send(connection, {
      type: "subscribed",
      sessionId,
      data: { canAnswer, canCancel, ...(topic ? { topic, ...(title !== undefined ? { title } : {}) } : {}) },
    });
    // In line with the snapshots every subscriber gets, so none older lands after this one.
    await this.#snapshots.send(sessionId, (data) => {
      this.#send(connection, { type: "session_snapshot", sessionId, data });
      for (const ask of this.#deps.registry.getPendingForSession(sessionId)) {
        if (ask.elicitation) continue;
        // Viewers who are not the sender get it too and show it read-only (`subscribed.canAnswer` is false).
        this.#send(connection, askFrame(ask, this.#times));
      }
    });
  }

  /** A page's answer, 拒绝回答, 取消任务 or 延长 (page-actions.ts): a refusal comes back as an error frame. */
  #act(connection: Connection, frame: PageActionFrame): Promise<void> {
    const d: PageActionDeps = {
      registry: this.#deps.registry,
      runs: this.#deps.runs,
      commands: this.#deps.commands,
      times: this.#times,
      surface: this.name,
    };
    const answering = frame.type === "ask_user_questions_result" ? frame.data.requestId : undefined;
    if (answering !== undefined) this.#inFlight.begin(answering, connection);
    return pageAction(d, connection.userId, frame)
      .catch((error: unknown): Refusal => {
        // Refused by the database: nothing changed (the question stays open), said where it came from.
        this.#deps.logger.error({ err: error, userId: connection.userId }, "page action failed");
        const message = `not saved, try again: ${describeError(error)}`;
        return { code: "unavailable", message, ...refusalTarget(frame) };
      })
      .then((result) => {
        const held = answering !== undefined ? this.#inFlight.end(answering, connection) : [];
        if (answering !== undefined && result === undefined)
          this.#send(connection, {
            type: "ask_user_questions_accepted",
            sessionId: frame.sessionId,
            data: { requestId: answering },
          });
        for (const later of held) this.#send(connection, later);
        if (result === undefined) return;
        if ("cancelled" in result)
          return this.#send(connection, {
            type: "cancelled",
            sessionId: frame.sessionId,
            data: { runId: result.cancelled },
          });
        this.#error(
          connection,
          frame.sessionId,
          result.code,
          result.message,
          result.requestId,
          result.action,
        );
      });
  }

  /**
   * Every connection of the answerer (subscribed or not, like the seed's send(userId)), and every other
   * connection subscribed to the session, which may view it read-only.
   */
  #sendAround(ask: PendingAsk, frame: ServerFrame): void {
    const send = (connection: Connection) => {
      if (!this.#inFlight.hold(ask.requestId, connection, frame)) this.#send(connection, frame);
    };
    for (const connection of this.#pool.ofUser(ask.answererId)) send(connection);
    for (const connection of this.#pool.subscribers(ask.sessionId) ?? [])
      if (connection.userId !== ask.answererId) send(connection);
  }

  #sendToSubscribers(sessionId: string): void {
    if (!this.#pool.subscribers(sessionId)) return;
    this.#snapshots.sendToAll(sessionId, (data) => {
      for (const connection of this.#pool.subscribers(sessionId) ?? [])
        this.#send(connection, { type: "session_snapshot", sessionId, data });
    });
  }

  #error(
    connection: Connection,
    sessionId: string | null,
    code: ErrorCode,
    message: string,
    requestId?: string,
    action?: "cancel" | "extend",
  ): void {
    this.#send(connection, {
      type: "error",
      sessionId,
      data: { code, message, ...(requestId ? { requestId } : {}), ...(action ? { action } : {}) },
    });
  }

  #send(connection: Connection, frame: ServerFrame): void {
    this.#pool.send(connection, frame);
  }
}
