import { createDecipheriv, createHash } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import * as lark from "@larksuiteoapi/node-sdk";
import express from "express";
import { afterEach, describe, expect, it } from "vitest";
import { exampleCards } from "../src/cards/examples.ts";
import {
  decryptBody,
  type Emulator,
  type EmulatorOptions,
  encryptBody,
  signBody,
  startEmulator,
  urlVerification,
} from "../src/local/emulator/index.ts";

/** A fixed base time: the emulator clock only moves when a test advances it. */
const T0 = Date.UTC(2026, 10, 30, 2, 0, 0);
const DAY_MS = 86_400_000;
const quiet = { error() {}, warn() {}, info() {}, debug() {}, trace() {} };

const running: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((item) => item.close()));
});

async function emulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const emu = await startEmulator({ now: () => T0, ...options });
  running.push(emu);
  return emu;
}

/** The real SDK, as the product builds it; each client gets its own token cache. */
function sdk(emu: Emulator, appSecret = emu.appSecret): lark.Client {
  return new lark.Client({
    appId: emu.appId,
    appSecret,
    domain: emu.url,
    cache: new lark.DefaultCache(),
    loggerLevel: lark.LoggerLevel.error,
    logger: quiet,
  });
}

interface HttpFailure {
  isAxiosError: boolean;
  response: {
    status: number;
    data: { code?: number; msg?: string } | string;
    headers: Record<string, string>;
  };
}

async function rejection(promise: Promise<unknown>): Promise<HttpFailure> {
  try {
    await promise;
  } catch (error) {
    return error as HttpFailure;
  }
  throw new Error("expected the call to reject");
}

async function failure(
  promise: Promise<unknown>,
): Promise<{ status: number; code: number | undefined; msg: string }> {
  const error = await rejection(promise);
  expect(error.isAxiosError).toBe(true);
  const data = error.response.data;
  return typeof data === "string"
    ? { status: error.response.status, code: undefined, msg: data }
    : { status: error.response.status, code: data.code, msg: data.msg ?? "" };
}

/** Valid 2.0 cards from the product's own builder (the golden examples). */
const card = (name = "progress-running") => exampleCards()[name]!;
const cardContent = (name?: string) => JSON.stringify(card(name));

async function sendCard(client: lark.Client, content = cardContent(), chatId = "oc_chat1") {
  const res = await client.im.message.create({
    params: { receive_id_type: "chat_id" },
    data: { receive_id: chatId, msg_type: "interactive", content },
  });
  expect(res.code).toBe(0);
  return res.data!.message_id!;
}

const patch = (client: lark.Client, messageId: string, content = cardContent("progress-one-form")) =>
  client.im.message.patch({ path: { message_id: messageId }, data: { content } });

