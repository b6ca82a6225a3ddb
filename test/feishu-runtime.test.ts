import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { createCore } from "../src/core.ts";
import { flattenEnvelope } from "../src/feishu/events.ts";
import { createLarkMessenger } from "../src/feishu/lark-messenger.ts";
import { createFeishuRuntime } from "../src/feishu/runtime.ts";
import { createDemoAgent, createDemoTools } from "../src/harness/agents/demo.ts";
import { startEmulator } from "../src/local/emulator/index.ts";
import { createLogger } from "../src/logger.ts";
import { openDatabase } from "../src/store/db.ts";
import { cardReplyingTo, formsOn, requestIdsOn } from "./helpers/feishu.ts";

/**
 * createFeishuRuntime with no transport: the caller hands events to `handlers` itself (the way scenario
 * tests over a fake messenger drive it). Here the messenger is the SDK's over the emulator, so what the
 * runtime wired is checked where a user would see it: the card in the chat, the answer's toast.
 */

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const responseSchema = z.object({
  toast: z.object({ type: z.string(), content: z.string() }),
  card: z.object({ type: z.literal("raw"), data: z.record(z.string(), z.unknown()) }),
});

const ALICE = "ou_alice000000000000000000000000000";

async function start() {
  const emulator = await startEmulator({ encryptKey: "runtime-test-key" });
  cleanups.push(() => emulator.close());
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-runtime-"));
  const db = openDatabase(path.join(dataDir, "bot.sqlite"));
  const logger = createLogger({ level: "silent" });
  const core = await createCore({
    db,
    logger,
    agent: createDemoAgent(),
    tools: createDemoTools({ stepMs: 1 }),
    askTimeoutMs: 60_000,
    authSecret: "runtime-test-secret-0123456789",
  });
  const callbacks: string[] = [];
  const runtime = await createFeishuRuntime({
    messenger: createLarkMessenger({
      appId: emulator.appId,
      appSecret: emulator.appSecret,
      domain: emulator.url,
      logger,
    }),
    core,
    logger,
    now: Date.now,
    appId: emulator.appId,
    dataDir,
    cardPatchIntervalMs: 50,
    askPing: false,
    inbound: { transport: "none" },
    metrics: {
      patch: () => undefined,
      callback: (_ms, outcome) => callbacks.push(outcome),
      limiterWait: () => undefined,
      limiterQueue: () => undefined,
      connection: () => undefined,
    },
  });
  cleanups.push(async () => {
    await core.runner.stop();
    await runtime.close();
    await core.hub.close();
    db.close();
  });
  const flat = (payload: unknown) => {
    const envelope = flattenEnvelope(payload);
    if (!envelope.ok) throw new Error(envelope.error);
    return envelope.value.data;
  };
  return { emulator, core, runtime, callbacks, flat };
}

describe("createFeishuRuntime", () => {
  it("with no transport, takes events from its handlers and answers on the card through the messenger", async () => {
    const { emulator, core, runtime, callbacks, flat } = await start();
    // Nothing listens: no webhook route, no long connection.
    expect(runtime.routes).toEqual([]);
    await runtime.ready;

    const message = emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "帮我部署" });
    await runtime.handlers.onMessage(flat(message));
    const userMessageId = message.event.message.message_id;
    const cardId = await vi.waitFor(() => {
      const id = cardReplyingTo(emulator, userMessageId);
      if (!id) throw new Error("no progress card yet");
      return id;
    });
    const card = await vi.waitFor(() => {
      const shown = JSON.parse(emulator.messages.getMessage(cardId)?.content ?? "{}");
      if (formsOn(shown).length === 0) throw new Error("no form on the card yet");
      return shown;
    });
    const requestId = requestIdsOn(card)[0] ?? "";
    const ask = core.registry.get(requestId);
    expect(ask?.answererId).toBe(ALICE);

    // A submit that leaves a question unanswered: the card action goes through the runtime's CardActionDeps.
    const click = emulator.cardAction({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: { kind: "feishu_ask", act: "submit", sessionId: ask?.sessionId, requestId, sender: ALICE },
      formValue: {},
      name: "ask0_submit",
    });
    const answer = await runtime.handlers.onCardAction(flat(click));
    const response = responseSchema.parse(answer.response);
    expect(response.toast.type).toBe("warning");
    // The answer carries the card, its form still there (the question is not answered).
    expect(JSON.stringify(response.card.data)).toContain(requestId);
    answer.afterResponse?.(true);
    // The question is still pending, and the callback was counted for /metrics.
    expect(core.registry.get(requestId)).toBeDefined();
    expect(callbacks).toEqual(["answered"]);
  });
});
