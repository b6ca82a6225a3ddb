import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type MainProcess, startMain } from "./helpers/main-process.ts";
import { until } from "./helpers/wait.ts";
import { tempDataDir } from "./reliability/helpers/bot-process.ts";

/**
 * `npm start`'s process on SIGTERM when whatever read its stdout and stderr has gone (a closed terminal, a
 * log shipper that died): it must still end, and leave DATA_DIR free for the next start (issue 31: it hung
 * for ever, and ignored a second SIGTERM).
 */

const HANG_ON_CLOSE = path.resolve(import.meta.dirname, "helpers", "hang-on-close.ts");
const running: MainProcess[] = [];
afterEach(async () => {
  for (const bot of running.splice(0)) await bot.kill();
});

async function start(dataDir: string, preload: string[] = []): Promise<MainProcess> {
  const bot = await startMain({ env: { DATA_DIR: dataDir, LOG_LEVEL: "info" }, preload });
  running.push(bot);
  return bot;
}

/** The parent stops reading: both pipes' read ends are closed, so every write of the child fails (EPIPE). */
function closePipes(bot: MainProcess): void {
  bot.child.stdout?.destroy();
  bot.child.stderr?.destroy();
}

describe("shutdown with nobody reading the bot's output", () => {
  it("exits 0 on SIGTERM and frees DATA_DIR for the next start", async () => {
    const dataDir = tempDataDir();
    const bot = await start(dataDir);
    closePipes(bot);
    // stop() sends SIGKILL after 15 s: a null code means the bot never ended on its own.
    expect(await bot.stop(15_000)).toBe(0);
    const next = await start(dataDir);
    expect(next.port).toBeGreaterThan(0);
  });

  it("exits at once on a second SIGTERM while a step of its stop hangs, and frees DATA_DIR", async () => {
    const dataDir = tempDataDir();
    const bot = await start(dataDir, [HANG_ON_CLOSE]);
    const exited = new Promise<number | null>((resolve) => bot.child.once("exit", (code) => resolve(code)));
    bot.child.kill("SIGTERM");
    // The first signal starts a stop that cannot finish (the server's close never calls back)…
    await until(() => bot.output().includes('"msg":"shutting down"'), "the stop begun", 15_000);
    expect(bot.child.exitCode).toBeNull();
    // …the second ends it now, non-zero, well before the 8 s deadline.
    const at = Date.now();
    bot.child.kill("SIGTERM");
    expect(await exited).toBe(1);
    expect(Date.now() - at).toBeLessThan(8_000);
    const next = await start(dataDir);
    expect(next.port).toBeGreaterThan(0);
  });
});

describe("npm start under a process manager", () => {
  // A supervisor signals the npm process alone; Ctrl-C in a terminal signals the whole foreground process
  // group (npm, its shell and the bot), modelled by a group of its own and a signal to all of it.
  it.each([
    ["SIGTERM", "the npm process", false],
    ["SIGINT", "the process group (Ctrl-C)", true],
  ] as const)("stops the bot on %s to %s (npm → sh → node)", async (signal, _to, group) => {
    const dataDir = tempDataDir();
    const npm = spawn("npm", ["start", "--silent"], {
      cwd: path.resolve(import.meta.dirname, ".."),
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", PORT: "0", DATA_DIR: dataDir },
      stdio: ["ignore", "pipe", "pipe"],
      detached: group,
    });
    let output = "";
    npm.stdout?.on("data", (chunk: Buffer) => {
      output += String(chunk);
    });
    npm.stderr?.on("data", (chunk: Buffer) => {
      output += String(chunk);
    });
    const pidFile = path.join(dataDir, "bot.pid");
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    let bot = 0;
    try {
      await until(() => output.includes('"msg":"listening"'), "npm start listening", 30_000);
      bot = Number(fs.readFileSync(pidFile, "utf8"));
      expect(bot).not.toBe(npm.pid);
      if (group && npm.pid !== undefined) process.kill(-npm.pid, signal);
      else npm.kill(signal);
      // The bot itself goes, through its graceful stop (it removes its pid file on the way out).
      await until(() => !alive(bot) && !fs.existsSync(pidFile), `the bot gone after ${signal}`, 15_000);
      // And npm with it: nothing is left running in the terminal or under the supervisor.
      await until(() => npm.exitCode !== null || npm.signalCode !== null, "npm gone", 15_000);
    } finally {
      if (bot > 0 && alive(bot)) process.kill(bot, "SIGKILL");
      if (npm.exitCode === null) npm.kill("SIGKILL");
    }
  });
});