describe("emulator: auth and bot info through the SDK", () => {
  it("issues a tenant token, serves bot info, and records the calls", async () => {
    const emu = await emulator();
    const live: string[] = [];
    emu.on("call", (call) => live.push(`${call.method} ${call.status}`));
    const info = await sdk(emu).request({ method: "GET", url: "/open-apis/bot/v3/info" });
    expect(info).toMatchObject({
      code: 0,
      bot: { open_id: emu.botOpenId, app_name: "Progress Bot", activate_status: 2 },
    });
    expect(emu.calls.map((call) => [call.method, call.path, call.status, call.code])).toEqual([
      ["POST", "/open-apis/auth/v3/tenant_access_token/internal", 200, 0],
      ["GET", "/open-apis/bot/v3/info", 200, 0],
    ]);
    expect(emu.calls[0]!.at).toBe(T0);
    expect(live).toEqual(["POST 200", "GET 200"]);
  });

  it("answers the token endpoint flat, reuses a token with ≥30 min left, and rejects a wrong secret", async () => {
    const emu = await emulator();
    const ask = (secret: string) =>
      fetch(`${emu.url}/open-apis/auth/v3/tenant_access_token/internal`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ app_id: emu.appId, app_secret: secret }),
      });
    const first = (await (await ask(emu.appSecret)).json()) as Record<string, unknown>;
    expect(first).toMatchObject({ code: 0, msg: "ok", expire: 7200 });
    expect(String(first.tenant_access_token)).toMatch(/^t-/);
    emu.clock.advance(60 * 60_000);
    expect(await (await ask(emu.appSecret)).json()).toMatchObject({
      tenant_access_token: first.tenant_access_token,
      expire: 3600,
    });
    emu.clock.advance(45 * 60_000);
    const renewed = (await (await ask(emu.appSecret)).json()) as Record<string, unknown>;
    expect(renewed.tenant_access_token).not.toBe(first.tenant_access_token);

    const wrong = await ask("nope");
    expect(wrong.status).toBe(400);
    expect(await wrong.json()).toMatchObject({ code: 10014 });
    expect(
      await failure(sdk(emu, "nope").request({ method: "GET", url: "/open-apis/bot/v3/info" })),
    ).toMatchObject({ status: 400, code: 10014 });
  });

  it("requires a live tenant token on every other endpoint", async () => {
    const emu = await emulator();
    const missing = await fetch(`${emu.url}/open-apis/bot/v3/info`);
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ code: 99991661 });
    const bogus = await fetch(`${emu.url}/open-apis/bot/v3/info`, {
      headers: { authorization: "Bearer t-nope" },
    });
    expect(await bogus.json()).toMatchObject({ code: 99991663 });
  });

  it("expireTokens: the SDK keeps its cached token and fails with 99991663 until its cache is fresh", async () => {
    const emu = await emulator();
    const client = sdk(emu);
    await client.request({ method: "GET", url: "/open-apis/bot/v3/info" });
    emu.expireTokens();
    expect(await failure(client.request({ method: "GET", url: "/open-apis/bot/v3/info" }))).toMatchObject({
      status: 400,
      code: 99991663,
    });
    // SDK 1.74 does not refetch on 99991663: no second token request happened.
    expect(emu.callsTo("POST", "/open-apis/auth/v3/tenant_access_token")).toHaveLength(1);
    const info = await sdk(emu).request({ method: "GET", url: "/open-apis/bot/v3/info" });
    expect(info.code).toBe(0);
    expect(emu.callsTo("POST", "/open-apis/auth/v3/tenant_access_token")).toHaveLength(2);
  });
});

