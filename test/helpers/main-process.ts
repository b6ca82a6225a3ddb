import { type ChildProcess, spawn } from "node:child_process";
import { z } from "zod";

/**
 * The real entry point (`npm start` = `tsx src/main.ts`) as a child process, on PORT=0. The child binds
 * whatever port the system gives it (no port picked up front, so none to lose to another process), and
 * says which in its `listening` line: a JSON line on stdout with `port` and `url`, written at any
 * LOG_LEVEL short of silent. Card links and the host guard follow the bound port (src/public-url.ts).
 */

export interface MainProcess {
  child: ChildProcess;
  /** The port the child bound, from its listening line. */
  port: number;
  /** Its public URL as it logged it: PUBLIC_URL, or http://localhost:<port>. */
  url: string;
  /** stdout and stderr together (the tail, a long run logs a lot). */
  output(): string;
  /** Sends SIGKILL and resolves once the process is gone. */
  kill(): Promise<void>;
  /** Sends SIGTERM (graceful shutdown), SIGKILL if it is still running `graceMs` later; resolves with the exit code. */
  stop(graceMs?: number): Promise<number | null>;
}

export interface MainOptions {
  /** Added to PATH and PORT=0; a test that must come back on the same port passes PORT itself. */
  env?: Record<string, string>;
  /** Node flags before the loader (e.g. --expose-gc). */
  nodeArgs?: string[];
  /** Modules imported after tsx and before the entry point (e.g. a probe). */
  preload?: string[];
  /** How long the child may take to say it listens (default 30 s: a busy machine starts tsx slowly). */
  startMs?: number;
  /** The compiled entry (`dist/main.js`) run by plain node instead of `src/main.ts` under tsx. */
  compiled?: string;
}

const Listening = z.object({
  msg: z.literal("listening"),
  port: z.number().int().positive(),
  url: z.string(),
});

/** The listening line among the child's stdout lines, or undefined (pretty logs, other lines, partial JSON). */
export function listeningIn(line: string): { port: number; url: string } | undefined {
  if (!line.startsWith("{")) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (error) {
    if (error instanceof SyntaxError) return undefined;
    throw error;
  }
  const parsed = Listening.safeParse(value);
  return parsed.success ? { port: parsed.data.port, url: parsed.data.url } : undefined;
}

/** Starts the bot and resolves once it says where it listens; rejects with its output if it exits first. */
export async function startMain(options: MainOptions = {}): Promise<MainProcess> {
  const preload = (options.preload ?? []).flatMap((file) => ["--import", file]);
  const args = options.compiled
    ? [...(options.nodeArgs ?? []), ...preload, options.compiled]
    : [...(options.nodeArgs ?? []), "--import", "tsx", ...preload, "src/main.ts"];
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? "", PORT: "0", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const keep = (chunk: Buffer) => {
    output = (output + String(chunk)).slice(-400_000);
  };
  child.stderr?.on("data", keep);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const startMs = options.startMs ?? 30_000;
  let timer: NodeJS.Timeout | undefined;
  const listening = new Promise<{ port: number; url: string }>((resolve, reject) => {
    let partial = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      keep(chunk);
      const lines = (partial + String(chunk)).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        const found = listeningIn(line);
        if (found) resolve(found);
      }
    });
    void exited.then((code) => reject(new Error(`the bot exited (${code}) before listening:\n${output}`)));
    timer = setTimeout(
      () => reject(new Error(`the bot said no listening line within ${startMs} ms:\n${output}`)),
      startMs,
    );
  });
  const where = await listening
    .catch((error: unknown) => {
      child.kill("SIGKILL");
      throw error;
    })
    .finally(() => clearTimeout(timer));
  return {
    child,
    ...where,
    output: () => output,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
    async stop(graceMs = 5_000) {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const stuck = setTimeout(() => child.kill("SIGKILL"), graceMs);
      try {
        return await exited;
      } finally {
        clearTimeout(stuck);
      }
    },
  };
}
