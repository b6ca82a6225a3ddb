import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { until as waitUntil } from "./helpers/wait.ts";

/** What a person sees in the terminal from `npm start`: the real entry point as a child process. */

const children: ChildProcess[] = [];
const servers: net.Server[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.pid) process.kill(-child.pid, "SIGKILL");
  }
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

function start(command: string, args: string[], env: Record<string, string>) {
  const child = spawn(command, args, {
    env: { PATH: process.env.PATH ?? "", HOME: os.tmpdir(), LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    // Its own process group, so the cleanup reaches `script`'s child too.
    detached: true,
  });
  children.push(child);
  const out = { stdout: "", stderr: "" };
  child.stdout?.on("data", (chunk) => {
    out.stdout += String(chunk);
  });
  child.stderr?.on("data", (chunk) => {
    out.stderr += String(chunk);
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, out, exited };
}

/** The wait (helpers/wait.ts) with the child's output in the failure, which is where the reason is. */
async function until(probe: () => boolean, what: string, out: () => string, timeoutMs = 20_000) {
  await waitUntil(probe, what, timeoutMs, 50).catch((error: unknown) => {
    throw new Error(`${error instanceof Error ? error.message : String(error)}:\n${out()}`);
  });
}

const dataDir = () => fs.mkdtempSync(path.join(os.tmpdir(), "fpb-terminal-"));
/** util-linux's script(1) gives a child a pseudo-terminal; without it the TTY case cannot be set up here. */
const hasScript = spawnSync("script", ["--version"], { stdio: "ignore" }).status === 0;

describe("npm start in a terminal", () => {
  it("says in one line which port is taken and how to pick another, and exits 1", async () => {
    const blocker = net.createServer();
    servers.push(blocker);
    await new Promise<void>((resolve) => blocker.listen(0, resolve));
    const address = blocker.address();
    const port = typeof address === "object" && address ? address.port : 0;

    const bot = start(process.execPath, ["--import", "tsx", "src/main.ts"], {
      PORT: String(port),
      DATA_DIR: dataDir(),
    });
    expect(await bot.exited).toBe(1);
    const lines = bot.out.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`port ${port} is already in use`);
    expect(lines[0]).toContain(`PORT=${port + 1} npm start`);
    expect(bot.out.stderr).not.toMatch(/\n\s+at /);
    // Piped output is for machines: every stdout line is a JSON log line (at info nothing may come before the
    // port is bound: the banner is the listening line).
    const logLines = bot.out.stdout.split("\n").filter((line) => line.trim() !== "");
    for (const line of logLines) expect(() => JSON.parse(line)).not.toThrow();
  });

  it.skipIf(!hasScript)("pretty-prints logs when stdout is a terminal", async () => {
    // `script` gives the child a pseudo-terminal, as a person's shell would.
    const command = `${JSON.stringify(process.execPath)} --import tsx src/main.ts`;
    const bot = start("script", ["-qefc", command, "/dev/null"], { PORT: "0", DATA_DIR: dataDir() });
    await until(
      () => /INFO.*listening/.test(bot.out.stdout),
      "the listening line",
      () => bot.out.stdout,
    );
    const line = bot.out.stdout.split("\n").find((l) => l.includes("listening")) ?? "";
    expect(line).not.toContain('"msg"');
    expect(line).toMatch(/\d\d:\d\d:\d\d/);
    expect(line).toMatch(/INFO/);
  });
});
