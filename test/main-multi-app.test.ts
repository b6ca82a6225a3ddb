import fs from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startEmulator } from "../src/local/emulator/index.ts";
import { FAST_LONG_CONNECTION } from "./helpers/feishu.ts";
import { startMain } from "./helpers/main-process.ts";
import { startScriptedModel } from "./helpers/openai-server.ts";
import { until as waitUntil } from "./helpers/wait.ts";
import { cardsReplyingTo, tempDataDir } from "./reliability/helpers/bot-process.ts";

/**
 * The real entry point (`npm start`) with a config file of two apps (issue 30): main.ts reads CONFIG_FILE, starts
 * one long connection and one webhook path, and each app answers its own message in the same chat, app A with
 * the environment's demo agent, app B with its own OpenAI-compatible one (a scripted model server).
 */

const A = "cli_a000000000000001";
const B = "cli_b000000000000002";
const KEY_B = "main-multi-app-key";
const cleanup: (() => unknown)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

describe("npm start with a config file of two apps", () => {
  it("connects app A by long connection, serves app B at /feishu/<app id>/events, each answering its own", async () => {
    const emulator = await startEmulator({
      appId: A,
      longConnection: FAST_LONG_CONNECTION,
      otherApps: [{ appId: B, encryptKey: KEY_B }],
    });
    cleanup.push(() => emulator.close());
    const model = await startScriptedModel();
    cleanup.push(() => model.close());
    model.script({ text: ["app B's own model says hi"] });
    const dataDir = tempDataDir();
    const file = path.join(dataDir, "feishu-progress-bot.json");
    fs.writeFileSync(
      file,
      JSON.stringify({
        env: { DATA_DIR: dataDir, DEMO_STEP_MS: 5, CARD_PATCH_INTERVAL_MS: 200, FEISHU_ASK_PING: "off" },
        apps: [
          { appId: A, appSecret: { env: "SECRET_OF_A" }, domain: emulator.url },
          {
            appId: B,
            appSecret: emulator.app(B).appSecret,
            transport: "webhook",
            encryptKey: KEY_B,
            domain: emulator.url,
            agent: {
              kind: "openai",
              baseUrl: model.baseUrl,
              model: "model-of-b",
              apiKey: { env: "KEY_OF_B" },
            },
          },
        ],
      }),
    );
    const bot = await startMain({
      env: {
        CONFIG_FILE: file,
        SECRET_OF_A: emulator.appSecret,
        KEY_OF_B: "sk-of-b",
        AUTH_SECRET: "0123456789abcdef0123456789abcdef",
        LOG_LEVEL: "info",
      },
    });
    cleanup.push(() => bot.kill());
    expect(bot.output()).toContain(`"apps":["${A} (ws)","${B} (webhook, agent openai)"]`);
    await waitUntil(() => emulator.app(A).online === 1, "app A's long connection", 15_000);
    emulator.subscribe({ mode: "long_connection" });
    emulator.app(B).subscribe({ mode: "webhook", url: `http://127.0.0.1:${bot.port}/feishu/${B}/events` });

    const ids: Record<string, string> = {};
    for (const appId of [A, B]) {
      const app = emulator.app(appId);
      const payload = app.userMessage({
        chatType: "group",
        chatId: "oc_both_bots",
        senderOpenId: `ou_someone_${appId.slice(4, 5)}`,
        text: "/quick hello",
        mentionBot: true,
      });
      expect((await app.deliver(payload, { timeoutMs: 10_000 })).status).toBe(200);
      ids[appId] = payload.event.message.message_id;
    }
    for (const appId of [A, B]) {
      const cards = await waitUntil(
        () => {
          const found = cardsReplyingTo(emulator, ids[appId] ?? "");
          return found.length > 0 && found;
        },
        `${appId}'s card`,
        15_000,
      );
      expect(cards.map((id) => emulator.messages.getMessage(id)?.senderId)).toEqual([appId]);
      // Each app's own agent answered: the demo's reply on A's card, B's model's on B's.
      const answer = appId === A ? "/quick` 的演示回复" : "app B's own model says hi";
      await waitUntil(
        () => cards.some((id) => emulator.messages.getMessage(id)?.content.includes(answer)),
        `${appId}'s answer on its card`,
        15_000,
      );
    }
    expect(model.requests.map((request) => [request.body.model, request.headers.authorization])).toEqual([
      ["model-of-b", "Bearer sk-of-b"],
    ]);
    expect(await bot.stop()).toBe(0);
  }, 60_000);
});
