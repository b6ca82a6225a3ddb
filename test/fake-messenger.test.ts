import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Card } from "../src/cards/model.ts";
import { FeishuApiError } from "../src/feishu/messenger.ts";
import { applyCallbackCard, cardAction, userMessage } from "../src/testing/fake-inbound.ts";
import { FakeMessenger } from "../src/testing/fake-messenger.ts";

/**
 * What only the fake has (the contract suite covers what it shares with the SDK messenger): faults aimed at
 * the Nth call or one message, storms, delays on fake timers, the record of calls, and the inbound side.
 */

const card = (text: string): Card => ({
  schema: "2.0",
  config: { update_multi: true },
  body: { elements: [{ tag: "markdown", content: text }] },
});
const ALICE = "ou_alice000000000000000000000000000";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

async function codeOf(promise: Promise<unknown>): Promise<number | string> {
  try {
    await promise;
    return "ok";
  } catch (error) {
    if (error instanceof FeishuApiError) return error.feishuCode ?? `HTTP ${error.httpStatus}`;
    throw error;
  }
}

describe("the fake messenger's faults", () => {
  it("aims a fault at the Nth matching call, at one message, or at every call until cleared", async () => {
    const fake = new FakeMessenger();
    const source = userMessage(fake, { chatType: "p2p", senderOpenId: ALICE, text: "hi" }).messageId;
    const a = (await fake.replyCard(source, card("a"))).messageId;
    const b = (await fake.replyCard(source, card("b"))).messageId;
    fake.fail({ method: "patchCard", skip: 1, response: { code: 230020 } });
    fake.fail({ method: ["patchCard", "messageStatus"], messageId: b, times: 2, response: { code: 230011 } });
    const outcomes = [];
    for (const id of [a, a, a, b, b, b]) {
      fake.clock.advance(1000);
      outcomes.push(await codeOf(fake.patchCard(id, card("x"))));
    }
    expect(outcomes).toEqual(["ok", 230020, "ok", 230011, 230011, "ok"]);
    const storm = fake.fail({ times: Number.POSITIVE_INFINITY, response: { httpStatus: 503 } });
    expect(await codeOf(fake.botInfo())).toBe("HTTP 503");
    expect(await codeOf(fake.sendText({ chatId: "oc_x" }, "t"))).toBe("HTTP 503");
    expect(storm.remaining).toBe(Number.POSITIVE_INFINITY);
    fake.clearFaults();
    expect(await codeOf(fake.botInfo())).toBe("ok");
    expect(() => fake.fail({ times: 0, response: { code: 1 } })).toThrow(/times/);
  });

  it("holds a delayed call until fake time passes it, and times it out at the messenger's timeout", async () => {
    const fake = new FakeMessenger({ timeoutMs: 1000 });
    fake.fail({ method: "botInfo", response: { delayMs: 400 } });
    let answered = false;
    const info = fake.botInfo().then((value) => {
      answered = true;
      return value;
    });
    await vi.advanceTimersByTimeAsync(399);
    expect(answered).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await info).toMatchObject({ openId: fake.botOpenId });

    const source = userMessage(fake, { chatType: "p2p", senderOpenId: ALICE, text: "hi" }).messageId;
    const { messageId } = await fake.replyCard(source, card("v1"));
    fake.fail({ method: "patchCard", response: { delayMs: 5000, landsLate: true } });
    const slow = codeOf(fake.patchCard(messageId, card("late")));
    await vi.advanceTimersByTimeAsync(1000);
    expect(await slow).toBe("HTTP undefined");
    expect(fake.cardOf(messageId)).toEqual(card("v1"));
    await vi.advanceTimersByTimeAsync(4000);
    expect(fake.cardOf(messageId)).toEqual(card("late"));
    expect(fake.callsTo("patchCard", messageId).map((c) => c.outcome?.ok)).toEqual([true]);
    expect(fake.lateErrors).toEqual([]);
  });
});

describe("the fake's inbound side", () => {
  it("builds message and click payloads as the transports hand them over, and applies callback cards", async () => {
    const fake = new FakeMessenger();
    const { messageId, data } = userMessage(fake, {
      chatType: "group",
      chatId: "oc_team",
      senderOpenId: ALICE,
      text: "部署",
      mentionBot: true,
    });
    expect(data).toMatchObject({
      event_type: "im.message.receive_v1",
      sender: { sender_id: { open_id: ALICE } },
      message: {
        message_id: messageId,
        chat_id: "oc_team",
        chat_type: "group",
        content: JSON.stringify({ text: "@_user_1 部署" }),
        mentions: [{ key: "@_user_1", id: { open_id: fake.botOpenId } }],
      },
    });
    const sent = await fake.replyCard(messageId, card("v1"));
    const click = cardAction(fake, { messageId: sent.messageId, operatorOpenId: ALICE, value: { k: 1 } });
    expect(click).toMatchObject({
      operator: { open_id: ALICE },
      action: { value: { k: 1 }, tag: "button" },
      context: { open_message_id: sent.messageId, open_chat_id: "oc_team" },
    });
    expect(() => cardAction(fake, { messageId, operatorOpenId: ALICE })).toThrow(/not a card/);
    expect(applyCallbackCard(fake, sent.messageId, card("v2"), ALICE)).toMatchObject({ ok: true });
    // Shown to the clicker alone: every other member keeps the card as it was, until a PATCH.
    expect(fake.message(sent.messageId)).toMatchObject({ content: JSON.stringify(card("v1")), patches: 0 });
    expect(fake.cardOf(sent.messageId, ALICE)).toEqual(card("v2"));
    expect(applyCallbackCard(fake, sent.messageId, { schema: "1.0" }, ALICE)).toMatchObject({
      ok: false,
      code: 200830,
    });
    expect(fake.calls.map((c) => c.method)).toEqual(["replyCard"]);
  });
});

describe("the fake's inbound side: topics and languages", () => {
  // It pushes what the emulator pushes (the same builders), so what the emulator learns, the fake knows too.
  it("puts a reply in a thread under its message, with the ids the bot routes a topic by", () => {
    const fake = new FakeMessenger();
    const root = userMessage(fake, { chatType: "group", chatId: "oc_team", senderOpenId: ALICE, text: "根" });
    const reply = userMessage(fake, {
      chatType: "group",
      senderOpenId: ALICE,
      text: "在话题里",
      parentId: root.messageId,
      inThread: true,
      mentionBot: true,
    });
    const message = reply.data.message as Record<string, unknown>;
    expect(message.root_id).toBe(root.messageId);
    expect(message.chat_id).toBe("oc_team");
    expect(String(message.thread_id)).toMatch(/^omt_/);
  });

  it("flattens a click as the transports do, leaving the client's language out as the platform does", async () => {
    const fake = new FakeMessenger();
    const source = userMessage(fake, { chatType: "p2p", senderOpenId: ALICE, text: "hi" }).messageId;
    const sent = (await fake.replyCard(source, card("a"))).messageId;
    const click = cardAction(fake, {
      messageId: sent,
      operatorOpenId: ALICE,
      value: { k: 1 },
      locale: "en_us",
    });
    expect(click).toMatchObject({
      event_type: "card.action.trigger",
      app_id: fake.appId,
      operator: { open_id: ALICE },
      context: { open_message_id: sent },
    });
    // card.action.trigger has no language field (the callback page, the Go SDK's CardActionTriggerRequest,
    // node-sdk's normalizeCardAction; feishu-platform §2.1): the client's language only picks the toast text.
    expect(click).not.toHaveProperty("locale");
    expect(click.operator).not.toHaveProperty("locale");
  });
});
