import fs from "node:fs";
import type { IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { WebSocket } from "ws";
import { createApp } from "../../src/app.ts";
import type { AskInput } from "../../src/asks/schema.ts";
import { signToken } from "../../src/auth/token.ts";
import { type Core, createCore } from "../../src/core.ts";
import { type RunView, type SessionInfo, TERMINAL_STATUSES } from "../../src/domain/types.ts";
import type { Agent } from "../../src/harness/agents/agent.ts";
import type { ToolImpl } from "../../src/harness/dispatcher.ts";
import { createLogger } from "../../src/logger.ts";
import { type Db, openDatabase } from "../../src/store/db.ts";
import type { WsLimits } from "../../src/ws/limits.ts";
import type { ServerFrame } from "../../src/ws/protocol.ts";
import { sampleAsk } from "../fixtures.ts";
import { eventually as waitEventually } from "./wait.ts";

/**
 * An end-to-end fixture for the WebSocket hub: a real SQLite file in a temp dir, the real core, the real
 * HTTP server on an ephemeral 127.0.0.1 port, and real `ws` clients. Everything waits for events, never
 * for time; the only timers are the bounds that turn a hang into a readable failure.
 */

// Captured at import, before any test installs fake timers: the fixture's own waits stay on real time.
const realSetTimeout = globalThis.setTimeout;
const realClearTimeout = globalThis.clearTimeout;

const WAIT_MS = 5_000;

export interface TestServerOptions {
  /** Defaults to a scripted agent that asks `sampleAsk()` once. */
  agent?: Agent;
  tools?: ToolImpl[];
  /** Defaults to 60 s: long enough that no test sees a timeout it did not ask for. */
  askTimeoutMs?: number;
  heartbeatIntervalMs?: number;
  wsLimits?: Partial<WsLimits>;
  /** QUEUE_MAX: the runner's default (20) when absent. */
  maxQueued?: number;
}

export interface ConnectOptions {
  /** Sent as `?token=`; `null` sends none. */
  token?: string | null;
  /** Sent as `Authorization: Bearer …` instead of the query string. */
  bearer?: string;
  path?: string;
  /** `false` makes the client ignore the server's heartbeat pings. */
  autoPong?: boolean;
}

export interface TestServer {
  /** `ws://127.0.0.1:<port>/ws` */
  url: string;
  port: number;
  core: Core;
  agent: Agent;
  db: Db;
  dbFile: string;
  secret: string;
  tokenFor(userId: string, ttlMs?: number): string;
  /** A user id connects with a fresh token; options choose the token, path and heartbeat behaviour. */
  connect(who: string | ConnectOptions): Promise<TestClient>;
  /** Tries an upgrade that must be refused; resolves with the HTTP status the server answered. */
  refusedStatus(options: ConnectOptions): Promise<number>;
  createSession(ownerId: string, overrides?: Partial<SessionInfo>): Promise<SessionInfo>;
  stop(): Promise<void>;
}

let sessionCounter = 0;

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-ws-"));
  const dbFile = path.join(dir, "bot.sqlite");
  const db = openDatabase(dbFile);
  const logger = createLogger({ level: "silent" });
  const secret = `test-secret-${path.basename(dir)}`;
  const agent = options.agent ?? createScriptedAskAgent();
  const core = await createCore({
    db,
    logger,
    agent,
    tools: options.tools ?? [],
    askTimeoutMs: options.askTimeoutMs ?? 60_000,
    authSecret: secret,
    ...(options.heartbeatIntervalMs ? { heartbeatIntervalMs: options.heartbeatIntervalMs } : {}),
    ...(options.wsLimits ? { wsLimits: options.wsLimits } : {}),
    ...(options.maxQueued ? { maxQueued: options.maxQueued } : {}),
  });
  const { server } = createApp({ ...core, logger });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `ws://127.0.0.1:${port}/ws`;
  const sockets = new Set<WebSocket>();

  const tokenFor = (userId: string, ttlMs = 60 * 60 * 1000) => signToken(secret, userId, Date.now() + ttlMs);

  const open = (connect: ConnectOptions): WebSocket => {
    const target = new URL(connect.path ?? "/ws", `http://127.0.0.1:${port}`);
    target.protocol = "ws:";
    if (connect.token) target.searchParams.set("token", connect.token);
    const headers: IncomingHttpHeaders = connect.bearer ? { authorization: `Bearer ${connect.bearer}` } : {};
    const ws = new WebSocket(target.toString(), { headers, autoPong: connect.autoPong ?? true });
    sockets.add(ws);
    ws.once("close", () => sockets.delete(ws));
    return ws;
  };

  return {
    url,
    port,
    core,
    agent,
    db,
    dbFile,
    secret,
    tokenFor,
    async connect(who) {
      const connect = typeof who === "string" ? { token: tokenFor(who) } : who;
      const ws = open(connect);
      const client = new TestClient(ws);
      await withTimeout(
        new Promise<void>((resolve, reject) => {
          ws.once("open", () => resolve());
          ws.once("error", reject);
          ws.once("unexpected-response", (_req, res) =>
            reject(new Error(`upgrade refused with HTTP ${res.statusCode}`)),
          );
        }),
        "connection to open",
      );
      return client;
    },
    refusedStatus(connect) {
      const ws = open(connect);
      return withTimeout(
        new Promise<number>((resolve, reject) => {
          ws.once("open", () => {
            ws.terminate();
            reject(new Error("the upgrade was accepted"));
          });
          ws.once("unexpected-response", (req, res) => {
            res.resume();
            req.destroy();
            resolve(res.statusCode ?? 0);
          });
          // Any error before a status arrived fails the wait; one after it (the aborted request) is moot.
          ws.on("error", (error) => reject(error));
        }),
        "the upgrade to be refused",
      );
    },
    createSession(ownerId, overrides = {}) {
      return createSession(core, ownerId, { workspace: path.join(dir, "workspace"), ...overrides });
    },
    async stop() {
      for (const ws of sockets) ws.terminate();
      await core.runner.stop();
      await core.hub.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

type FrameOf<T extends ServerFrame["type"]> = Extract<ServerFrame, { type: T }>;

/** A `ws` client that keeps every frame it receives until a test takes it. */
export class TestClient {
  readonly ws: WebSocket;
  /** Every frame received, in order (taken or not). */
  readonly received: ServerFrame[] = [];
  /** Frames nobody has taken with `next` yet. */
  readonly #buffer: ServerFrame[] = [];
  #waiters: { match: (frame: ServerFrame) => boolean; resolve: (frame: ServerFrame) => void }[] = [];
  #syncs = 0;
  readonly #closed: Promise<{ code: number; reason: string }>;

  constructor(ws: WebSocket) {
    this.ws = ws;
    ws.on("message", (data) => {
      // The hub only sends JSON text frames (protocol.ts); a frame that is not one fails the test here.
      const frame = JSON.parse(
        Buffer.isBuffer(data) ? data.toString("utf8") : "<not a buffer>",
      ) as ServerFrame;
      this.received.push(frame);
      const waiter = this.#waiters.find((candidate) => candidate.match(frame));
      if (waiter) {
        this.#waiters = this.#waiters.filter((candidate) => candidate !== waiter);
        waiter.resolve(frame);
      } else {
        this.#buffer.push(frame);
      }
    });
    this.#closed = new Promise((resolve) =>
      ws.once("close", (code, reason) => resolve({ code, reason: reason.toString("utf8") })),
    );
    // Errors surface as a close; without a listener an error would crash the test process.
    ws.on("error", () => undefined);
  }

  get isOpen(): boolean {
    return this.ws.readyState === WebSocket.OPEN;
  }

  /** Takes the first frame of `type` (and matching `predicate`), waiting for it if none has come yet. */
  next<T extends ServerFrame["type"]>(
    type: T,
    predicate: (frame: FrameOf<T>) => boolean = () => true,
    timeoutMs = WAIT_MS,
  ): Promise<FrameOf<T>> {
    const match = (frame: ServerFrame): boolean => frame.type === type && predicate(frame as FrameOf<T>);
    const index = this.#buffer.findIndex(match);
    if (index >= 0) {
      const [frame] = this.#buffer.splice(index, 1);
      return Promise.resolve(frame as FrameOf<T>);
    }
    return withTimeout(
      new Promise<FrameOf<T>>((resolve) => {
        this.#waiters.push({ match, resolve: (frame) => resolve(frame as FrameOf<T>) });
      }),
      `a "${type}" frame (buffered: ${JSON.stringify(this.#buffer.map((frame) => frame.type))})`,
      timeoutMs,
    );
  }

  /** Frames not taken yet, optionally of one type. */
  pending(type?: ServerFrame["type"]): ServerFrame[] {
    return this.#buffer.filter((frame) => type === undefined || frame.type === type);
  }

  /** Sends a frame as JSON text. */
  send(frame: unknown): void {
    this.ws.send(JSON.stringify(frame));
  }

  /** Sends bytes exactly as given. */
  sendRaw(data: string | Buffer, options: { binary?: boolean } = {}): void {
    this.ws.send(data, { binary: options.binary ?? typeof data !== "string" });
  }

  /**
   * A ping/pong round trip. The server handles one connection's frames in order and sends synchronously,
   * so once the pong is back, everything the server meant to send before it has arrived too.
   */
  async sync(): Promise<void> {
    this.#syncs += 1;
    const marker = `sync-${this.#syncs}`;
    this.send({ type: "ping", sessionId: marker });
    await this.next("pong", (frame) => frame.sessionId === marker);
  }

  /** Resolves with the close code and reason once the socket has closed (from either side). */
  closed(timeoutMs = WAIT_MS): Promise<{ code: number; reason: string }> {
    return withTimeout(this.#closed, "the connection to close", timeoutMs);
  }

  async close(): Promise<void> {
    if (this.ws.readyState !== WebSocket.CLOSED) this.ws.close();
    await this.closed();
  }
}

/** The ask every scripted run makes unless told otherwise. */
export const DEFAULT_ASK: AskInput = sampleAsk();

export interface ScriptedAskAgent extends Agent {
  /** Tool results in the order the calls returned. */
  readonly results: string[];
  /** Resolves with the `index`-th tool result (0-based) once that call has returned. */
  result(index?: number): Promise<string>;
}

/** An agent whose every run makes exactly one `ask_user_questions` call and returns its result as text. */
export function createScriptedAskAgent(input: AskInput = DEFAULT_ASK): ScriptedAskAgent {
  const results: string[] = [];
  const waiting = new Map<number, (result: string) => void>();
  return {
    name: "scripted-ask",
    results,
    async run(ctx) {
      const result = await ctx.callTool("ask_user_questions", input, { title: "ask" });
      results.push(result);
      waiting.get(results.length - 1)?.(result);
      return { text: result };
    },
    result(index = 0) {
      const known = results[index];
      if (known !== undefined) return Promise.resolve(known);
      return withTimeout(
        new Promise<string>((resolve) => waiting.set(index, resolve)),
        `tool result #${index}`,
      );
    },
  };
}

/** A web session (private unless overridden), stored through the runner as a channel would store it. */
export function createSession(
  core: Core,
  ownerId: string,
  overrides: Partial<SessionInfo> = {},
): Promise<SessionInfo> {
  sessionCounter += 1;
  return core.runner.ensureSession({
    id: `web-${sessionCounter}`,
    channel: "web",
    chatType: "private",
    workspace: path.join(os.tmpdir(), "fpb-workspace"),
    ownerId,
    title: `session ${sessionCounter}`,
    ...overrides,
  });
}

/** Starts a run and fails loudly when it was queued instead. */
export async function startRun(
  core: Core,
  session: SessionInfo,
  senderId: string,
  text = "go",
): Promise<RunView> {
  const submitted = await core.runner.submit({ sessionId: session.id, senderId, text });
  if (submitted.kind !== "started") throw new Error(`run was ${submitted.kind}, expected started`);
  return submitted.run;
}

/** Resolves with the run once it reaches a terminal status. */
export async function waitForRun(core: Core, runId: string, timeoutMs = WAIT_MS): Promise<RunView> {
  const finished = (run: RunView | undefined): run is RunView =>
    run !== undefined && TERMINAL_STATUSES.includes(run.status);
  let off = () => {};
  // Listening before the read: an end announced while the run is read is not missed.
  const ended = new Promise<RunView>((resolve) => {
    off = core.runner.on("run_updated", (run) => {
      if (run.id === runId && finished(run)) resolve(run);
    });
  });
  const known = await core.runner.getRun(runId);
  if (finished(known)) {
    off();
    return known;
  }
  return withTimeout(ended, `run ${runId} to finish`, timeoutMs).finally(() => off());
}

/** Waits until `check` stops throwing (vi.waitFor, see wait.ts); for state with no event to wait on. */
export function eventually(check: () => void, timeoutMs = WAIT_MS): Promise<void> {
  return waitEventually(check, timeoutMs);
}

function withTimeout<T>(promise: Promise<T>, what: string, timeoutMs = WAIT_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = realSetTimeout(
      () => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)),
      timeoutMs,
    );
  });
  return Promise.race([promise, timeout]).finally(() => realClearTimeout(timer));
}
