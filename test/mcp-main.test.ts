import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "./helpers/core.ts";
import { EVERYTHING } from "./helpers/mcp.ts";

/** The real entry point with MCP_CONFIG, in local mode: servers start with the bot and stop with it. */

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
});

function startBot(mcpConfig: string) {
  const dataDir = tempDir();
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    env: {
      PATH: process.env.PATH ?? "",
      PORT: "0",
      DATA_DIR: dataDir,
      AGENT: "openai",
      OPENAI_BASE_URL: "http://127.0.0.1:9/v1",
      OPENAI_MODEL: "m",
      MCP_CONFIG: mcpConfig,
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let output = "";
  child.stdout?.on("data", (chunk) => {
    output += String(chunk);
  });
  child.stderr?.on("data", (chunk) => {
    output += String(chunk);
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, output: () => output, exited };
}

function writeConfig(servers: Record<string, unknown>): string {
  const file = path.join(tempDir(), "mcp.json");
  fs.writeFileSync(file, JSON.stringify({ mcpServers: servers }));
  return file;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return !(error instanceof Error && "code" in error && error.code === "ESRCH");
  }
};

describe("npm start with MCP_CONFIG", () => {
  it("starts the servers it can, leaves out the one it cannot, and stops them on SIGTERM", async () => {
    const file = writeConfig({
      everything: { command: process.execPath, args: [EVERYTHING, "stdio"] },
      broken: { command: path.join(tempDir(), "missing-binary") },
    });
    const bot = startBot(file);
    await expect.poll(() => bot.output(), { timeout: 30_000, interval: 50 }).toContain('"msg":"listening"');
    const connected = bot
      .output()
      .split("\n")
      .find((line) => line.includes('"MCP server connected"'));
    expect(bot.output()).toContain('"mcpServer":"broken"');
    expect(bot.output()).toContain("MCP server failed to start; left out");
    const pid = Number(/"pid":(\d+)/.exec(connected ?? "")?.[1]);
    expect(pid).toBeGreaterThan(0);
    expect(alive(pid)).toBe(true);
    bot.child.kill("SIGTERM");
    expect(await bot.exited).toBe(0);
    await expect.poll(() => alive(pid), { timeout: 5_000, interval: 50 }).toBe(false);
  });

  it("refuses a bad MCP_CONFIG at start, naming the field", async () => {
    const bot = startBot(writeConfig({ a: { command: "" } }));
    expect(await bot.exited).toBe(1);
    expect(bot.output()).toContain("MCP_CONFIG");
    expect(bot.output()).toContain("mcpServers.a");
  });
});
