import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import path from "node:path";
import {
  type ClientApp,
  type CreateTerminalRequest,
  RequestError,
  type TerminalExitStatus,
  type TerminalOutputResponse,
} from "@agentclientprotocol/sdk";
import { type Isolation, NO_ISOLATION } from "../isolation.ts";

/**
 * ACP `terminal/*`: commands the agent asks the bot to run. Off unless ACP_TERMINAL=on (a command runs with
 * the bot's user rights; the workspace is its cwd, not a sandbox), and refused with a message that says so.
 */

const OFF_MESSAGE = "Terminals are off on this bot; its operator can enable them with ACP_TERMINAL=on";
const DEFAULT_OUTPUT_LIMIT = 1_000_000;

interface Terminal {
  child: ChildProcess;
  output: string;
  truncated: boolean;
  limit: number;
  exit: Promise<TerminalExitStatus>;
  status: TerminalExitStatus | undefined;
}

export interface TerminalHost {
  create(request: CreateTerminalRequest): string;
  output(id: string): TerminalOutputResponse;
  waitForExit(id: string): Promise<TerminalExitStatus>;
  kill(id: string): void;
  release(id: string): void;
  releaseAll(): void;
}

export function createTerminalHost(
  root: string,
  env: Record<string, string>,
  isolation: Isolation = NO_ISOLATION,
): TerminalHost {
  const terminals = new Map<string, Terminal>();
  const get = (id: string) => {
    const terminal = terminals.get(id);
    if (!terminal) throw new RequestError(-32602, `Unknown terminal ${id}`);
    return terminal;
  };
  return {
    create(request) {
      const cwd = path.resolve(root, request.cwd ?? ".");
      if (cwd !== root && !cwd.startsWith(`${root}${path.sep}`))
        throw new RequestError(-32602, `Refused: cwd ${request.cwd} is outside this chat's workspace`);
      const extra = Object.fromEntries((request.env ?? []).map((v) => [v.name, v.value]));
      // The agent's sandbox, if any, holds its commands too.
      const launch = isolation.wrap({
        command: request.command,
        args: request.args ?? [],
        cwd,
        writable: [root],
      });
      const child = spawn(launch.command, launch.args, { cwd, env: { ...env, ...extra } });
      const terminal: Terminal = {
        child,
        output: "",
        truncated: false,
        limit: request.outputByteLimit ?? DEFAULT_OUTPUT_LIMIT,
        status: undefined,
        exit: new Promise((resolve) => {
          child.once("error", () => resolve({ exitCode: 127, signal: null }));
          child.once("exit", (code, signal) => resolve({ exitCode: code, signal }));
        }),
      };
      void terminal.exit.then((status) => {
        terminal.status = status;
      });
      const append = (chunk: Buffer) => {
        terminal.output += chunk.toString("utf8");
        // Keep the end of the output: ACP truncates from the beginning.
        if (Buffer.byteLength(terminal.output) > terminal.limit) {
          terminal.output = terminal.output.slice(-terminal.limit);
          terminal.truncated = true;
        }
      };
      child.stdout?.on("data", append);
      child.stderr?.on("data", append);
      const id = randomUUID();
      terminals.set(id, terminal);
      return id;
    },
    output(id) {
      const terminal = get(id);
      return { output: terminal.output, truncated: terminal.truncated, exitStatus: terminal.status ?? null };
    },
    waitForExit: (id) => get(id).exit,
    kill(id) {
      get(id).child.kill("SIGKILL");
    },
    release(id) {
      get(id).child.kill("SIGKILL");
      terminals.delete(id);
    },
    releaseAll() {
      for (const terminal of terminals.values()) terminal.child.kill("SIGKILL");
      terminals.clear();
    },
  };
}

/** Registers the terminal methods on the client app: served when enabled, refused otherwise. */
export function terminalHandlers(
  app: ClientApp,
  enabled: boolean,
  hostOf: (sessionId: string) => TerminalHost | undefined,
): ClientApp {
  const host = (sessionId: string): TerminalHost => {
    const found = enabled ? hostOf(sessionId) : undefined;
    if (!found) throw new RequestError(-32601, OFF_MESSAGE);
    return found;
  };
  return app
    .onRequest("terminal/create", ({ params }) => ({ terminalId: host(params.sessionId).create(params) }))
    .onRequest("terminal/output", ({ params }) => host(params.sessionId).output(params.terminalId))
    .onRequest("terminal/wait_for_exit", async ({ params }) => {
      const status = await host(params.sessionId).waitForExit(params.terminalId);
      return { exitCode: status.exitCode ?? null, signal: status.signal ?? null };
    })
    .onRequest("terminal/kill", ({ params }) => {
      host(params.sessionId).kill(params.terminalId);
      return {};
    })
    .onRequest("terminal/release", ({ params }) => {
      host(params.sessionId).release(params.terminalId);
      return {};
    });
}
