import { afterEach, describe, expect, it } from "vitest";
import { type Emulator, startEmulator } from "../../src/local/emulator/index.ts";
import { DataDirLockedError, lockDataDir } from "../../src/store/lock.ts";
import { type BotProcess, startBot, tempDataDir } from "./helpers/bot-process.ts";
import { record } from "./helpers/env.ts";
import { ENCRYPT_KEY } from "./helpers/stack.ts";

/**
 * Hardening II, storage: one process per DATA_DIR (a second exits at once naming the holder; a SIGKILLed
 * holder never blocks the restart).
 */

const running: BotProcess[] = [];
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const bot of running.splice(0)) await bot.kill();
  for (const close of closers.splice(0)) await close();
});

async function emulator(): Promise<Emulator> {
  const started = await startEmulator({ encryptKey: ENCRYPT_KEY });
  closers.push(() => started.close());
  return started;
}

describe("two processes on one DATA_DIR", () => {
  it("the second exits at once naming the holder's pid; after a SIGKILL the next start takes over", async () => {
    const emu = await emulator();
    const dataDir = tempDataDir();
    const first = await startBot({ emulator: emu, dataDir });
    running.push(first);

    const startedAt = Date.now();
    const refusal = await startBot({ emulator: emu, dataDir }).then(
      (second) => {
        running.push(second);
        return "started";
      },
      (error: unknown) => String(error),
    );
    const refusedInMs = Date.now() - startedAt;
    expect(refusal).toContain(`is in use by process ${first.child.pid}`);
    expect(refusal).not.toContain('"msg":"listening"');

    await first.kill(); // SIGKILL: no release, the lock file and bot.pid stay behind
    const third = await startBot({ emulator: emu, dataDir });
    running.push(third);
    expect((await fetch(`http://127.0.0.1:${third.port}/healthz`)).status).toBe(200);
    record("data-dir lock", { refusedInMs });
  });

  it("in one process too: a second lock on the same directory is refused until the first is released", () => {
    const dataDir = tempDataDir();
    const held = lockDataDir(dataDir, 4242);
    expect(() => lockDataDir(dataDir)).toThrow(DataDirLockedError);
    expect(() => lockDataDir(dataDir)).toThrow("in use by process 4242");
    held.release();
    lockDataDir(dataDir).release();
  });
});
