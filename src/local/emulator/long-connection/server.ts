import { randomBytes } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";
import type { Observer } from "../observer.ts";
import type { EmulatorClock } from "../types.ts";
import { Deliveries } from "./deliveries.ts";
import { decodeFrame, encodeFrame, type Frame, METHOD } from "./frame.ts";
import type { Connection, FrameRecord, LongConnectionOptions } from "./types.ts";

/**
 * The platform's side of the long connection (docs/long-connection.md): the endpoint hands out a one-time
 * ticket URL, the WebSocket upgrade redeems it, pings get pongs carrying ClientConfig, and data frames go
 * out through `Deliveries`. Connection state is in memory only: a restarted emulator has no clients.
 */

export const WS_PATH = "/ws/v2";
/** Codes of the endpoint (`POST /callback/ws/endpoint`), as the SDKs name them. */
export const ENDPOINT_CODES = { ok: 0, forbidden: 403, authFailed: 514, tooManyConnections: 1000040350 };
/** A ticket left unused this long (wall clock) is void (assumed; the platform's URL carries a short-lived ticket). */
const TICKET_TTL_MS = 60_000;

export class LongConnectionServer {
  readonly #ctx: { clock: EmulatorClock; observer: Observer };
  readonly #wss = new WebSocketServer({ noServer: true });
  readonly #tickets = new Map<string, { deviceId: string; service: number; issuedAt: number }>();
  readonly #connections = new Map<string, Connection>();
  /** Deliveries waiting for a just-opened connection's first ping. */
  readonly #onGreeting = new Set<() => void>();
  readonly #config: Required<Omit<LongConnectionOptions, "pick">>;
  readonly deliveries: Deliveries;
  readonly frames: FrameRecord[] = [];