describe("emulator: messages", () => {
  it("creates, replies, patches and gets a card, and tells listeners", async () => {
    const emu = await emulator();
    const client = sdk(emu);
    const seen: string[] = [];
    emu.on("message_created", (message) => seen.push(`created ${message.msgType}`));
    emu.on("message_patched", ({ message, via }) => seen.push(`patched ${message.patches} via ${via}`));

    const created = await client.im.message.create({
      params: { receive_id_type: "chat_id" },
      data: { receive_id: "oc_chat1", msg_type: "interactive", content: cardContent() },
    });
    expect(created.data).toMatchObject({
      chat_id: "oc_chat1",
      msg_type: "interactive",
      create_time: String(T0),
      body: { content: cardContent() },
      sender: { id: emu.appId, sender_type: "app" },
    });
    const id = created.data!.message_id!;
    expect(id).toMatch(/^om_/);

    const reply = await client.im.message.reply({
      path: { message_id: id },
      data: { msg_type: "text", content: JSON.stringify({ text: "done" }), reply_in_thread: true },
    });
    expect(reply.data).toMatchObject({ parent_id: id, root_id: id, chat_id: "oc_chat1" });
    expect(reply.data!.thread_id).toMatch(/^omt_/);

    emu.clock.advance(5_000);
    expect((await patch(client, id)).code).toBe(0);
    expect(emu.messages.getMessage(id)).toMatchObject({
      content: cardContent("progress-one-form"),
      patches: 1,
      createdAt: T0,
      updatedAt: T0 + 5_000,
      recalled: false,
      senderType: "app",
    });

    const stub = await client.im.message.get({ path: { message_id: id } });
    expect(stub.data!.items![0]!.body!.content).toContain("请升级至最新版本客户端");
    const full = await client.im.message.get({
      path: { message_id: id },
      params: { card_msg_content_type: "user_card_content" },
    });
    expect(JSON.parse(full.data!.items![0]!.body!.content)).toEqual(card("progress-one-form"));
    expect(full.data!.items![0]).toMatchObject({ updated: true, deleted: false });

    expect(seen).toEqual(["created interactive", "created text", "patched 1 via patch"]);
    expect(emu.messages.listMessages("oc_chat1")).toHaveLength(2);
    expect(emu.callsTo("PATCH", /^\/open-apis\/im\/v1\/messages\/om_/)).toMatchObject([
      { messageId: id, code: 0 },
    ]);
  });

  it("sends to an open_id in its p2p chat and dedupes a uuid for an hour", async () => {
    const emu = await emulator();
    const client = sdk(emu);
    const send = () =>
      client.im.message.create({
        params: { receive_id_type: "open_id" },
        data: {
          receive_id: "ou_alice",
          msg_type: "text",
          content: JSON.stringify({ text: "hi" }),
          uuid: "u-1",
        },
      });
    const first = await send();
    expect(first.data!.chat_id).toBe("oc_p2p_ou_alice");
    expect((await send()).data!.message_id).toBe(first.data!.message_id);
    expect(emu.messages.listMessages()).toHaveLength(1);
    emu.clock.advance(60 * 60_000);
    const later = await sdk(emu).im.message.create({
      params: { receive_id_type: "open_id" },
      data: {
        receive_id: "ou_alice",
        msg_type: "text",
        content: JSON.stringify({ text: "hi" }),
        uuid: "u-1",
      },
    });
    expect(later.data!.message_id).not.toBe(first.data!.message_id);
  });

  it("rejects the 6th PATCH of one message within a second (400 / 230020) but not another message", async () => {
    const emu = await emulator();
    const client = sdk(emu);
    const a = await sendCard(client);
    const b = await sendCard(client);
    for (let i = 0; i < 5; i += 1) await patch(client, a);
    expect(await failure(patch(client, a))).toMatchObject({ status: 400, code: 230020 });
    expect((await patch(client, b)).code).toBe(0);
    emu.clock.advance(1_000);
    expect((await patch(client, a)).code).toBe(0);
    expect(emu.messages.getMessage(a)!.patches).toBe(6);
  });

  it("slides the per-message window on the emulator clock", async () => {
    const emu = await emulator({ perMessagePatchPerSecond: 3 });
    const client = sdk(emu);
    const id = await sendCard(client);
    await patch(client, id);
    emu.clock.advance(600);
    await patch(client, id);
    await patch(client, id);
    emu.clock.advance(300);
    expect((await failure(patch(client, id))).code).toBe(230020);
    emu.clock.advance(101); // the first PATCH is now 1001 ms old
    expect((await patch(client, id)).code).toBe(0);
  });

  it("limits the app to 50 calls in a sliding second with HTTP 429 and x-ogw-ratelimit-reset", async () => {
    const emu = await emulator();
    const client = sdk(emu);
    const info = () => client.request({ method: "GET", url: "/open-apis/bot/v3/info" });
    await Promise.all(Array.from({ length: 50 }, info));
    const error = await rejection(info());
    expect(error.response.status).toBe(429);
    expect(error.response.data).toMatchObject({ code: 99991400 });
    expect(Number(error.response.headers["x-ogw-ratelimit-reset"])).toBeGreaterThanOrEqual(1);
    emu.clock.advance(1_000);
    expect((await info()).code).toBe(0);
  });

  it("checks card content on send, reply and PATCH: 30 KB (230025) and the card rules (230099)", async () => {
    const emu = await emulator();
    const client = sdk(emu);
    const id = await sendCard(client);
    const big = card();
    big.body.elements.push({ tag: "markdown", content: "x".repeat(31 * 1024) });
    expect(await failure(sendCard(client, JSON.stringify(big)))).toMatchObject({ status: 400, code: 230025 });
    expect((await failure(patch(client, id, JSON.stringify(big)))).code).toBe(230025);

    const unknownProperty = { ...card(), body: { ...card().body, bogus: true } };
    const rejected = await failure(patch(client, id, JSON.stringify(unknownProperty)));
    expect(rejected).toMatchObject({ status: 400, code: 230099 });
    expect(rejected.msg).toContain("ErrCode: 200621");
    expect(rejected.msg).toContain("bogus");

    const form = card("progress-one-form");
    const duplicated = { ...form, body: { elements: [...form.body.elements, ...form.body.elements] } };
    const duplicate = await failure(
      client.im.message.reply({
        path: { message_id: id },
        data: { msg_type: "interactive", content: JSON.stringify(duplicated) },
      }),
    );
    expect(duplicate.code).toBe(230099);
    expect(duplicate.msg).toMatch(/used 2 times/);

    expect((await failure(patch(client, id, "{not json"))).msg).toContain("ErrCode: 200621");
    expect(emu.messages.getMessage(id)!.patches).toBe(0);
    expect(emu.messages.listMessages()).toHaveLength(1);
  });

  it("refuses to PATCH after 14 days (230031) by the emulator clock", async () => {
    const emu = await emulator();
    const id = await sendCard(sdk(emu));
    emu.clock.advance(14 * DAY_MS + 1);
    // Two weeks also outlive the 2 h tenant token, so use a client with an empty token cache.
    expect(await failure(patch(sdk(emu), id))).toMatchObject({ status: 400, code: 230031 });
  });

  it("refuses replies, PATCHes and card updates on a recalled message (230011 / 200000)", async () => {
    const emu = await emulator();
    const client = sdk(emu);
    const id = await sendCard(client);
    const { event } = emu.cardAction({ messageId: id, operatorOpenId: "ou_alice" });
    const recalled: string[] = [];
    emu.on("message_recalled", (message) => recalled.push(message.messageId));
    emu.recall(id);
    expect(recalled).toEqual([id]);
    expect((await failure(patch(client, id))).code).toBe(230011);
    const reply = client.im.message.reply({
      path: { message_id: id },
      data: { msg_type: "text", content: JSON.stringify({ text: "hi" }) },
    });
    expect((await failure(reply)).code).toBe(230011);
    const update = client.request({
      method: "POST",
      url: "/open-apis/interactive/v1/card/update",
      data: { token: event.token, card: card() },
    });
    expect((await failure(update)).code).toBe(200000);
    const got = await client.im.message.get({ path: { message_id: id } });
    expect(got.data!.items![0]!.deleted).toBe(true);
  });

  it("answers an unknown message id with 230001", async () => {
    const emu = await emulator();
    expect(await failure(patch(sdk(emu), "om_unknown"))).toMatchObject({ status: 400, code: 230001 });
  });
});

