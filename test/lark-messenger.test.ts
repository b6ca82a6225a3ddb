import { Writable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Card } from "../src/cards/model.ts";
import { createLarkMessenger, sdkLogger } from "../src/feishu/lark-messenger.ts";
import { FeishuApiError } from "../src/feishu/messenger.ts";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";
import { createLogger } from "../src/logger.ts";

const card: Card = {
  schema: "2.0",
  config: { update_multi: true },
  body: { elements: [{ tag: "markdown", content: "hi" }] },
};

let emulator: Emulator;
beforeEach(async () => {
  emulator = await startEmulator();
});
afterEach(async () => {
  await emulator.close();
});

function messenger(timeoutMs = 2000) {
  return createLarkMessenger({
    appId: emulator.appId,
    appSecret: emulator.appSecret,
    domain: emulator.url,
    logger: createLogger({ level: "silent" }),
    timeoutMs,
  });
}

async function failure(promise: Promise<unknown>): Promise<FeishuApiError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof FeishuApiError) return error;
    throw error;
  }
  throw new Error("expected a FeishuApiError");
}

describe("the SDK messenger", () => {
  it("reads the bot's identity and sends, replies to and patches cards over the SDK", async () => {
    const m = messenger();
    expect(await m.botInfo()).toEqual({ openId: emulator.botOpenId, name: emulator.botName });
    const user = emulator.userMessage({ chatType: "p2p", senderOpenId: "ou_a", text: "hi" });
    const reply = await m.replyCard(user.event.message.message_id, card, { uuid: "once" });
    const again = await m.replyCard(user.event.message.message_id, card, { uuid: "once" });
    expect(again.messageId).toBe(reply.messageId);
    await m.patchCard(reply.messageId, {
      ...card,
      body: { elements: [{ tag: "markdown", content: "patched" }] },
    });
    expect(emulator.messages.getMessage(reply.messageId)?.content).toContain("patched");
  });

  it("fetches a fresh token when Feishu rejects the cached one (the SDK alone never does)", async () => {
    const m = messenger();
    await m.botInfo();
    emulator.expireTokens();
    await expect(m.botInfo()).resolves.toMatchObject({ openId: emulator.botOpenId });
    expect(emulator.callsTo("POST", "/open-apis/auth/v3/tenant_access_token/internal")).toHaveLength(2);
  });

  it("maps 230020, 429 with its reset header, 5xx and timeouts to FeishuApiError", async () => {
    const m = messenger(300);
    const user = emulator.userMessage({ chatType: "p2p", senderOpenId: "ou_a", text: "hi" });
    const { messageId } = await m.replyCard(user.event.message.message_id, card);

    emulator.injectFault({
      match: { method: "PATCH" },
      times: 1,
      response: { httpStatus: 400, code: 230020, msg: "slow down" },
    });
    const perMessage = await failure(m.patchCard(messageId, card));
    expect(perMessage).toMatchObject({
      feishuCode: 230020,
      httpStatus: 400,
      rateLimited: true,
      transient: false,
    });

    emulator.injectFault({
      match: { method: "PATCH" },
      times: 1,
      response: { httpStatus: 429, code: 99991400, headers: { "x-ogw-ratelimit-reset": "3" } },
    });
    const app = await failure(m.patchCard(messageId, card));
    expect(app).toMatchObject({ httpStatus: 429, retryAfterMs: 3000, rateLimited: true });

    emulator.injectFault({ match: { method: "PATCH" }, times: 1, response: { httpStatus: 503 } });
    expect(await failure(m.patchCard(messageId, card))).toMatchObject({ httpStatus: 503, transient: true });

    emulator.injectFault({ match: { method: "PATCH" }, times: 1, response: { delayMs: 1000 } });
    const slow = await failure(m.patchCard(messageId, card));
    expect(slow).toMatchObject({ httpStatus: undefined, transient: true });

    emulator.recall(messageId);
    expect(await failure(m.patchCard(messageId, card))).toMatchObject({
      feishuCode: 230011,
      messageGone: true,
    });
  });
});

describe("sdkLogger", () => {
  it("writes one line per SDK log call and redacts bearer tokens and secrets", () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _encoding, callback) {
        lines.push(String(chunk));
        callback();
      },
    });
    const log = sdkLogger(createLogger({ level: "trace", destination }));
    log.error(["[http]", "Authorization: Bearer t-secret-token", { app_secret: "s3cret" }]);
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain("t-secret-token");
    expect(lines[0]).not.toContain("s3cret");
    expect(lines[0]).toContain("Bearer [redacted]");
  });
});