  constructor(ctx: { clock: EmulatorClock; observer: Observer }, options: LongConnectionOptions = {}) {
    this.#ctx = ctx;
    this.#config = {
      pingIntervalS: 120,
      reconnectIntervalS: 120,
      reconnectNonceS: 30,
      reconnectCount: -1,
      redeliveryMs: [15_000, 300_000, 3_600_000, 21_600_000],
      fragmentBytes: 4096,
      frameType: "event",
      maxConnections: 50,
      ...options,
    };
    this.deliveries = new Deliveries({
      connections: () => this.#greeted(),
      opening: () => this.#connections.size - this.#greeted().length,
      greeting: (ms) =>
        new Promise<void>((resolve) => {
          const timer = setTimeout(done, ms);
          const waiters = this.#onGreeting;
          function done() {
            clearTimeout(timer);
            waiters.delete(done);
            resolve();
          }
          this.#onGreeting.add(done);
        }),
      send: (connection, frame) => this.#send(connection, frame),
      record: (record) => this.record(record),
      now: () => ctx.clock.now(),
      redeliveryMs: this.#config.redeliveryMs,
      fragmentBytes: this.#config.fragmentBytes,
      frameType: this.#config.frameType,
      pick: options.pick ?? ((n) => Math.floor(Math.random() * n)),
    });
  }

  /** The `ClientConfig` object, in seconds (the SDK multiplies by 1000). */
  clientConfig(): Record<string, number> {
    return {
      PingInterval: this.#config.pingIntervalS,
      ReconnectCount: this.#config.reconnectCount,
      ReconnectInterval: this.#config.reconnectIntervalS,
      ReconnectNonce: this.#config.reconnectNonceS,
    };
  }

  /** Changes ClientConfig; clients pick it up from their next pong, as on the platform. */
  configure(change: Partial<Pick<LongConnectionOptions, "pingIntervalS" | "reconnectIntervalS">>): void {
    Object.assign(this.#config, change);
  }

  /** The endpoint's answer for a credential check that passed, or the code that refuses it. */
  issue(wsBase: string): { code: number; msg: string; data?: Record<string, unknown> } {
    this.#sweepTickets();
    if (this.#connections.size + this.#tickets.size >= this.#config.maxConnections)
      return { code: ENDPOINT_CODES.tooManyConnections, msg: "exceeded the connection limit of this app" };
    const ticket = randomBytes(16).toString("hex");
    const deviceId = String(7_000_000_000_000 + Math.floor(Math.random() * 1e12));
    const service = 33_554_678;
    this.#tickets.set(ticket, { deviceId, service, issuedAt: performance.now() });
    const query = new URLSearchParams({
      fpid: "493",
      aid: "552564",
      device_id: deviceId,
      access_key: randomBytes(8).toString("hex"),
      service_id: String(service),
      ticket,
    });
    return {
      code: 0,
      msg: "ok",
      data: { URL: `${wsBase}${WS_PATH}?${query}`, ClientConfig: this.clientConfig() },
    };
  }

  /** Whether this server issued the upgrade's ticket (several apps: each app's server redeems its own). */
  issued(req: IncomingMessage): boolean {
    const url = new URL(req.url ?? "/", "http://emulator");
    return this.#tickets.has(url.searchParams.get("ticket") ?? "");
  }

  /** The HTTP server's `upgrade` listener: only a live ticket opens a connection. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? "/", "http://emulator");
    const ticket = url.searchParams.get("ticket") ?? "";
    const issued = url.pathname === WS_PATH ? this.#tickets.get(ticket) : undefined;
    if (!issued || performance.now() - issued.issuedAt > TICKET_TTL_MS) {
      // The platform refuses in headers the Go/Python clients read; Node treats any failure as retryable.
      socket.end(
        "HTTP/1.1 403 Forbidden\r\nHandshake-Status: 403\r\nHandshake-Msg: ticket invalid\r\nConnection: close\r\n\r\n",
      );
      return;
    }
    this.#tickets.delete(ticket);
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#open(ws, issued.deviceId, issued.service));
  }

  /** Connections that have pinged (see Connection.greeted): the ones events go to. */
  get online(): number {
    return this.#greeted().length;
  }

  connectionIds(): string[] {
    return this.#greeted().map((connection) => connection.id);
  }

  #greeted(): Connection[] {
    return [...this.#connections.values()].filter((connection) => connection.greeted);
  }

  /** Cuts every connection (or one) as a platform restart would; the SDK reconnects through the endpoint. */
  drop(connectionId?: string): number {
    const targets = [...this.#connections.values()].filter((c) => !connectionId || c.id === connectionId);
    for (const connection of targets) connection.socket.terminate();
    return targets.length;
  }

  /** Sends bytes as they are (malformed-frame tests): binary for a Uint8Array, a text frame for a string. */
  sendRaw(data: Uint8Array | string, connectionId?: string): number {
    let sent = 0;
    for (const connection of this.#connections.values()) {
      if (connectionId && connection.id !== connectionId) continue;
      connection.socket.send(data, { binary: typeof data !== "string" });
      this.record({ direction: "out", connectionId: connection.id, kind: "malformed", bytes: data.length });
      sent += 1;
    }
    return sent;
  }

  record(record: Omit<FrameRecord, "at">): void {
    const full: FrameRecord = { at: this.#ctx.clock.now(), ...record };
    this.frames.push(full);
    if (this.frames.length > 5000) this.frames.splice(0, 1000);
    this.#ctx.observer.emit("frame", full);
  }

  close(): void {
    for (const done of [...this.#onGreeting]) done();
    this.deliveries.close();
    for (const connection of this.#connections.values()) connection.socket.terminate();
    this.#connections.clear();
    this.#wss.close();
  }

  #open(socket: WebSocket, deviceId: string, service: number): void {
    const connection: Connection = { id: deviceId, socket, service, seq: 0, greeted: false };
    this.#connections.set(deviceId, connection);
    this.record({ direction: "in", connectionId: deviceId, kind: "open", bytes: 0 });
    socket.on("message", (data, isBinary) => this.#receive(connection, data, isBinary));
    socket.on("close", () => {
      this.#connections.delete(deviceId);
      this.record({ direction: "in", connectionId: deviceId, kind: "close", bytes: 0 });
      this.deliveries.connectionLost(deviceId);
    });
    // A socket error is followed by close; without a listener it would be thrown.
    socket.on("error", (error) =>
      this.record({
        direction: "in",
        connectionId: deviceId,
        kind: "close",
        bytes: 0,
        detail: error.message,
      }),
    );
  }

  #receive(connection: Connection, data: unknown, isBinary: boolean): void {
    const bytes = toBytes(data);
    let frame: Frame;
    try {
      if (!isBinary) throw new Error("text frame");
      frame = decodeFrame(bytes);
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      this.record({
        direction: "in",
        connectionId: connection.id,
        kind: "malformed",
        bytes: bytes.length,
        detail,
      });
      return;
    }
    const type = frame.headers.type;
    if (frame.method === METHOD.control) {
      this.record({ direction: "in", connectionId: connection.id, kind: "ping", bytes: bytes.length });
      if (type !== "ping") return;
      if (!connection.greeted) {
        connection.greeted = true;
        for (const done of [...this.#onGreeting]) done();
        this.#onGreeting.clear();
      }
      const pong = new TextEncoder().encode(JSON.stringify(this.clientConfig()));
      this.#send(connection, { ...frame, headers: { type: "pong" }, payload: pong });
      this.record({ direction: "out", connectionId: connection.id, kind: "pong", bytes: pong.length });
      return;
    }
    this.deliveries.ack(connection.id, frame, bytes.length);
  }

  #send(connection: Connection, frame: Frame): void {
    connection.socket.send(encodeFrame(frame));
  }

  #sweepTickets(): void {
    const now = performance.now();
    for (const [ticket, issued] of this.#tickets) {
      if (now - issued.issuedAt > TICKET_TTL_MS) this.#tickets.delete(ticket);
    }
  }
}

function toBytes(data: unknown): Uint8Array {
  if (data instanceof Uint8Array) return data;
  if (Array.isArray(data)) return Buffer.concat(data.filter((part) => part instanceof Uint8Array));
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return new Uint8Array();
}
