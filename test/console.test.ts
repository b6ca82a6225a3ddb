import fs from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import express from "express";
import { afterEach, describe, expect, it } from "vitest";
import { exampleCards } from "../src/cards/examples.ts";
import type { FeishuEventHandlers } from "../src/feishu/transport.ts";
import { FEISHU_WEBHOOK_PATH, mountFeishuWebhook } from "../src/feishu/webhook.ts";
import { buttonLabel } from "../src/local/console/card-label.ts";
import { composeText } from "../src/local/console/compose.ts";
import {
  type ConsoleEvent,
  type ConsoleMessage,
  LOCAL_GROUP_CHAT_ID,
  LOCAL_USERS,
  type LogEntry,
  mountConsole,
} from "../src/local/console/index.ts";
import {
  buttonAction,
  cardPreview,
  collectFormValue,
  localizeCard,
  missingRequired,
  safeUrl,
} from "../src/local/console/public/card-values.ts";
import { textSegments } from "../src/local/console/view.ts";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";
import { createLogger } from "../src/logger.ts";
import { markdownToHtml } from "../src/web/public/markdown.ts";
import { until as waitUntil } from "./helpers/wait.ts";

const ENCRYPT_KEY = "console-test-encrypt-key";
const PUBLIC_DIR = path.join(import.meta.dirname, "../src/local/console/public");
const logger = createLogger({ level: "silent" });
const [ALICE, BOB] = LOCAL_USERS as [(typeof LOCAL_USERS)[0], (typeof LOCAL_USERS)[0]];
const ALICE_CHAT = `oc_p2p_${ALICE.openId}`;
const cards = exampleCards();
const SUBMITTED = { toast: { type: "success", content: "已提交" } };

const cleanup: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

