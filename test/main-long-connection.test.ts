import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { encodeFrame, startEmulator } from "../src/local/emulator/index.ts";
import { FAST_LONG_CONNECTION } from "./helpers/feishu.ts";
import { SERVES } from "./helpers/long-connection.ts";
import { startMain } from "./helpers/main-process.ts";
import { until as waitUntil } from "./helpers/wait.ts";
import { cardsReplyingTo, startBot, tempDataDir } from "./reliability/helpers/bot-process.ts";

/**
 * The real entry point (`npm start`) on the long connection: in feishu mode against an emulator this test owns,
 * and in local mode (where it is now the default) through the console's API. Also the process-level guard.
 */

const ALICE = "ou_alice000000000000000000000000000";
const REJECT_ON_SIGNAL = path.resolve(import.meta.dirname, "helpers", "reject-on-signal.ts");
const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

const until = <T>(probe: () => T | undefined | false, what: string, timeoutMs = 15_000): Promise<T> =>
  waitUntil(probe, what, timeoutMs, 20);

describe("npm start in feishu mode on the long connection", () => {
  it("lives through malformed frames and an unhandled rejection, and handles the next message", async () => {
    const emulator = await startEmulator({ longConnection: FAST_LONG_CONNECTION });
    cleanup.push(() => emulator.close());
    const dataDir = tempDataDir();
    const bot = await startBot({
      emulator,
      dataDir,
      env: { FEISHU_TRANSPORT: "ws" },
      preload: [REJECT_ON_SIGNAL],
    });
    cleanup.push(() => bot.kill());
    await until(() => emulator.longConnection.online === 1, "the bot's long connection");

    emulator.longConnection.sendRaw(new Uint8Array([0x0a, 0xff, 0xff]));
    emulator.longConnection.sendRaw("text frames are not frames");
    emulator.longConnection.sendRaw(
      encodeFrame({
        SeqID: 7,
        LogID: 7,
        service: 1,
        method: 1,
        headers: { type: "event" },
        payload: new Uint8Array([1]),
      }),
    );
    bot.child.kill("SIGUSR2");
    await until(
      () => bot.output().includes("unhandled promise rejection; kept serving"),
      "the guard's log line",
    );
    expect(bot.output()).toContain("injected unhandled rejection");

    const payload = emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "还在吗" });
    expect((await emulator.longConnection.deliver(payload, SERVES)).status).toBe(200);
    await until(
      () => cardsReplyingTo(emulator, payload.event.message.message_id).length === 1,
      "a progress card",
    );
    expect(bot.child.exitCode).toBeNull();
    expect(emulator.longConnection.online).toBe(1);
  }, 40_000);

  it("(control) without the guard, the same injected rejection ends a Node process", async () => {
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "--import",
        REJECT_ON_SIGNAL,
        "-e",
        "setInterval(() => {}, 1000); console.log('up')",
      ],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    cleanup.push(() => void child.kill("SIGKILL"));
    await new Promise((resolve) => child.stdout?.once("data", resolve));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    child.kill("SIGUSR2");
    expect(await exited).toBe(1);
  }, 20_000);
});

describe("npm start in local mode", () => {
  async function startLocal(env: Record<string, string> = {}) {
    const dataDir = tempDataDir();
    const bot = await startMain({ env: { DATA_DIR: dataDir, DEMO_STEP_MS: "20", ...env } });
    cleanup.push(async () => {
      await bot.kill();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });
    return { base: `http://127.0.0.1:${bot.port}/console/api`, output: bot.output };
  }

  async function talk(base: string) {
    const chatId = "oc_p2p_ou_local_alice";
    const sent = await fetch(`${base}/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ chatId, userId: "ou_local_alice", text: "帮我部署" }),
    });
    const body = (await sent.json()) as { messageId: string; delivered: boolean };
    expect(body.delivered).toBe(true);
    const messages = async () =>
      (
        (await (await fetch(`${base}/messages?chatId=${chatId}`)).json()) as {
          messages: { parentId?: string }[];
        }
      ).messages;
    await waitUntil(
      async () => (await messages()).some((m) => m.parentId === body.messageId),
      "the progress card",
      15_000,
      50,
    );
    return (
      (await (await fetch(`${base}/calls`)).json()) as { entries: { method?: string; path?: string }[] }
    ).entries;
  }

  it("runs on the long connection by default: the console's message goes out as a frame and is acked", async () => {
    const local = await startLocal();
    const entries = await talk(local.base);
    const frames = entries.filter((entry) => entry.method === "WS");
    expect(frames.some((entry) => entry.path?.includes("event im.message.receive_v1"))).toBe(true);
    expect(frames.some((entry) => entry.path?.includes("ack 200"))).toBe(true);
  }, 40_000);

  it("still runs on the webhook with FEISHU_TRANSPORT=webhook", async () => {
    const local = await startLocal({ FEISHU_TRANSPORT: "webhook" });
    const entries = await talk(local.base);
    expect(entries.filter((entry) => entry.method === "WS")).toEqual([]);
  }, 40_000);
});
