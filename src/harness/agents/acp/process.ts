import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { Readable, Writable } from "node:stream";
import {
  type ClientConnection,
  client,
  type InitializeResponse,
  ndJsonStream,
  PROTOCOL_VERSION,
  RequestError,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionUpdate,
} from "@agentclientprotocol/sdk";
import { describeError } from "../../../errors.ts";
import type { Logger } from "../../../logger.ts";
import { strings } from "../../../strings/index.ts";
import { type TerminalHost, terminalHandlers } from "./terminals.ts";
import { WorkspaceFileError, type WorkspaceFs } from "./workspace-fs.ts";

/**
 * One ACP agent process and the client connection over its stdio (official SDK, `client()` app). The
 * agent's requests and notifications name their ACP session; they are routed to the run that owns it, and a
 * request for a session no run owns (or outside what the bot allows) is refused with a readable error.
 * Its stderr goes line by line to the log, never to a card.
 */

export interface SessionHandlers {
  onUpdate(update: SessionUpdate): void;
  requestPermission(
    request: RequestPermissionRequest,
    signal: AbortSignal,
  ): Promise<RequestPermissionResponse>;
  /** Any sign of life from the agent about this session (resets the hang watchdog). */
  activity(): void;
  fs: WorkspaceFs;
  terminals?: TerminalHost;
}

export interface AcpProcessOptions {
  command: string;
  args: readonly string[];
  env: Record<string, string>;
  cwd: string;
  terminal: boolean;
  logger: Logger;
}

export class AcpProcess {
  readonly #child: ChildProcess;
  readonly #connection: ClientConnection;
  readonly #sessions = new Map<string, SessionHandlers>();
  readonly #logger: Logger;
  /** Resolves with a readable reason once the process is gone, however it went. */
  readonly exited: Promise<string>;
  #gone: string | undefined;
  /** Set by `kill`: the process ends because we ended it (hang, shutdown), not on its own. */
  stoppedByUs = false;
  /** ACP sessions this process has opened or loaded (a fresh process knows none of them). */
  readonly known = new Set<string>();
  capabilities: InitializeResponse | undefined;

  constructor(options: AcpProcessOptions) {
    this.#logger = options.logger;
    this.#child = spawn(options.command, [...options.args], {
      cwd: options.cwd,
      env: options.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.exited = new Promise((resolve) => {
      this.#child.once("error", (error) => {
        this.#gone ??= strings.acp.notStarted(options.command, describeError(error));
        resolve(this.#gone);
      });
      this.#child.once("exit", (code, signal) => {
        this.#gone ??= strings.acp.exited(signal ? `signal ${signal}` : `exit code ${code}`);
        resolve(this.#gone);
      });
    });
    if (this.#child.stderr) {
      const lines = createInterface({ input: this.#child.stderr });
      lines.on("line", (line) => this.#logger.info({ stderr: line }, "acp agent stderr"));
    }
    const { stdin, stdout } = this.#child;
    if (!stdin || !stdout) throw new Error("ACP agent spawned without stdio pipes");
    // A write to a process that just died fails with EPIPE; the exit handler reports it, not a crash.
    stdin.on("error", (error) => this.#logger.debug({ err: error }, "acp agent stdin closed"));
    const stream = ndJsonStream(Writable.toWeb(stdin), yieldingBetweenChunks(Readable.toWeb(stdout)));
    this.#connection = this.#app(options.terminal).connect(stream);
    void this.exited.then(() => this.#connection.close());
  }

  get agent(): ClientConnection["agent"] {
    return this.#connection.agent;
  }

  /** The connection is closed (its stdout ended): the process is going or gone. */
  get closed(): boolean {
    return this.#connection.signal.aborted;
  }

  get alive(): boolean {
    return this.#gone === undefined;
  }

  async initialize(terminal: boolean): Promise<InitializeResponse> {
    this.capabilities = await this.#connection.agent.request("initialize", {
      protocolVersion: PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal },
      clientInfo: { name: "feishu-progress-bot", version: "1" },
    });
    return this.capabilities;
  }

  attach(sessionId: string, handlers: SessionHandlers): void {
    this.#sessions.set(sessionId, handlers);
  }

  detach(sessionId: string): void {
    this.#sessions.delete(sessionId);
  }

  /** Ends the process: SIGTERM, then SIGKILL if it has not gone within `graceMs`. */
  async kill(graceMs = 2000): Promise<void> {
    if (!this.alive) return;
    this.stoppedByUs = true;
    this.#child.kill("SIGTERM");
    const timer = setTimeout(() => this.#child.kill("SIGKILL"), graceMs);
    timer.unref?.();
    await this.exited;
    clearTimeout(timer);
  }

  #handlers(sessionId: string): SessionHandlers {
    const handlers = this.#sessions.get(sessionId);
    if (!handlers) throw new RequestError(-32602, `No task of this bot is running in session ${sessionId}`);
    handlers.activity();
    return handlers;
  }

  #app(terminal: boolean) {
    const app = client({ name: "feishu-progress-bot" })
      .onNotification("session/update", ({ params }) => {
        const handlers = this.#sessions.get(params.sessionId);
        if (!handlers) return; // e.g. the history a `session/load` replays: the card shows this run only.
        handlers.activity();
        handlers.onUpdate(params.update);
      })
      .onRequest("session/request_permission", ({ params, signal }) =>
        this.#handlers(params.sessionId).requestPermission(params, signal),
      )
      .onRequest("fs/read_text_file", async ({ params }) => {
        const { fs } = this.#handlers(params.sessionId);
        return { content: await confined(params.path, () => fs.read(params.path, params)) };
      })
      .onRequest("fs/write_text_file", async ({ params }) => {
        const { fs } = this.#handlers(params.sessionId);
        await confined(params.path, () => fs.write(params.path, params.content));
        return {};
      });
    return terminalHandlers(app, terminal, (sessionId) => this.#handlers(sessionId).terminals);
  }
}

/**
 * The agent's output, one chunk per turn of the event loop: a chunk's messages are parsed and handled in
 * microtasks, so without a pause a flooding agent's chunks would follow one another ahead of every other
 * chat's I/O. After each chunk the stream waits for `setImmediate`, and the rest of the bot gets its turn.
 */
function yieldingBetweenChunks(source: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  return source.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      async transform(chunk, controller) {
        controller.enqueue(chunk);
        await new Promise((resolve) => setImmediate(resolve));
      },
    }),
  );
}

/**
 * Refusals and file errors go back to the agent as its request's error, with a message it can act on. A
 * missing file is ACP's "resource not found" (-32002, `data.uri`): agents tell it apart from a failure
 * (Gemini CLI reads a file before creating it, and treats any other error as fatal).
 */
async function confined<T>(requested: string, op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (error) {
    if (!(error instanceof WorkspaceFileError)) throw new RequestError(-32603, describeError(error));
    if (error.reason === "not_found") throw RequestError.resourceNotFound(requested.slice(0, 1000));
    throw new RequestError(-32602, error.message);
  }
}
