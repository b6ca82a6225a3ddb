import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { signToken } from "../../src/auth/token.ts";
import { startEmulator } from "../../src/local/emulator/index.ts";
import { TestClient } from "../helpers/harness.ts";
import { type BotProcess, startBot, tempDataDir } from "./helpers/bot-process.ts";
import { record, until } from "./helpers/env.ts";
import { ALICE, AUTH_SECRET, BOB, ENCRYPT_KEY } from "./helpers/stack.ts";

/**
 * Issue 14 item 1 against the real entry point: the red team's flood (3,000 subscribes from a client that never
 * reads, to a session with 40 queued 20 KB messages) once ran the bot's process out of heap. Here the bot runs
 * as a child process with a 192 MB old space; it must stay up, keep its heap after a GC near where it was
 * (read by the preload probe), and serve Bob meanwhile.
 */

const PROBE = fileURLToPath(new URL("./helpers/memory-probe.ts", import.meta.url));
const running: BotProcess[] = [];
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const bot of running.splice(0)) await bot.kill();
  for (const close of closers.splice(0)) await close();
});

async function heapOf(bot: BotProcess): Promise<number> {
  const seen = (bot.output().match(/MEMPROBE /g) ?? []).length;
  bot.child.kill("SIGUSR2");
  await until(() => (bot.output().match(/MEMPROBE /g) ?? []).length > seen, "a memory probe line", 10_000);
  const line = bot
    .output()
    .split("\n")
    .filter((l) => l.startsWith("MEMPROBE "))
    .at(-1);
  const parsed: unknown = JSON.parse(line?.slice("MEMPROBE ".length) ?? "{}");
  const heapUsed =
    typeof parsed === "object" && parsed !== null && "heapUsed" in parsed ? parsed.heapUsed : 0;
  return typeof heapUsed === "number" ? heapUsed : 0;
}

async function open(url: string): Promise<WebSocket> {
  const ws = new WebSocket(url, { autoPong: false });
  ws.on("error", () => undefined);
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("unexpected-response", (_req, res) => reject(new Error(`upgrade refused ${res.statusCode}`)));
  });
  return ws;
}

describe("the bot process under a WebSocket flood", () => {
  it("stays up with its heap bounded and serves another user", async () => {
    const emu = await startEmulator({ encryptKey: ENCRYPT_KEY });
    closers.push(() => emu.close());
    const bot = await startBot({
      emulator: emu,
      dataDir: tempDataDir(),
      // /long waits a minute between steps, so everything after it queues; 40 may wait.
      env: { DEMO_STEP_MS: "60000", QUEUE_MAX: "40", LOG_LEVEL: "warn" },
      nodeArgs: ["--expose-gc", "--max-old-space-size=192"],
      preload: [PROBE],
    });
    running.push(bot);
    const deliver = async (text: string, senderOpenId = ALICE) => {
      const result = await emu.deliverWebhook(
        bot.hookUrl,
        emu.userMessage({ chatType: "p2p", senderOpenId, text }),
        { timeoutMs: 10_000 },
      );
      expect(result.status).toBe(200);
    };
    await deliver("/long");
    for (let i = 0; i < 40; i += 1) await deliver(`${i} ${"长".repeat(20 * 1024)}`);
    const cards = () =>
      emu.messages.listMessages().filter((m) => m.msgType === "interactive" && m.senderType === "app").length;
    await until(() => cards() >= 41, "the progress card and 40 queued cards", 30_000, 50);
    const heapBefore = await heapOf(bot);

    const token = (who: string) => signToken(AUTH_SECRET, who, Date.now() + 3_600_000);
    const url = (who: string) => `ws://127.0.0.1:${bot.port}/ws?token=${token(who)}`;
    const flooder = await open(url(ALICE));
    flooder.pause(); // reads nothing from here on
    const frame = JSON.stringify({ type: "subscribe", sessionId: `feishu-${emu.appId}-private-${ALICE}` });
    const startedAt = performance.now();
    for (let i = 0; i < 3000; i += 1) flooder.send(frame);
    await until(
      () => bot.child.exitCode !== null || bot.output().includes("websocket closed: client is not reading"),
      "the bot to cut the flooding connection off",
      20_000,
      20,
    );
    const cutOffMs = Math.round(performance.now() - startedAt);
    expect(bot.child.exitCode, bot.output().slice(-2000)).toBeNull();

    // Bob is served while the flood's connection is being torn down.
    const servedAt = performance.now();
    const bob = new TestClient(await open(url(BOB)));
    bob.send({ type: "ping", sessionId: "bob" });
    await bob.next("pong");
    const bobMs = Math.round(performance.now() - servedAt);
    bob.ws.terminate();
    flooder.terminate();

    const heapAfter = await heapOf(bot);
    expect(bot.child.exitCode).toBeNull();
    expect(heapAfter - heapBefore).toBeLessThan(32 * 2 ** 20);
    record("websocket: flood against the bot process (192 MB old space)", {
      heapBeforeMiB: +(heapBefore / 2 ** 20).toFixed(1),
      heapAfterMiB: +(heapAfter / 2 ** 20).toFixed(1),
      cutOffMs,
      otherUserServedMs: bobMs,
    });
  }, 60_000);
});
