import { afterEach, vi } from "vitest";
import { exampleCards } from "../../src/cards/examples.ts";
import { createLarkMessenger } from "../../src/feishu/lark-messenger.ts";
import { startLongConnection } from "../../src/feishu/long-connection.ts";
import type { FeishuEventHandlers } from "../../src/feishu/transport.ts";
import { type Emulator, type EmulatorOptions, startEmulator } from "../../src/local/emulator/index.ts";
import { createLogger } from "../../src/logger.ts";
import {
  FAST_LONG_CONNECTION,
  type FeishuRig,
  formsOn,
  requestIdsOn,
  startFeishuRig,
  WEBHOOK_KEY,
} from "./feishu.ts";
import { connectRaw, type RawClient } from "./raw-long-connection.ts";

/**
 * What the long-connection test files share: an emulator with fast ClientConfig and short redeliveries
 * (100 ms), the full bot on the real WSClient, a bare recording bot, a raw client. Everything started is
 * stopped after each test (call `longConnectionFixtures()` once per file).
 */

export const ALICE = "ou_alice000000000000000000000000000";
export const quiet = createLogger({ level: "silent" });

export function longConnectionFixtures() {
  const cleanup: (() => unknown)[] = [];
  afterEach(async () => {
    vi.useRealTimers();
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  async function emulator(longConnection: EmulatorOptions["longConnection"] = {}): Promise<Emulator> {
    const emu = await startEmulator({
      encryptKey: WEBHOOK_KEY,
      longConnection: { ...FAST_LONG_CONNECTION, redeliveryMs: [100, 100], ...longConnection },
    });
    cleanup.push(() => emu.close());
    return emu;
  }

  async function rig(emu: Emulator, options: { settleMs?: number } = {}): Promise<FeishuRig> {
    const r = await startFeishuRig({ emulator: emu, transport: "ws", ...options });
    cleanup.push(() => r.stop());
    return r;
  }

  async function raw(emu: Emulator): Promise<RawClient> {
    const client = await connectRaw(emu);
    cleanup.push(() => client.close());
    return client;
  }

  /** A bare bot on the long connection that records what it was handed. */
  async function recordingBot(emu: Emulator, appSecret = emu.appSecret) {
    const messages: Record<string, unknown>[] = [];
    const handlers: FeishuEventHandlers = {
      onMessage: async (data) => {
        messages.push(data);
      },
      onCardAction: async () => ({ response: {} }),
    };
    const fatal: unknown[] = [];
    const connection = startLongConnection({
      appId: emu.appId,
      appSecret,
      domain: emu.url,
      handlers,
      logger: quiet,
      onFatal: (error) => fatal.push(error),
    });
    cleanup.push(() => connection.close());
    return { messages, fatal, connection };
  }

  return { cleanup, emulator, rig, raw, recordingBot };
}

/**
 * For a delivery that only proves the connection serves: the 3 s ack deadline is the platform's, but a CI machine
 * running the whole suite on 2 cores can stall a process for longer (CI saw one such stall after a reconnect).
 * Tests of the deadline itself keep the default.
 */
export const SERVES = { timeoutMs: 10_000 } as const;

export const waitFor = <T>(probe: () => T | undefined | false, timeout = 8000) =>
  vi.waitFor(
    () => {
      const value = probe();
      if (value === undefined || value === false) throw new Error("not yet");
      return value;
    },
    { timeout, interval: 10 },
  );

/** Sends a message and waits for its progress card to carry the demo's form. */
export async function askedCard(r: FeishuRig) {
  const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "帮我部署" });
  const cardId = await r.progressCard(userMessageId);
  const card = await r.until(() => {
    const c = r.cardOf(cardId);
    return formsOn(c).length > 0 && c;
  }, "a form on the card");
  return { userMessageId, cardId, requestId: requestIdsOn(card)[0] ?? "" };
}

/** A card the bot sent, so the emulator will build a click on it. */
export async function sentCard(emu: Emulator): Promise<string> {
  const messenger = createLarkMessenger({
    appId: emu.appId,
    appSecret: emu.appSecret,
    domain: emu.url,
    logger: quiet,
  });
  const card = exampleCards()["progress-running"];
  if (!card) throw new Error("no example card progress-running");
  return (await messenger.sendCard({ chatId: "oc_chat1" }, card)).messageId;
}
