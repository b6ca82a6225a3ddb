import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { loadConfig } from "../src/config.ts";
import { createCore } from "../src/core.ts";
import { feishuTopicSessionId } from "../src/domain/session-id.ts";
import { startFeishu } from "../src/feishu/index.ts";
import { createDemoAgent, createDemoTools } from "../src/harness/agents/demo.ts";
import { startLocalFeishu } from "../src/local/index.ts";
import { createLogger } from "../src/logger.ts";
import { openDatabase } from "../src/store/db.ts";
import { cardReplyingTo } from "./helpers/feishu.ts";

/**
 * FEISHU_REPLY_IN_THREAD from the environment to the platform, composed as main.ts composes local mode
 * (loadConfig → startLocalFeishu → startFeishu): a plain group message's card opens a thread under it.
 */

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function start(env: Record<string, string>) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-topic-config-"));
  const config = loadConfig({ DATA_DIR: dataDir, FEISHU_TRANSPORT: "webhook", ...env });
  const logger = createLogger({ level: "silent" });
  const db = openDatabase(path.join(dataDir, "bot.sqlite"));
  const core = await createCore({
    db,
    logger,
    agent: createDemoAgent(),
    tools: createDemoTools({ stepMs: 0 }),
    askTimeoutMs: 60_000,
    authSecret: "topic-config-secret-1234-5678-9012-3456",
  });
  if (config.mode !== "local") throw new Error("expected local mode without credentials");
  const local = await startLocalFeishu(config, "topic-config-webhook-key");
  const feishu = await startFeishu({ config: local.config, core, logger, now: Date.now });
  closers.push(async () => {
    await core.runner.stop();
    await feishu.close();
    await core.hub.close();
    await local.emulator.close();
    db.close();
  });
  return { emulator: local.emulator, feishu, core };
}

/** A plain @-mention in a normal group, handed to the bot as the SDK hands it events. */
async function plainGroupMessage(bot: Awaited<ReturnType<typeof start>>) {
  const payload = bot.emulator.userMessage({
    chatId: "oc_team",
    chatType: "group",
    senderOpenId: "ou_alice",
    text: "/quick 长任务",
    mentionBot: true,
  });
  await bot.feishu.handlers.onMessage({ ...payload.header, ...payload.event });
  const messageId = payload.event.message.message_id;
  const cardId = await vi.waitFor(
    () => {
      const found = cardReplyingTo(bot.emulator, messageId);
      if (!found) throw new Error("no card yet");
      return found;
    },
    { timeout: 8000, interval: 10 },
  );
  return { messageId, card: bot.emulator.messages.getMessage(cardId) };
}

describe("FEISHU_REPLY_IN_THREAD", () => {
  it("=on: the card of a plain group message opens a thread under it, in the message's topic session", async () => {
    const bot = await start({ FEISHU_REPLY_IN_THREAD: "on" });
    const { messageId, card } = await plainGroupMessage(bot);
    expect(card?.threadId).toMatch(/^omt_/);
    expect(card?.rootId).toBe(messageId);
    const sessionId = feishuTopicSessionId(bot.emulator.appId, "oc_team", messageId);
    expect((await bot.core.runner.getSession(sessionId))?.title).toBe("飞书群聊话题：/quick 长任务");
  });

  it("unset: the same message is answered in the main flow, as before", async () => {
    const bot = await start({});
    const { card } = await plainGroupMessage(bot);
    expect(card?.threadId).toBeUndefined();
  });
});