describe("emulator: injected faults", () => {
  it("fails the next N matching calls with a Feishu code, then behaves again", async () => {
    const emu = await emulator();
    const client = sdk(emu);
    const fault = emu.injectFault({
      match: { method: "POST", path: "/open-apis/im/v1/messages" },
      times: 1,
      response: { httpStatus: 400, code: 230020, msg: "This operation triggers the frequency limit" },
    });
    expect(fault.remaining).toBe(1);
    expect((await failure(sendCard(client))).code).toBe(230020);
    expect(fault.remaining).toBe(0);
    await sendCard(client);
    expect(emu.callsTo("POST", "/open-apis/im/v1/messages").map((call) => call.code)).toEqual([230020, 0]);
  });

  it("fails with a bare 5xx and headers, or delays a call", async () => {
    const emu = await emulator();
    const client = sdk(emu);
    const id = await sendCard(client);
    emu.injectFault({
      match: { path: /^\/open-apis\/im\/v1\/messages\/om_/ },
      times: 1,
      response: { httpStatus: 503, headers: { "retry-after": "2" } },
    });
    const error = await rejection(patch(client, id));
    expect(error.response.status).toBe(503);
    expect(error.response.headers["retry-after"]).toBe("2");
    expect(error.response.data).toBe("injected fault");

    emu.injectFault({ match: { method: "PATCH" }, times: 1, response: { delayMs: 120 } });
    expect((await patch(client, id)).code).toBe(0);
    const last = emu.callsTo("PATCH", "/open-apis/im/v1/messages").at(-1)!;
    expect(last).toMatchObject({ status: 200, code: 0, messageId: id });
    expect(last.durationMs).toBeGreaterThanOrEqual(100);
  });

  it("refuses only calls whose body holds the text, when the fault matches on the body", async () => {
    const emu = await emulator();
    const client = sdk(emu);
    const id = await sendCard(client);
    emu.injectFault({
      match: { method: "PATCH", bodyIncludes: "Kubernetes" },
      times: 5,
      response: { httpStatus: 400, code: 230099, msg: "Failed to create card content" },
    });
    expect((await failure(patch(client, id))).code).toBe(230099);
    expect((await patch(client, id, cardContent())).code).toBe(0);
    expect(emu.callsTo("PATCH", "/open-apis/im/v1/messages").map((call) => call.code)).toEqual([230099, 0]);
  });
});