async function listen(app: express.Express): Promise<string> {
  const server: Server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanup.push(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

type CardAction = FeishuEventHandlers["onCardAction"];

/**
 * The emulator, a bot that is only the real webhook (signature, decryption) with handlers that record what
 * reached them, and the console mounted on an app of its own.
 */
async function startRig(options: { onCardAction?: CardAction } = {}) {
  const emulator = await startEmulator({ encryptKey: ENCRYPT_KEY });
  cleanup.push(() => emulator.close());
  const messages: Record<string, unknown>[] = [];
  const actions: Record<string, unknown>[] = [];
  const signatures: (string | undefined)[] = [];
  const handlers: FeishuEventHandlers = {
    onMessage: async (data) => {
      messages.push(data);
    },
    onCardAction: (data) => {
      actions.push(data);
      return options.onCardAction
        ? options.onCardAction(data)
        : Promise.resolve({
            response: { ...SUBMITTED, card: { type: "raw", data: cards["progress-completed"] } },
          });
    },
  };
  const bot = express();
  bot.use(FEISHU_WEBHOOK_PATH, (req, _res, next) => {
    signatures.push(req.get("x-lark-signature"));
    next();
  });
  mountFeishuWebhook(bot, { encryptKey: ENCRYPT_KEY, handlers, logger, now: emulator.clock.now });
  const botUrl = await listen(bot);
  let webhookUrl = `${botUrl}${FEISHU_WEBHOOK_PATH}`;

  const app = express();
  mountConsole(app, { emulator, botWebhookUrl: () => webhookUrl, logger });
  const url = await listen(app);

  return {
    emulator,
    url,
    messages,
    actions,
    signatures,
    pointBotAt(target: string) {
      webhookUrl = target;
    },
    get: (route: string) => fetch(`${url}${route}`),
    post: (route: string, body: unknown) =>
      fetch(`${url}${route}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: typeof body === "string" ? body : JSON.stringify(body),
      }),
  };
}

/** The bot's side of the Open API, called like the SDK does: a tenant token, then the call. */
async function openApi(emu: Emulator, method: string, route: string, body: unknown) {
  const tokenResponse = await fetch(`${emu.url}/open-apis/auth/v3/tenant_access_token/internal`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ app_id: emu.appId, app_secret: emu.appSecret }),
  });
  const { tenant_access_token: token } = (await tokenResponse.json()) as { tenant_access_token: string };
  const response = await fetch(`${emu.url}${route}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return (await response.json()) as { code: number; data?: { message_id?: string } };
}

async function botCard(emu: Emulator, chatId: string, card: unknown): Promise<string> {
  const sent = await openApi(emu, "POST", "/open-apis/im/v1/messages?receive_id_type=chat_id", {
    receive_id: chatId,
    msg_type: "interactive",
    content: JSON.stringify(card),
  });
  expect(sent.code).toBe(0);
  return sent.data?.message_id ?? "";
}

const patchCard = (emu: Emulator, messageId: string, card: unknown) =>
  openApi(emu, "PATCH", `/open-apis/im/v1/messages/${messageId}`, { content: JSON.stringify(card) });

const until = <T>(probe: () => T | undefined, what: string, timeoutMs = 3000): Promise<T> =>
  waitUntil(probe, what, timeoutMs);

/** Reads `GET /console/api/events` as a browser's EventSource would. */
async function openStream(url: string) {
  const controller = new AbortController();
  const response = await fetch(`${url}/console/api/events`, { signal: controller.signal });
  const events: ConsoleEvent[] = [];
  const reader = response.body?.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const pump = (async () => {
    for (;;) {
      const chunk = await reader?.read().catch(() => ({ done: true, value: undefined }));
      if (!chunk || chunk.done) return;
      buffer += decoder.decode(chunk.value, { stream: true });
      for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
        for (const line of buffer.slice(0, end).split("\n"))
          if (line.startsWith("data: ")) events.push(JSON.parse(line.slice(6)) as ConsoleEvent);
        buffer = buffer.slice(end + 2);
      }
    }
  })();
  cleanup.push(() => {
    controller.abort();
    return pump;
  });
  return {
    response,
    events,
    next: (match: (event: ConsoleEvent) => boolean, what: string) => until(() => events.find(match), what),
  };
}

describe("console API: chats and messages", () => {
  it("lists each local user's private chat with the bot, the group of all three and their topic group", async () => {
    const rig = await startRig();
    const body = (await (await rig.get("/console/api/chats")).json()) as {
      bot: { openId: string; name: string };
      users: unknown;
      chats: { chatId: string; type: string; ownerId?: string; memberIds: string[] }[];
    };
    expect(body.bot).toEqual({ openId: rig.emulator.botOpenId, name: rig.emulator.botName });
    expect(body.users).toEqual([
      { openId: "ou_local_alice", name: "Alice" },
      { openId: "ou_local_bob", name: "Bob" },
      { openId: "ou_local_carol", name: "Carol" },
    ]);
    expect(body.chats.map((chat) => [chat.chatId, chat.type, chat.ownerId, chat.memberIds])).toEqual([
      ["oc_p2p_ou_local_alice", "p2p", "ou_local_alice", ["ou_local_alice"]],
      ["oc_p2p_ou_local_bob", "p2p", "ou_local_bob", ["ou_local_bob"]],
      ["oc_p2p_ou_local_carol", "p2p", "ou_local_carol", ["ou_local_carol"]],
      [LOCAL_GROUP_CHAT_ID, "group", undefined, ["ou_local_alice", "ou_local_bob", "ou_local_carol"]],
      ["oc_local_topics", "group", undefined, ["ou_local_alice", "ou_local_bob", "ou_local_carol"]],
    ]);
  });

  it("starts a topic in the topic group and replies in a thread in the normal group (issue 19)", async () => {
    const rig = await startRig();
    // mountConsole told the emulator that 本地话题群 is a topic group.
    expect(rig.emulator.chatMode("oc_local_topics")).toBe("topic");
    const topic = await rig.post("/console/api/messages", {
      chatId: "oc_local_topics",
      userId: ALICE.openId,
      text: "新话题",
    });
    expect(topic.status).toBe(200);
    const plain = await rig.post("/console/api/messages", {
      chatId: LOCAL_GROUP_CHAT_ID,
      userId: ALICE.openId,
      text: "普通",
    });
    const { messageId: rootId } = (await plain.json()) as { messageId: string };
    const threaded = await rig.post("/console/api/messages", {
      chatId: LOCAL_GROUP_CHAT_ID,
      userId: BOB.openId,
      text: "在话题里",
      replyTo: rootId,
      inThread: true,
    });
    expect(threaded.status).toBe(200);
    const delivered = rig.messages.map((m) => m.message as { thread_id?: string; root_id?: string });
    expect(delivered[0]?.thread_id).toMatch(/^omt_/);
    expect(delivered[1]?.thread_id).toBeUndefined();
    expect(delivered[2]).toMatchObject({ root_id: rootId, thread_id: expect.stringMatching(/^omt_/) });
  });

  it("delivers a private message to the bot as a signed, encrypted im.message.receive_v1", async () => {
    const rig = await startRig();
    const response = await rig.post("/console/api/messages", {
      chatId: ALICE_CHAT,
      userId: ALICE.openId,
      text: "帮我给新服务选一个部署方案",
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { messageId: string; delivered: boolean; mentionBot: boolean };
    expect(body).toMatchObject({ delivered: true, mentionBot: false });

    // The bot's real webhook verified the signature and decrypted the body, or the handler would not run.
    expect(rig.signatures).toHaveLength(1);
    expect(rig.signatures[0]).toMatch(/^[0-9a-f]{64}$/);
    expect(rig.messages).toHaveLength(1);
    expect(rig.messages[0]).toMatchObject({
      event_type: "im.message.receive_v1",
      sender: { sender_id: { open_id: ALICE.openId }, sender_type: "user" },
      message: {
        message_id: body.messageId,
        chat_id: ALICE_CHAT,
        chat_type: "p2p",
        message_type: "text",
        content: JSON.stringify({ text: "帮我给新服务选一个部署方案" }),
      },
    });
    expect((rig.messages[0]!.message as { mentions?: unknown }).mentions).toBeUndefined();

    const list = (await (await rig.get(`/console/api/messages?chatId=${ALICE_CHAT}`)).json()) as {
      messages: ConsoleMessage[];
    };
    expect(list.messages).toEqual([
      expect.objectContaining({
        messageId: body.messageId,
        sender: { type: "user", id: ALICE.openId, name: "Alice" },
        text: [{ type: "text", text: "帮我给新服务选一个部署方案" }],
      }),
    ]);
    expect(await (await rig.get(`/console/api/chats/${ALICE_CHAT}/messages`)).json()).toEqual(list);
  });

  it("mentions the bot in the group for @bot, @机器人 or a leading @, and strips the typed mention", async () => {
    const rig = await startRig();
    const send = (text: string) =>
      rig.post("/console/api/messages", { chatId: LOCAL_GROUP_CHAT_ID, userId: BOB.openId, text });
    for (const text of ["@bot 再跑一遍测试", "再跑一遍 @机器人 测试", "@ 再跑一遍测试", "大家好"])
      expect((await send(text)).status).toBe(200);

    const delivered = rig.messages.map(
      (data) => data.message as { chat_id: string; chat_type: string; content: string; mentions?: unknown[] },
    );
    expect(delivered.map((m) => [m.chat_id, m.chat_type])).toEqual(
      Array(4).fill([LOCAL_GROUP_CHAT_ID, "group"]),
    );
    expect(delivered.map((m) => JSON.parse(m.content).text)).toEqual([
      "@_user_1 再跑一遍测试",
      "再跑一遍 @_user_1 测试",
      "@_user_1 再跑一遍测试",
      "大家好",
    ]);
    for (const message of delivered.slice(0, 3))
      expect(message.mentions).toEqual([
        expect.objectContaining({
          key: "@_user_1",
          id: expect.objectContaining({ open_id: rig.emulator.botOpenId }),
          name: rig.emulator.botName,
        }),
      ]);
    expect(delivered[3]?.mentions).toBeUndefined();
    expect(
      rig.messages.every(
        (data) => (data.sender as { sender_id: { open_id: string } }).sender_id.open_id === BOB.openId,
      ),
    ).toBe(true);

    const list = (await (await rig.get(`/console/api/messages?chatId=${LOCAL_GROUP_CHAT_ID}`)).json()) as {
      messages: ConsoleMessage[];
    };
    expect(list.messages[1]?.text).toEqual([
      { type: "text", text: "再跑一遍 " },
      { type: "at", openId: rig.emulator.botOpenId, name: rig.emulator.botName },
      { type: "text", text: " 测试" },
    ]);
  });

  it("lets only its owner write in a private chat, and only members act on a card", async () => {
    const rig = await startRig();
    const write = await rig.post("/console/api/messages", {
      chatId: ALICE_CHAT,
      userId: BOB.openId,
      text: "hi",
    });
    expect(write.status).toBe(403);
    const cardId = await botCard(rig.emulator, ALICE_CHAT, cards["progress-running"]);
    const act = await rig.post("/console/api/actions", { messageId: cardId, userId: BOB.openId, value: {} });
    expect(act.status).toBe(403);
    expect(((await act.json()) as { error: { message: string } }).error.message).toContain("Bob");
    expect(rig.messages).toHaveLength(0);
    expect(rig.actions).toHaveLength(0);
  });

  it("answers 502 with the stored message when the bot cannot be reached", async () => {
    const rig = await startRig();
    rig.pointBotAt("http://127.0.0.1:9/feishu/events");
    const response = await rig.post("/console/api/messages", {
      chatId: ALICE_CHAT,
      userId: ALICE.openId,
      text: "hi",
    });
    expect(response.status).toBe(502);
    const body = (await response.json()) as { messageId: string; delivered: boolean; error: string };
    expect(body.delivered).toBe(false);
    expect(rig.emulator.messages.getMessage(body.messageId)).toBeDefined();
    const log = (await (await rig.get("/console/api/calls")).json()) as { entries: LogEntry[] };
    expect(log.entries.at(-1)).toMatchObject({
      kind: "event",
      messageId: body.messageId,
      error: expect.any(String),
    });
  });
});

describe("console API: card actions", () => {
  it("delivers the click, returns the toast and applies the response's card to the message", async () => {
    const rig = await startRig();
    const cardId = await botCard(rig.emulator, ALICE_CHAT, cards["progress-one-form"]);
    const value = {
      kind: "feishu_ask",
      act: "submit",
      sessionId: "s1",
      requestId: "req_0001",
      sender: ALICE.openId,
    };
    const response = await rig.post("/console/api/actions", {
      messageId: cardId,
      userId: ALICE.openId,
      value,
      name: "ask0_submit",
      formValue: { ask0_q0: "1", ask0_q1: ["0", "2"], ask0_c0: "自定义" },
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { toast: unknown; durationMs: number; card: string };
    expect(body).toMatchObject({ toast: SUBMITTED.toast, card: "applied" });
    expect(body.durationMs).toBeGreaterThan(0);

    expect(rig.actions).toEqual([
      expect.objectContaining({
        operator: expect.objectContaining({ open_id: ALICE.openId }),
        action: {
          value,
          tag: "button",
          name: "ask0_submit",
          form_value: { ask0_q0: "1", ask0_q1: ["0", "2"], ask0_c0: "自定义" },
        },
        context: { open_message_id: cardId, open_chat_id: ALICE_CHAT },
      }),
    ]);
    const stored = rig.emulator.messages.getMessage(cardId);
    // Shown to the clicker: the shared card stays as it was until the bot PATCHes it.
    expect(JSON.parse(rig.emulator.messages.contentFor(cardId, ALICE.openId) ?? "")).toEqual(
      cards["progress-completed"],
    );
    expect(JSON.parse(stored?.content ?? "")).toEqual(cards["progress-one-form"]);
    expect(stored?.patches).toBe(0); // a callback's card is no PATCH

    const log = (await (await rig.get("/console/api/calls")).json()) as { entries: LogEntry[] };
    expect(log.entries.at(-1)).toMatchObject({
      kind: "callback",
      messageId: cardId,
      operatorId: ALICE.openId,
      operatorName: "Alice",
      label: "提交",
      toast: SUBMITTED.toast,
      card: "applied",
      status: 200,
    });
  });

  it("shows the Feishu client's error when the answer's card is not a 2.0 card, and keeps the old one", async () => {
    const rig = await startRig({
      onCardAction: async () => ({
        response: { ...SUBMITTED, card: { type: "raw", data: { config: {}, elements: [] } } },
      }),
    });
    const cardId = await botCard(rig.emulator, ALICE_CHAT, cards["progress-running"]);
    const body = (await (
      await rig.post("/console/api/actions", {
        messageId: cardId,
        userId: ALICE.openId,
        value: { kind: "x" },
      })
    ).json()) as { toast: { type: string; content: string }; card: string; error: string };
    expect(body).toMatchObject({ toast: { type: "error" }, card: "rejected" });
    expect(body.toast.content).toContain("200830");
    expect(JSON.parse(rig.emulator.messages.getMessage(cardId)?.content ?? "")).toEqual(
      cards["progress-running"],
    );
  });

  it("reverts an update that landed while the callback was in flight: the answer's card wins (§2.3)", async () => {
    const rig = await startRig({
      onCardAction: async (data) => {
        const messageId = (data.context as { open_message_id: string }).open_message_id;
        await patchCard(rig.emulator, messageId, cards["progress-failed"]);
        return { response: { ...SUBMITTED, card: { type: "raw", data: cards["progress-completed"] } } };
      },
    });
    const cardId = await botCard(rig.emulator, LOCAL_GROUP_CHAT_ID, cards["progress-running"]);
    const body = (await (
      await rig.post("/console/api/actions", {
        messageId: cardId,
        userId: ALICE.openId,
        value: { kind: "x" },
      })
    ).json()) as { card: string; revertedUpdates: number };
    expect(body).toMatchObject({ card: "applied", revertedUpdates: 1 });
    // The PATCH was made (and counted), then undone: every member sees the card from before the click,
    // the clicker the answer's.
    const message = rig.emulator.messages.getMessage(cardId);
    expect(message?.patches).toBe(1);
    expect(JSON.parse(message?.content ?? "")).toEqual(cards["progress-running"]);
    expect(JSON.parse(rig.emulator.messages.contentFor(cardId, ALICE.openId) ?? "")).toEqual(
      cards["progress-completed"],
    );
  });

  it("shows a callback's card to the clicker alone, in the API too, until the next PATCH", async () => {
    const rig = await startRig({
      onCardAction: async () => ({
        response: { ...SUBMITTED, card: { type: "raw", data: cards["progress-cancelled"] } },
      }),
    });
    const cardId = await botCard(rig.emulator, LOCAL_GROUP_CHAT_ID, cards["progress-running"]);
    await rig.post("/console/api/actions", { messageId: cardId, userId: ALICE.openId, value: { kind: "x" } });
    const seen = async (userId: string) => {
      const { messages } = (await (
        await rig.get(`/console/api/chats/${LOCAL_GROUP_CHAT_ID}/messages?userId=${userId}`)
      ).json()) as { messages: { messageId: string; card: unknown }[] };
      return messages.find((m) => m.messageId === cardId)?.card;
    };
    expect(await seen(ALICE.openId)).toEqual(cards["progress-cancelled"]);
    expect(await seen(BOB.openId)).toEqual(cards["progress-running"]);
    await patchCard(rig.emulator, cardId, cards["progress-cancelled"]);
    expect(await seen(BOB.openId)).toEqual(cards["progress-cancelled"]);
    expect(rig.emulator.messages.getMessage(cardId)?.views).toBeUndefined();
  });

  it("turns an unreachable bot into the client's error toast", async () => {
    const rig = await startRig();
    const cardId = await botCard(rig.emulator, ALICE_CHAT, cards["progress-running"]);
    rig.pointBotAt("http://127.0.0.1:9/feishu/events");
    const body = (await (
      await rig.post("/console/api/actions", { messageId: cardId, userId: ALICE.openId, value: {} })
    ).json()) as { toast: { type: string; content: string }; card: string };
    expect(body.toast.type).toBe("error");
    expect(body.toast.content).toContain("200341");
  });

  it("clicks as a client in the console's language: the toast is that language's, the callback the same", async () => {
    const toast = { type: "success", content: "已提交", i18n: { zh_cn: "已提交", en_us: "Submitted" } };
    const rig = await startRig({ onCardAction: () => Promise.resolve({ response: { toast } }) });
    const cardId = await botCard(rig.emulator, ALICE_CHAT, cards["progress-running"]);
    const click = async (locale?: string) =>
      (await (
        await rig.post("/console/api/actions", {
          messageId: cardId,
          userId: ALICE.openId,
          value: { kind: "progress" },
          ...(locale ? { locale } : {}),
        })
      ).json()) as { toast: unknown };
    expect((await click("en_us")).toast).toEqual({ type: "success", content: "Submitted" });
    expect((await click()).toast).toEqual({ type: "success", content: "已提交" });
    // As on Feishu, the callback does not say the client's language (feishu-platform §2.1).
    expect(rig.actions.map((data) => "locale" in data)).toEqual([false, false]);
    const refused = await rig.post("/console/api/actions", {
      messageId: cardId,
      userId: ALICE.openId,
      value: {},
      locale: "klingon",
    });
    expect(refused.status).toBe(400);
  });
});

describe("console API: bad input", () => {
  it.each([
    ["no text", { chatId: ALICE_CHAT, userId: ALICE.openId }, "body.text"],
    ["blank text", { chatId: ALICE_CHAT, userId: ALICE.openId, text: "   " }, "body.text"],
    ["unknown user", { chatId: ALICE_CHAT, userId: "ou_mallory", text: "hi" }, "body.userId"],
    ["an extra field", { chatId: ALICE_CHAT, userId: ALICE.openId, text: "hi", sender: "x" }, "sender"],
    ["an array", [], "body"],
    ["not JSON", "{nope", "not valid JSON"],
    [
      "inThread without replyTo",
      { chatId: LOCAL_GROUP_CHAT_ID, userId: ALICE.openId, text: "hi", inThread: true },
      "replyTo",
    ],
  ])("refuses a message with %s", async (_what, body, mentioned) => {
    const rig = await startRig();
    const response = await rig.post("/console/api/messages", body);
    expect(response.status).toBe(400);
    const error = ((await response.json()) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe("INVALID_INPUT");
    expect(error.message).toContain(mentioned);
    expect(rig.messages).toHaveLength(0);
  });

  it("refuses bad actions with 400 or 404 and never reaches the bot", async () => {
    const rig = await startRig();
    const cardId = await botCard(rig.emulator, ALICE_CHAT, cards["progress-running"]);
    const text = (await (
      await rig.post("/console/api/messages", { chatId: ALICE_CHAT, userId: ALICE.openId, text: "hi" })
    ).json()) as { messageId: string };
    const cases: [unknown, number][] = [
      [{ userId: ALICE.openId, value: {} }, 400],
      [{ messageId: cardId, userId: ALICE.openId, value: "submit" }, 400],
      [{ messageId: cardId, userId: ALICE.openId, formValue: { q: 1 } }, 400],
      [{ messageId: cardId, userId: ALICE.openId, formValue: { q: [1] } }, 400],
      [{ messageId: "om_missing", userId: ALICE.openId, value: {} }, 404],
      [{ messageId: text.messageId, userId: ALICE.openId, value: {} }, 400],
    ];
    for (const [body, status] of cases) {
      const response = await rig.post("/console/api/actions", body);
      expect(response.status, JSON.stringify(body)).toBe(status);
      expect(((await response.json()) as { error: { message: string } }).error.message).not.toBe("");
    }
    expect((await rig.get("/console/api/messages?chatId=")).status).toBe(400);
    expect((await rig.get("/console/api/nope")).status).toBe(404);
    expect(rig.actions).toHaveLength(0);
  });
});

describe("console API: live events", () => {
  it("streams patched messages and every Open API call as Server-Sent Events", async () => {
    const rig = await startRig();
    const cardId = await botCard(rig.emulator, ALICE_CHAT, cards["progress-running"]);
    const stream = await openStream(rig.url);
    expect(stream.response.headers.get("content-type")).toContain("text/event-stream");

    expect((await patchCard(rig.emulator, cardId, cards["progress-one-form"])).code).toBe(0);
    const updated = await stream.next(
      (event) => event.type === "message" && event.change === "patched",
      "the patched card",
    );
    expect(updated).toMatchObject({
      type: "message",
      change: "patched",
      via: "patch",
      message: {
        messageId: cardId,
        chatId: ALICE_CHAT,
        card: cards["progress-one-form"],
        patches: 1,
        rev: 2,
      },
    });
    const call = await stream.next(
      (event) => event.type === "log" && event.entry.kind === "call" && event.entry.method === "PATCH",
      "the PATCH in the log",
    );
    expect(call).toMatchObject({
      entry: {
        kind: "call",
        path: `/open-apis/im/v1/messages/${cardId}`,
        status: 200,
        code: 0,
        messageId: cardId,
      },
    });

    await rig.post("/console/api/actions", { messageId: cardId, userId: ALICE.openId, value: { kind: "x" } });
    await stream.next(
      (event) => event.type === "message" && event.via === "callback" && event.message.messageId === cardId,
      "the callback's card",
    );
    await stream.next(
      (event) => event.type === "log" && event.entry.kind === "callback",
      "the callback entry",
    );
  });

  it("keeps the log of calls so far, with rate-limit codes", async () => {
    const rig = await startRig();
    const cardId = await botCard(rig.emulator, ALICE_CHAT, cards["progress-running"]);
    rig.emulator.injectFault({
      match: { method: "PATCH" },
      times: 1,
      response: { httpStatus: 400, code: 230020, msg: "This operation triggers the frequency limit" },
    });
    expect((await patchCard(rig.emulator, cardId, cards["progress-one-form"])).code).toBe(230020);
    const log = (await (await rig.get("/console/api/calls")).json()) as { entries: LogEntry[] };
    expect(
      log.entries.map((entry) => entry.kind === "call" && `${entry.method} ${entry.status} ${entry.code}`),
    ).toEqual(["POST 200 0", "POST 200 0", "POST 200 0", "PATCH 400 230020"]);
    expect(log.entries.map((entry) => entry.seq)).toEqual([1, 2, 3, 4]);
  });
});

describe("console page and assets", () => {
  it("redirects / to the page, which loads only its own assets", async () => {
    const rig = await startRig();
    const root = await fetch(`${rig.url}/`, { redirect: "manual" });
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("/console");

    const page = await rig.get("/console");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
    const html = await page.text();
    const references = [...html.matchAll(/\s(?:src|href)="([^"]+)"/g)].map((m) => m[1] ?? "");
    expect(references.length).toBeGreaterThanOrEqual(3);
    for (const reference of references)
      expect(reference).toMatch(/^\/console\/assets\/[a-z-]+\.(js|css|svg)$/);
    for (const testid of [
      "user-switcher",
      "chat-list",
      "message-list",
      "composer-input",
      "mention-bot",
      "toasts",
      "call-log",
    ])
      expect(html).toContain(`data-testid="${testid}"`);
  });

  it("serves the page's scripts (its TypeScript bundled) and every other asset with its content type", async () => {
    const rig = await startRig();
    const types = { js: "text/javascript", css: "text/css", svg: "image/svg+xml" } as const;
    const html = fs.readFileSync(path.join(PUBLIC_DIR, "index.html"), "utf8");
    const scripts = [...html.matchAll(/<script[^>]*\bsrc="\/console\/assets\/([^"]+)"/g)].map(
      (m) => m[1] ?? "",
    );
    expect(scripts).toEqual(["console.js", "agent-panel.js"]);
    const assets = [
      ...scripts,
      ...fs.readdirSync(PUBLIC_DIR).filter((file) => /^[a-z-]+\.(css|svg)$/.test(file)),
    ];
    expect(assets).toEqual(expect.arrayContaining(["console.css", "favicon.svg"]));
    for (const file of assets) {
      const response = await rig.get(`/console/assets/${file}`);
      expect(response.status, file).toBe(200);
      expect(response.headers.get("content-type")).toContain(
        types[file.split(".").pop() as keyof typeof types],
      );
      // A bundled library's licence block (/*! … */) may name its homepage; it loads nothing from there.
      const text = (await response.text()).replace(/\/\*![\s\S]*?\*\//g, "");
      if (file.endsWith(".svg")) continue;
      // The SVG namespace (icons.ts builds <svg> with createElementNS) is a name, never fetched.
      const fetchable = text.replaceAll('"http://www.w3.org/2000/svg"', '""');
      expect(fetchable, `${file} names no other origin`).not.toMatch(/\bhttps?:\/\/[a-z0-9]/i);
      if (file.endsWith(".css")) expect(text).not.toMatch(/@import|\burl\(/i);
      // One self-contained module per script: nothing left for the browser to import.
      if (file.endsWith(".js")) expect(text).not.toMatch(/^\s*import\b|\bimport\(\s*["']/m);
    }
    // The console's cards renderer is inside console.js, typed source gone.
    const bundle = await (await rig.get("/console/assets/console.js")).text();
    expect(bundle).toContain("renderCard");
    expect(bundle).not.toMatch(/\binterface ConsoleMessage\b/);
    for (const missing of ["nope.js", "cards.js", "cards.ts", "markdown-it.js", "..%2Fapi.ts", "index.html"])
      expect((await rig.get(`/console/assets/${missing}`)).status, missing).toBe(404);
  });
});

describe("cards: pure parts (card-values.ts)", () => {
  it("reads a bilingual card in the console's language, leaving callback values alone", () => {
    const card = cards["en-progress-one-form"];
    const chinese = JSON.stringify(localizeCard(card, "zh_cn"));
    expect(chinese).toContain("取消任务");
    expect(chinese).not.toContain("Cancel task");
    expect(chinese).not.toContain("i18n_content");
    const english = JSON.stringify(localizeCard(card, "en_us"));
    expect(english).toContain("Cancel task");
    expect(english).not.toContain("取消任务");
    // A language the card lacks reads `content`, the bot's.
    expect(localizeCard(card, "ja_jp")).toEqual(localizeCard(card, "en_us"));
    const values = (c: unknown) => JSON.stringify(c).match(/"value":\{[^}]*\}/g);
    expect(values(localizeCard(card, "zh_cn"))).toEqual(values(card));
  });

  it("escapes everything in markdown that it does not render itself", () => {
    const html = markdownToHtml(
      '<script>alert(1)</script> <img src=x onerror="alert(1)"> [a](javascript:alert(1)) **b** & "c"',
    );
    expect(html).not.toMatch(/<script|<img|href="javascript/i);
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(html).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
    expect(html).toContain("<strong>b</strong> &amp; &quot;c&quot;");
    // markdown-it percent-encodes the quote in a URL and escapes the `&`: neither can leave the attribute.
    expect(markdownToHtml('[x](https://example.com/?a=1&b="2")')).toBe(
      '<p class="md-p"><a class="md-link" href="https://example.com/?a=1&amp;b=%222%22" target="_blank" rel="noopener noreferrer">x</a></p>',
    );
  });

  it("renders headings, line breaks, lists, inline code, code blocks and quotes as Feishu does", () => {
    expect(markdownToHtml("## 标题\n**步骤**\n✅ 扫描工作区\n⏳ 等待")).toBe(
      '<h2 class="md-h">标题</h2><p class="md-p"><strong>步骤</strong><br>✅ 扫描工作区<br>⏳ 等待</p>',
    );
    expect(markdownToHtml("- **Docker**: 用 `npm ci`\n  - 子项\n- *K8s*")).toBe(
      '<ul class="md-list"><li><strong>Docker</strong>: 用 <code class="md-inline-code">npm ci</code>' +
        '<ul class="md-list"><li>子项</li></ul></li><li><em>K8s</em></li></ul>',
    );
    expect(markdownToHtml("1. a\n2. b")).toBe('<ol class="md-list"><li>a</li><li>b</li></ol>');
    expect(markdownToHtml('```yaml\nkind: "<Deployment>"\n**not bold**\n```')).toBe(
      '<pre class="md-code" data-lang="yaml"><code>kind: &quot;&lt;Deployment&gt;&quot;\n**not bold**</code></pre>',
    );
    expect(markdownToHtml("> 再跑一遍测试\n\n已开始执行")).toBe(
      '<blockquote class="md-quote"><p class="md-p">再跑一遍测试</p></blockquote><p class="md-p">已开始执行</p>',
    );
    expect(markdownToHtml("2 * 3 * 4 and a_b_c")).toBe('<p class="md-p">2 * 3 * 4 and a_b_c</p>');
  });

  it("renders every golden card's markdown without letting a tag through", () => {
    const contents: string[] = [];
    const visit = (node: unknown): void => {
      if (Array.isArray(node)) return node.forEach(visit);
      if (typeof node !== "object" || node === null) return;
      const record = node as Record<string, unknown>;
      if (record.tag === "markdown" && typeof record.content === "string") contents.push(record.content);
      Object.values(record).forEach(visit);
    };
    visit(Object.values(cards));
    expect(contents.length).toBeGreaterThan(10);
    for (const content of contents) {
      const html = markdownToHtml(content);
      const tags = [...html.matchAll(/<\/?([a-z0-9]+)/g)].map((m) => m[1]);
      expect(new Set(tags)).toSatisfy((set: Set<string>) =>
        [...set].every((tag) =>
          [
            "p",
            "br",
            "strong",
            "em",
            "del",
            "code",
            "pre",
            "ul",
            "ol",
            "li",
            "blockquote",
            "h1",
            "h2",
            "h3",
            "hr",
            "a",
          ].includes(tag),
        ),
      );
    }
  });

  it("collects form_value as Feishu sends it: option value, array of values, text; empty fields left out", () => {
    const fields = [
      { tag: "select_static", name: "ask0_q0", value: "1" },
      { tag: "multi_select_static", name: "ask0_q1", values: ["0", "2"] },
      { tag: "input", name: "ask0_c0", value: "自定义" },
      { tag: "select_static", name: "ask1_q0", value: "" },
      { tag: "multi_select_static", name: "ask1_q1", values: [] },
      { tag: "input", name: "ask1_c0", value: "" },
    ];
    expect(collectFormValue(fields)).toEqual({ ask0_q0: "1", ask0_q1: ["0", "2"], ask0_c0: "自定义" });
    expect(missingRequired(fields)).toEqual([]);
    expect(missingRequired([{ tag: "input", name: "must", value: "", required: true }])).toEqual(["must"]);
  });

  it("sends a button's callback value and name, and opens only web links", () => {
    const form = cards["progress-one-form"]?.body.elements.find((node) => node.tag === "form");
    const submit = form?.tag === "form" ? form.elements.find((node) => node.tag === "button") : undefined;
    expect(buttonAction(submit, { ask0_q0: "0" })).toEqual({
      value: {
        kind: "feishu_ask",
        act: "submit",
        sessionId: expect.any(String),
        requestId: "req_0001",
        sender: "ou_alice",
      },
      name: "ask0_submit",
      formValue: { ask0_q0: "0" },
    });
    expect(
      buttonAction({ tag: "button", behaviors: [{ type: "open_url", default_url: "https://x.y" }] }),
    ).toEqual({});
    expect(safeUrl("https://example.com/a")).toBe("https://example.com/a");
    expect(safeUrl("javascript:alert(1)")).toBeUndefined();
    expect(cardPreview(cards["progress-stacked-forms"])).toBe("[卡片] 等待你回答 2 个问题");
  });
});

describe("console: composing and showing messages", () => {
  const bot = { openId: "ou_bot", name: "Progress Bot" };
  const compose = (text: string) => composeText(text, { bot, users: LOCAL_USERS });

  it("turns typed mentions into placeholders, the bot's first", () => {
    expect(compose("@bot 部署")).toMatchObject({ text: "@_user_1 部署", mentionBot: true, users: [] });
    expect(compose("@Progress Bot 部署").text).toBe("@_user_1 部署");
    expect(compose("请 @Bob 看看,@机器人 部署").text).toBe("请 @_user_2 看看,@_user_1 部署");
    expect(compose("@Carol 你好")).toMatchObject({ text: "@_user_1 你好", mentionBot: false });
    expect(compose("@other 你好")).toMatchObject({ text: "@_user_1 @other 你好", mentionBot: true });
    expect(compose("mail me@bot.example")).toMatchObject({ text: "mail me@bot.example", mentionBot: false });
    expect(compose("@bot")).toMatchObject({ text: "@_user_1", mentionBot: true });
  });

  it("splits text into mentions: user placeholders and the bot's <at> tags", () => {
    const directory = {
      botName: "Progress Bot",
      nameOf: (id: string) => (id === ALICE.openId ? "Alice" : undefined),
    };
    expect(textSegments(`<at user_id="${ALICE.openId}"></at> 有 1 个问题等你回答`, [], directory)).toEqual([
      { type: "at", openId: ALICE.openId, name: "Alice" },
      { type: "text", text: " 有 1 个问题等你回答" },
    ]);
    expect(
      textSegments(
        "@_user_1 hi @_user_9",
        [{ key: "@_user_1", openId: "ou_bot", name: "Progress Bot" }],
        directory,
      ),
    ).toEqual([
      { type: "at", openId: "ou_bot", name: "Progress Bot" },
      { type: "text", text: " hi @_user_9" },
    ]);
  });

  it("finds the clicked button's text by name or by callback value", () => {
    const card = cards["progress-one-form"];
    expect(buttonLabel(card, { name: "ask0_submit" })).toBe("提交");
    const cancel = JSON.stringify(card).match(/"value":(\{"kind":"progress","act":"cancel"[^}]*\})/)?.[1];
    expect(buttonLabel(card, { value: JSON.parse(cancel ?? "{}") })).toBe("取消任务");
    expect(buttonLabel(card, { name: "nope" })).toBeUndefined();
  });
});

describe("emulator.applyCallbackCard", () => {
  it("applies a valid card as a callback update, not as a PATCH", async () => {
    const rig = await startRig();
    const cardId = await botCard(rig.emulator, ALICE_CHAT, cards["progress-running"]);
    const seen: string[] = [];
    rig.emulator.on("message_patched", ({ via }) => seen.push(via));
    const result = rig.emulator.applyCallbackCard(cardId, cards["progress-cancelled"], ALICE.openId);
    expect(result).toMatchObject({ ok: true, message: { messageId: cardId, patches: 0 } });
    expect(seen).toEqual(["callback"]);
    expect(rig.emulator.callsTo("PATCH", "/")).toHaveLength(0);
  });

  it("refuses what the Feishu client refuses: 1.0 cards, broken cards, recalled messages", async () => {
    const rig = await startRig();
    const cardId = await botCard(rig.emulator, ALICE_CHAT, cards["progress-running"]);
    expect(rig.emulator.applyCallbackCard(cardId, { elements: [] }, ALICE.openId)).toMatchObject({
      ok: false,
      code: 200830,
    });
    expect(
      rig.emulator.applyCallbackCard(
        cardId,
        {
          ...cards["progress-running"],
          body: { elements: [{ tag: "blink" }] },
        },
        ALICE.openId,
      ),
    ).toMatchObject({ ok: false, code: 200673 });
    rig.emulator.recall(cardId);
    expect(rig.emulator.applyCallbackCard(cardId, cards["progress-running"], ALICE.openId)).toMatchObject({
      ok: false,
      code: 230011,
    });
    expect(() =>
      rig.emulator.applyCallbackCard("om_missing", cards["progress-running"], ALICE.openId),
    ).toThrow(/unknown message/);
  });
});
