import * as lark from "@larksuiteoapi/node-sdk";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { exampleCards } from "../src/cards/examples.ts";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";

/**
 * Topic groups and threads in the emulator (feishu-platform §5.1), through the real SDK: where a message
 * lands (its thread, root and parent), what the receive event carries, and what the platform refuses.
 */

const T0 = Date.UTC(2026, 11, 1, 4, 0, 0);
const TOPIC_GROUP = "oc_topic_group";
const quiet = { error() {}, warn() {}, info() {}, debug() {}, trace() {} };

const running: Emulator[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((emu) => emu.close()));
});

async function setup() {
  const emu = await startEmulator({ now: () => T0, topicGroups: [TOPIC_GROUP] });
  running.push(emu);
  const client = new lark.Client({
    appId: emu.appId,
    appSecret: emu.appSecret,
    domain: emu.url,
    cache: new lark.DefaultCache(),
    loggerLevel: lark.LoggerLevel.error,
    logger: quiet,
  });
  return { emu, client };
}

const text = (value: string) => JSON.stringify({ text: value });

describe("Emulator topic groups and threads", () => {
  it("opens a topic for every new message in a topic group, root included, and keeps replies in it", async () => {
    const { emu } = await setup();
    const first = emu.userMessage({
      chatId: TOPIC_GROUP,
      chatType: "group",
      senderOpenId: "ou_a",
      text: "话题一",
    });
    const second = emu.userMessage({
      chatId: TOPIC_GROUP,
      chatType: "group",
      senderOpenId: "ou_b",
      text: "话题二",
    });
    const one = first.event.message;
    const two = second.event.message;
    expect(one.thread_id).toMatch(/^omt_/);
    expect(two.thread_id).toMatch(/^omt_/);
    expect(two.thread_id).not.toBe(one.thread_id);
    expect(one.root_id).toBeUndefined();

    // A reply in a topic group is in its topic even without asking; root and parent are the topic's root.
    const reply = emu.userMessage({
      chatType: "group",
      senderOpenId: "ou_b",
      text: "在话题一里",
      parentId: one.message_id,
    }).event.message;
    expect(reply).toMatchObject({
      thread_id: one.thread_id,
      root_id: one.message_id,
      parent_id: one.message_id,
    });
  });

  it("lets a normal group reply in a thread under a message; a plain quote reply stays in the main flow", async () => {
    const { emu } = await setup();
    const root = emu.userMessage({ chatType: "group", senderOpenId: "ou_a", text: "普通消息" }).event.message;
    expect(root.thread_id).toBeUndefined();
    const quote = emu.userMessage({
      chatType: "group",
      senderOpenId: "ou_b",
      text: "引用",
      parentId: root.message_id,
    }).event.message;
    expect(quote.thread_id).toBeUndefined();
    expect(quote).toMatchObject({ root_id: root.message_id, parent_id: root.message_id });

    const threaded = emu.userMessage({
      chatType: "group",
      senderOpenId: "ou_b",
      text: "回复话题",
      parentId: root.message_id,
      inThread: true,
    }).event.message;
    expect(threaded.thread_id).toMatch(/^omt_/);
    // The root now belongs to the thread it carries (as the platform returns it afterwards).
    expect(emu.messages.getMessage(root.message_id)?.threadId).toBe(threaded.thread_id);
  });

  it("puts a bot reply with reply_in_thread in a new thread, and a later plain reply there into the same one", async () => {
    const { emu, client } = await setup();
    const root = emu.userMessage({
      chatType: "group",
      senderOpenId: "ou_a",
      text: "@bot 任务",
      mentionBot: true,
    }).event.message;
    const card = await client.im.message.reply({
      path: { message_id: root.message_id },
      data: {
        msg_type: "interactive",
        content: JSON.stringify(exampleCards()["progress-running"]),
        reply_in_thread: true,
      },
    });
    const threadId = card.data?.thread_id;
    expect(threadId).toMatch(/^omt_/);
    const follow = emu.userMessage({
      chatType: "group",
      senderOpenId: "ou_a",
      text: "继续",
      parentId: card.data?.message_id ?? "",
    }).event.message;
    expect(follow.thread_id).toBe(threadId);
    const plain = await client.im.message.reply({
      path: { message_id: follow.message_id },
      data: { msg_type: "text", content: text("好的") },
    });
    expect(plain.data?.thread_id).toBe(threadId);
  });

  it("starts a new topic when the bot sends (not replies) into a topic group", async () => {
    const { emu, client } = await setup();
    const sent = await client.im.message.create({
      params: { receive_id_type: "chat_id" },
      data: { receive_id: TOPIC_GROUP, msg_type: "text", content: text("新话题") },
    });
    expect(sent.data?.thread_id).toMatch(/^omt_/);
    expect(emu.chatMode(TOPIC_GROUP)).toBe("topic");
    expect(emu.chatMode("oc_other")).toBe("group");
  });

  it("sends a topic reply's event without thread_id on request, the message keeping it", async () => {
    const { emu } = await setup();
    const root = emu.userMessage({
      chatId: TOPIC_GROUP,
      chatType: "group",
      senderOpenId: "ou_a",
      text: "根",
    });
    const reply = emu.userMessage({
      chatType: "group",
      senderOpenId: "ou_b",
      text: "跟进",
      parentId: root.event.message.message_id,
      eventWithoutThreadId: true,
    });
    // The shape larksuite/openclaw-lark reports for topic groups (feishu-platform §5.1).
    expect(reply.event.message).toMatchObject({ root_id: root.event.message.message_id });
    expect(reply.event.message).not.toHaveProperty("thread_id");
    expect(emu.messages.getMessage(reply.event.message.message_id)?.threadId).toBe(
      root.event.message.thread_id,
    );
  });

  it("refuses a thread_id as receive_id_type with 99992402, as the field saw", async () => {
    const { client } = await setup();
    const refused = await client
      .request({
        method: "POST",
        url: "/open-apis/im/v1/messages",
        params: { receive_id_type: "thread_id" },
        data: { receive_id: "omt_1", msg_type: "text", content: text("x") },
      })
      .then(
        () => undefined,
        (error: { response?: { data?: { code?: number } } }) => error.response?.data,
      );
    // NousResearch/hermes-agent#78975 (feishu-platform §5.1).
    expect(refused).toMatchObject({ code: 99992402 });
  });

  it("refuses ephemeral cards in topic groups and private chats, and sends them in normal groups", async () => {
    const { emu, client } = await setup();
    const card = exampleCards()["progress-running"];
    const send = (chatId: string) =>
      client.request({
        method: "POST",
        url: "/open-apis/ephemeral/v1/send",
        data: { chat_id: chatId, open_id: "ou_a", msg_type: "interactive", card },
      });
    const refused = await send(TOPIC_GROUP).then(
      () => undefined,
      (error: { response?: { data?: { code?: number; msg?: string } } }) => error.response?.data,
    );
    // The docs say topic groups are refused but name no code; the field saw 18053 "chat can not be thread"
    // (deepcoldy/botmux src/im/lark/client.ts), feishu-platform §5.1.
    expect(refused).toMatchObject({ code: 18053, msg: expect.stringContaining("chat can not be thread") });
    const p2p = await send("oc_p2p_ou_a").then(
      () => undefined,
      (error: { response?: { data?: { code?: number } } }) => error.response?.data,
    );
    expect(p2p).toMatchObject({ code: 18053 });
    const sent = z
      .object({ code: z.number(), data: z.object({ message_id: z.string() }) })
      .parse(await send("oc_normal"));
    expect(sent.code).toBe(0);
    // It can be neither replied to nor patched, being in one reader's client only.
    const reply = await client.im.message
      .reply({ path: { message_id: sent.data.message_id }, data: { msg_type: "text", content: text("x") } })
      .then(
        () => undefined,
        (error: { response?: { data?: { code?: number } } }) => error.response?.data,
      );
    expect(reply).toMatchObject({ code: 230001 });
    const patch = await client.im.message
      .patch({ path: { message_id: sent.data.message_id }, data: { content: JSON.stringify(card) } })
      .then(
        () => undefined,
        (error: { response?: { data?: { code?: number } } }) => error.response?.data,
      );
    expect(patch).toMatchObject({ code: 230001 });
    expect(emu.messages.getMessage(sent.data.message_id)).toMatchObject({
      visibleTo: "ou_a",
      chatId: "oc_normal",
    });
  });
});