describe("emulator: card callbacks and delayed updates", () => {
  it("builds card.action.trigger with a c- token usable twice within 30 min", async () => {
    const emu = await emulator({ verificationToken: "vt-1" });
    const client = sdk(emu);
    const id = await sendCard(client, cardContent("progress-one-form"));
    const payload = emu.cardAction({
      messageId: id,
      operatorOpenId: "ou_alice",
      value: { kind: "answer" },
      formValue: { q1: "prod" },
      name: "submit_1",
    });
    expect(payload).toMatchObject({
      schema: "2.0",
      header: {
        event_type: "card.action.trigger",
        token: "vt-1",
        app_id: emu.appId,
        create_time: String(T0 * 1000),
      },
      event: {
        operator: { open_id: "ou_alice" },
        action: { value: { kind: "answer" }, tag: "button", name: "submit_1", form_value: { q1: "prod" } },
        context: { open_message_id: id, open_chat_id: "oc_chat1" },
      },
    });
    expect(payload.event.token).toMatch(/^c-/);

    const update = (token: string, body: unknown = card("progress-completed")) =>
      client.request({
        method: "POST",
        url: "/open-apis/interactive/v1/card/update",
        data: { token, card: body },
      });
    const invalid = { ...card(), extra: 1 };
    expect((await failure(update(payload.event.token, invalid))).code).toBe(230099); // does not use the token
    expect((await update(payload.event.token)).code).toBe(0);
    expect((await update(payload.event.token)).code).toBe(0);
    expect((await failure(update(payload.event.token))).code).toBe(300040);
    expect(emu.messages.getMessage(id)).toMatchObject({
      patches: 2,
      content: cardContent("progress-completed"),
    });

    const late = emu.cardAction({ messageId: id, operatorOpenId: "ou_alice" });
    expect(late.event.action).toEqual({ tag: "button" });
    emu.clock.advance(30 * 60_000 + 1);
    expect((await failure(update(late.event.token))).code).toBe(300030);
    expect((await failure(update("c-unknown"))).code).toBe(300020);
  });

  it("hands the SDK's EventDispatcher a callback it flattens with the update token", async () => {
    const emu = await emulator({ verificationToken: "vt-1" });
    const id = await sendCard(sdk(emu));
    const payload = emu.cardAction({ messageId: id, operatorOpenId: "ou_alice", value: { kind: "answer" } });
    let seen: Record<string, unknown> | undefined;
    const dispatcher = new lark.EventDispatcher({
      loggerLevel: lark.LoggerLevel.error,
      logger: quiet,
    }).register<{
      "card.action.trigger": (data: Record<string, unknown>) => Promise<object>;
    }>({
      "card.action.trigger": async (data) => {
        seen = data;
        return { toast: { type: "success", content: "ok" } };
      },
    });
    expect(await dispatcher.invoke(payload, { needCheck: false })).toEqual({
      toast: { type: "success", content: "ok" },
    });
    expect(seen).toMatchObject({ token: payload.event.token, context: { open_message_id: id } });
  });
});

