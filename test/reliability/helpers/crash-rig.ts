import { afterEach } from "vitest";
import type { Card } from "../../../src/cards/model.ts";
import { type Emulator, startEmulator } from "../../../src/local/emulator/index.ts";
import { type BotProcess, startBot } from "./bot-process.ts";
import { ENCRYPT_KEY } from "./stack.ts";

/**
 * What every crash test file needs: the emulator and the real entry point as child processes it can SIGKILL,
 * all stopped after each test, and a signed webhook delivery that fails loudly. Call once at a file's top
 * level (it registers the afterEach).
 */
export function useCrashRig() {
  const running: BotProcess[] = [];
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const bot of running.splice(0)) await bot.kill();
    for (const close of closers.splice(0)) await close();
  });
  return {
    /** Something else to close after the test (a slow path, a socket, a scripted model). */
    onCleanup(close: () => Promise<void>): void {
      closers.push(close);
    },
    async emulator(): Promise<Emulator> {
      const started = await startEmulator({ encryptKey: ENCRYPT_KEY });
      closers.push(() => started.close());
      return started;
    },
    async bot(options: Parameters<typeof startBot>[0]): Promise<BotProcess> {
      const started = await startBot(options);
      running.push(started);
      return started;
    },
    async deliver(target: BotProcess, emu: Emulator, payload: unknown) {
      const result = await emu.deliverWebhook(target.hookUrl, payload, { timeoutMs: 10_000 });
      if (result.status !== 200)
        throw new Error(`webhook answered ${result.status}: ${JSON.stringify(result.body)}`);
      return result.body as { toast?: { type: string; content: string }; card?: { data: Card } };
    },
  };
}
