import { afterEach, describe, expect, it } from "vitest";
import { type CardKitApi, createLarkCardKit } from "../src/feishu/cardkit/api.ts";
import { FeishuApiError } from "../src/feishu/messenger.ts";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";
import { createLogger } from "../src/logger.ts";
import { FakeCardKit } from "../src/testing/fake-cardkit.ts";
import { userMessage } from "../src/testing/fake-inbound.ts";
import { FakeMessenger } from "../src/testing/fake-messenger.ts";

/**
 * The fake messenger's CardKit (src/testing/fake-cardkit.ts), which the channel scenario suites run the
 * `cardkit` transport on, answers as the SDK's CardKit over HTTP to the emulator does: the same codes for the
 * same calls, and the same card shown on the message. Where they differ, the emulator is right.
 */

const ALICE = "ou_alice000000000000000000000000000";
const emus: Emulator[] = [];
afterEach(async () => {
  for (const e of emus.splice(0)) await e.close();
});

interface Platform {
  api: CardKitApi;
  /** A user's message to reply to. */
  asked(): string;
  shown(messageId: string): unknown;
  /** Ten minutes pass on the platform. */
  advance(ms: number): void;
}

async function emulated(): Promise<Platform> {
  const emulator = await startEmulator();
  emus.push(emulator);
  const logger = createLogger({ level: "silent" });
  return {
    api: createLarkCardKit({
      appId: emulator.appId,
      appSecret: emulator.appSecret,
      domain: emulator.url,
      logger,
    }),
    asked: () =>
      emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "hi" }).event.message.message_id,
    shown: (messageId) => JSON.parse(emulator.messages.getMessage(messageId)!.content),
    advance: (ms) => emulator.clock.advance(ms),
  };
}

function faked(): Platform {
  const fake = new FakeMessenger();
  return {
    api: new FakeCardKit(fake),
    asked: () => userMessage(fake, { chatType: "p2p", senderOpenId: ALICE, text: "hi" }).messageId,
    shown: (messageId) => fake.cardOf(messageId),
    advance: (ms) => fake.clock.advance(ms),
  };
}

const card = (text: string, streaming: boolean) => ({
  schema: "2.0",
  config: { update_multi: true, streaming_mode: streaming },
  body: { elements: [{ tag: "markdown", content: text, element_id: "answer" }] },
});

const codeOf = async (call: Promise<unknown>): Promise<number> => {
  try {
    await call;
    return 0;
  } catch (error) {
    if (error instanceof FeishuApiError) return error.feishuCode ?? error.httpStatus ?? -1;
    throw error;
  }
};

/** One script of calls, its codes in order and what the message shows at the end. */
async function script(p: Platform): Promise<{ codes: number[]; shown: unknown }> {
  const codes: number[] = [];
  const { cardId } = await p.api.create(card("你好", true));
  const { messageId } = await p.api.send({ replyTo: p.asked() }, cardId, "contract-1");
  // The same uuid again: the same message, not a second one (and the entity is not claimed twice).
  const again = await p.api.send({ replyTo: p.asked() }, cardId, "contract-1");
  codes.push(again.messageId === messageId ? 0 : -9);
  codes.push(await codeOf(p.api.send({ replyTo: p.asked() }, cardId, "contract-2"))); // sent once
  codes.push(await codeOf(p.api.content(cardId, "answer", "你好，世界", 1)));
  codes.push(await codeOf(p.api.content(cardId, "answer", "你好，世界！", 1))); // 300317
  codes.push(await codeOf(p.api.content(cardId, "nope", "x", 2))); // no such element
  codes.push(await codeOf(p.api.settings(cardId, { streaming_mode: false }, 3)));
  codes.push(await codeOf(p.api.content(cardId, "answer", "关了", 4))); // 300309
  codes.push(await codeOf(p.api.update(cardId, card("重开", true), 5)));
  p.advance(600_000);
  codes.push(await codeOf(p.api.content(cardId, "answer", "重开了", 6))); // 200850 once
  codes.push(await codeOf(p.api.content(cardId, "answer", "重开了吗", 7))); // then 300309
  codes.push(await codeOf(p.api.update("7000000000000000999", card("x", false), 8))); // unknown entity
  codes.push(await codeOf(p.api.update(cardId, card("完成", false), 9)));
  return { codes, shown: p.shown(messageId) };
}

describe("the fake's CardKit against the emulator's", () => {
  it("answers one script of calls with the same codes and shows the same card", async () => {
    const [wire, fake] = [await script(await emulated()), await script(faked())];
    expect(fake).toEqual(wire);
    // And the script means what it says (a contract of two wrong doubles would pass too).
    expect(wire.codes).toEqual([0, 200740, 0, 300317, 300302, 0, 300309, 0, 200850, 300309, 11310, 0]);
  });
});