describe("emulator: user messages and webhook delivery", () => {
  it("builds im.message.receive_v1 with mention placeholders and stores the message", async () => {
    const emu = await emulator({ verificationToken: "vt-1" });
    const payload = emu.userMessage({
      chatId: "oc_group1",
      chatType: "group",
      senderOpenId: "ou_alice",
      text: "hello",
      mentionBot: true,
      mentions: [{ openId: "ou_bob", name: "Bob" }],
    });
    expect(payload).toMatchObject({
      schema: "2.0",
      header: {
        event_type: "im.message.receive_v1",
        token: "vt-1",
        app_id: emu.appId,
        create_time: String(T0),
      },
      event: {
        sender: { sender_id: { open_id: "ou_alice" }, sender_type: "user" },
        message: {
          chat_id: "oc_group1",
          chat_type: "group",
          message_type: "text",
          content: JSON.stringify({ text: "@_user_1 @_user_2 hello" }),
          mentions: [
            { key: "@_user_1", id: { open_id: emu.botOpenId }, name: "Progress Bot" },
            { key: "@_user_2", id: { open_id: "ou_bob" }, name: "Bob" },
          ],
        },
      },
    });
    const messageId = payload.event.message.message_id;
    expect(emu.messages.getMessage(messageId)).toMatchObject({ senderType: "user", senderId: "ou_alice" });

    const reply = await sdk(emu).im.message.reply({
      path: { message_id: messageId },
      data: { msg_type: "text", content: JSON.stringify({ text: "on it" }) },
    });
    expect(reply.data).toMatchObject({ parent_id: messageId, chat_id: "oc_group1" });

    const p2p = emu.userMessage({
      chatType: "p2p",
      senderOpenId: "ou_alice",
      text: "hi",
      messageType: "image",
    });
    expect(p2p.event.message).toMatchObject({
      chat_id: "oc_p2p_ou_alice",
      chat_type: "p2p",
      message_type: "image",
    });
    expect(p2p.event.message.mentions).toBeUndefined();
    expect(JSON.parse(p2p.event.message.content).image_key).toMatch(/^img_/);
  });

  it("delivers an encrypted, signed body that a receiver can verify and decrypt", async () => {
    const encryptKey = "enc-key-1";
    const emu = await emulator({ encryptKey, verificationToken: "vt-1" });
    const received: { headers: Record<string, unknown>; raw: string }[] = [];
    const receiver = createServer((req, res) => {
      let raw = "";
      req.on("data", (chunk) => {
        raw += chunk;
      });
      req.on("end", () => {
        received.push({ headers: req.headers, raw });
        res.setHeader("content-type", "application/json");
        res.end("{}");
      });
    });
    const url = await listenOn(receiver);
    const payload = emu.userMessage({ chatType: "p2p", senderOpenId: "ou_alice", text: "hi" });

    const result = await emu.deliverWebhook(url, payload);
    expect(result).toMatchObject({ status: 200, body: {} });

    const { headers, raw } = received[0]!;
    const timestamp = String(headers["x-lark-request-timestamp"]);
    const nonce = String(headers["x-lark-request-nonce"]);
    expect(timestamp).toBe(String(Math.floor(T0 / 1000)));
    const expected = createHash("sha256")
      .update(timestamp + nonce + encryptKey + raw)
      .digest("hex");
    expect(headers["x-lark-signature"]).toBe(expected);

    const encrypted = Buffer.from((JSON.parse(raw) as { encrypt: string }).encrypt, "base64");
    const key = createHash("sha256").update(encryptKey).digest();
    const decipher = createDecipheriv("aes-256-cbc", key, encrypted.subarray(0, 16));
    const plain = Buffer.concat([decipher.update(encrypted.subarray(16)), decipher.final()]).toString("utf8");
    expect(JSON.parse(plain)).toEqual(payload);
  });

  it("is accepted by the SDK's EventDispatcher behind adaptExpress, and rejected when tampered", async () => {
    const encryptKey = "enc-key-2";
    const emu = await emulator({ encryptKey, verificationToken: "vt-2" });
    const events: Record<string, unknown>[] = [];
    const dispatcher = new lark.EventDispatcher({
      encryptKey,
      verificationToken: "vt-2",
      loggerLevel: lark.LoggerLevel.error,
      logger: quiet,
    }).register({
      "im.message.receive_v1": async (data) => {
        events.push(data as unknown as Record<string, unknown>);
        return {};
      },
    });
    const app = express();
    app.post("/webhook", express.json(), lark.adaptExpress(dispatcher, { autoChallenge: true }));
    const url = `${await listenOn(createServer(app))}/webhook`;

    expect(await emu.deliverWebhook(url, emu.urlVerification("ch-1"))).toMatchObject({
      status: 200,
      body: { challenge: "ch-1" },
    });

    const payload = emu.userMessage({
      chatType: "group",
      chatId: "oc_g",
      senderOpenId: "ou_alice",
      text: "go",
    });
    expect(await emu.deliverWebhook(url, payload)).toMatchObject({ status: 200, body: {} });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      event_type: "im.message.receive_v1",
      token: "vt-2",
      message: { message_id: payload.event.message.message_id, chat_id: "oc_g" },
    });

    // The same body with a signature made for another key: the SDK drops it (empty 200).
    const raw = JSON.stringify({ encrypt: encryptBody(encryptKey, payload) });
    const forged = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-lark-request-timestamp": "1",
        "x-lark-request-nonce": "n",
        "x-lark-signature": signBody("other-key", "1", "n", raw),
      },
      body: raw,
    });
    expect(forged.status).toBe(200);
    expect(await forged.text()).toBe("");
    expect(events).toHaveLength(1);
  });

  it("exports pure crypto helpers that round-trip", () => {
    const sealed = encryptBody("k", { a: 1 });
    expect(JSON.parse(decryptBody("k", sealed))).toEqual({ a: 1 });
    expect(signBody("k", "1", "n", "{}")).toBe(createHash("sha256").update("1nk{}").digest("hex"));
    expect(urlVerification("c")).toEqual({ challenge: "c", token: "", type: "url_verification" });
  });
});

async function listenOn(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  running.push({
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
