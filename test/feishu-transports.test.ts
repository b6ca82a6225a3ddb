import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { afterEach, describe, expect, it, vi } from "vitest";
import { exampleCards } from "../src/cards/examples.ts";
import { ConfigError } from "../src/errors.ts";
import { createLarkMessenger } from "../src/feishu/lark-messenger.ts";
import { createEventDispatcher, startLongConnection } from "../src/feishu/long-connection.ts";
import { DEFAULT_SETTLE_MS, type FeishuEventHandlers } from "../src/feishu/transport.ts";
import { FEISHU_WEBHOOK_PATH, mountFeishuWebhook } from "../src/feishu/webhook.ts";
import {
  type Emulator,
  type EmulatorOptions,
  encryptBody,
  signBody,
  startEmulator,
  urlVerification,
} from "../src/local/emulator/index.ts";
import { createLogger } from "../src/logger.ts";
import { en, zh } from "../src/strings/index.ts";

/** A fixed time: the emulator stamps deliveries with it and the webhook's clock reads it. */
const T0 = Date.UTC(2026, 10, 30, 2, 0, 0);
const ENCRYPT_KEY = "enc-key-transports";
const VERIFICATION_TOKEN = "vt-transports";
// In the bot's language (zh_cn here), and both languages in the toast's i18n field.
const TIMEOUT_BODY = {
  toast: {
    type: "error",
    content: zh.feishu.callbackTimeout,
    i18n: { zh_cn: zh.feishu.callbackTimeout, en_us: en.feishu.callbackTimeout },
  },
};

const running: (() => Promise<unknown> | undefined)[] = [];
afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(running.splice(0).map((close) => close()));
});

function captureLogger() {
  const lines: string[] = [];
  const logger = createLogger({ level: "debug", destination: { write: (line: string) => lines.push(line) } });
  return { logger, lines };
}

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

type CardAction = FeishuEventHandlers["onCardAction"];

/** Handlers that record what reached them, then do what the test says. */
function recording(behaviour: {
  onMessage?: (data: Record<string, unknown>) => void;
  onCardAction?: CardAction;
}) {
  const messages: Record<string, unknown>[] = [];
  const actions: Record<string, unknown>[] = [];
  const handlers: FeishuEventHandlers = {
    async onMessage(data) {
      messages.push(data);
      await behaviour.onMessage?.(data);
    },
    onCardAction(data) {
      actions.push(data);
      return behaviour.onCardAction ? behaviour.onCardAction(data) : Promise.resolve({ response: {} });
    },
  };
  return { handlers, messages, actions };
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  running.push(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function emulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const emu = await startEmulator({
    now: () => T0,
    encryptKey: ENCRYPT_KEY,
    verificationToken: VERIFICATION_TOKEN,
    ...options,
  });
  running.push(() => emu.close());
  return emu;
}

/** A bare express app with only the webhook, as `createApp({ routes })` would mount it. */
async function webhook(
  behaviour: Parameters<typeof recording>[0] = {},
  options: { callbackBudgetMs?: number; verificationToken?: string; settleMs?: number } = {},
) {
  const recorder = recording(behaviour);
  const { logger, lines } = captureLogger();
  const app = express();
  mountFeishuWebhook(app, {
    encryptKey: ENCRYPT_KEY,
    verificationToken: options.verificationToken ?? VERIFICATION_TOKEN,
    handlers: recorder.handlers,
    logger,
    now: () => T0,
    ...(options.callbackBudgetMs === undefined ? {} : { callbackBudgetMs: options.callbackBudgetMs }),
    ...(options.settleMs === undefined ? {} : { settleMs: options.settleMs }),
  });
  const server = createServer(app);
  const url = `${await listen(server)}${FEISHU_WEBHOOK_PATH}`;
  return { ...recorder, url, server, lines };
}

/** A card the bot sent, so the emulator will build a click on it. */
async function sentCard(emu: Emulator): Promise<string> {
  const messenger = createLarkMessenger({
    appId: emu.appId,
    appSecret: emu.appSecret,
    domain: emu.url,
    logger: createLogger({ level: "silent" }),
  });
  const { messageId } = await messenger.sendCard({ chatId: "oc_chat1" }, exampleCards()["progress-running"]!);
  return messageId;
}

const sealed = (payload: unknown, key = ENCRYPT_KEY) =>
  JSON.stringify({ encrypt: encryptBody(key, JSON.stringify(payload)) });

function signedHeaders(body: string, key = ENCRYPT_KEY, timestamp = String(Math.floor(T0 / 1000))) {
  const nonce = "nonce-1";
  return {
    "x-lark-request-timestamp": timestamp,
    "x-lark-request-nonce": nonce,
    "x-lark-signature": signBody(key, timestamp, nonce, body),
  };
}

async function post(url: string, body: string, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body,
  });
  const text = await response.text();
  return { status: response.status, body: text === "" ? text : (JSON.parse(text) as unknown) };
}

const message = (emu: Emulator, text = "hello") =>
  emu.userMessage({ chatType: "p2p", senderOpenId: "ou_alice", text });

describe("Feishu webhook: events and callbacks from the platform", () => {
  it("hands a signed, encrypted message to onMessage flattened, and acknowledges before the work is done", async () => {
    const emu = await emulator();
    const work = deferred();
    let workDone = false;
    const hook = await webhook({
      onMessage: () => {
        void work.promise.then(() => {
          workDone = true;
        });
      },
    });
    const payload = message(emu);

    const result = await emu.deliverWebhook(hook.url, payload, { timeoutMs: 2000 });

    expect(result).toMatchObject({ status: 200, body: {} });
    expect(workDone).toBe(false);
    expect(hook.messages).toHaveLength(1);
    expect(hook.messages[0]).toMatchObject({
      event_type: "im.message.receive_v1",
      event_id: payload.header.event_id,
      message: { message_id: payload.event.message.message_id, chat_type: "p2p" },
      sender: { sender_id: { open_id: "ou_alice" } },
    });
    work.resolve();
  });

  it("acknowledges once the handler has recorded the event, not after its background work, and refuses (503) one it could not record", async () => {
    const emu = await emulator();
    const never = deferred();
    const background: Promise<unknown>[] = [];
    // Recorded at once; what it started goes on (and never ends here): the ack does not wait for it.
    const recorded = await webhook({
      onMessage: async () => {
        background.push(never.promise);
      },
    });
    expect(await emu.deliverWebhook(recorded.url, message(emu), { timeoutMs: 2000 })).toMatchObject({
      status: 200,
      body: {},
    });
    expect(background).toHaveLength(1);

    // A rejection (or a throw) is the handler saying "not recorded": never acknowledged, so Feishu redelivers.
    const refused = await webhook({ onMessage: async () => Promise.reject(new Error("database is locked")) });
    expect(await emu.deliverWebhook(refused.url, message(emu))).toMatchObject({ status: 503 });
    expect(refused.lines.some((line) => line.includes("message not recorded"))).toBe(true);
    const throwing = await webhook({
      onMessage: () => {
        throw new Error("database is locked");
      },
    });
    expect(await emu.deliverWebhook(throwing.url, message(emu))).toMatchObject({ status: 503 });
  });

  it("answers a card action with the handler's body and runs afterResponse only once the response is out", async () => {
    const emu = await emulator();
    const order: string[] = [];
    const response = { toast: { type: "success", content: "已提交" } };
    const hook = await webhook(
      {
        onCardAction: async () => {
          order.push("handler");
          return { response, afterResponse: () => order.push("afterResponse") };
        },
      },
      { settleMs: 0 },
    );
    hook.server.on("request", (_req, res) => res.once("finish", () => order.push("response sent")));
    const messageId = await sentCard(emu);
    const payload = emu.cardAction({ messageId, operatorOpenId: "ou_alice", value: { kind: "answer" } });

    const result = await emu.deliverWebhook(hook.url, payload);
    order.push("response received");

    expect(result).toMatchObject({ status: 200, body: response });
    expect(hook.actions[0]).toMatchObject({
      event_type: "card.action.trigger",
      token: payload.event.token, // the c-… update token overwrites header.token (§2.2)
      operator: { open_id: "ou_alice" },
      action: { value: { kind: "answer" } },
      context: { open_message_id: messageId },
    });
    await vi.waitFor(() => expect(order).toContain("afterResponse"));
    expect(order.indexOf("afterResponse")).toBeGreaterThan(order.indexOf("response sent"));
    expect(order.slice(0, 2)).toEqual(["handler", "response sent"]);
    expect(order.filter((step) => step === "afterResponse")).toHaveLength(1);
  });

  it("answers the URL check, signed or not, but only when it decrypts with our key and carries our token", async () => {
    const emu = await emulator();
    const hook = await webhook();
    expect(await emu.deliverWebhook(hook.url, emu.urlVerification("ch-1"))).toMatchObject({
      status: 200,
      body: { challenge: "ch-1" },
    });
    expect(await post(hook.url, sealed(urlVerification("ch-2", VERIFICATION_TOKEN)))).toEqual({
      status: 200,
      body: { challenge: "ch-2" },
    });
    expect((await post(hook.url, sealed(urlVerification("ch-3", "other-token")))).status).toBe(401);
    expect((await post(hook.url, sealed(urlVerification("ch-4"), "other-key"))).status).toBe(401);
    expect((await post(hook.url, JSON.stringify(urlVerification("ch-5", VERIFICATION_TOKEN)))).status).toBe(
      401,
    );
  });
});

describe("Feishu webhook: forged and malformed requests", () => {
  it("refuses an unsigned, wrongly signed or tampered request with 401, runs nothing, and logs no secret", async () => {
    const emu = await emulator();
    const hook = await webhook();
    const original = sealed(message(emu, "original"));
    const tampered = sealed(message(emu, "tampered"));

    const attempts = [
      await post(hook.url, original),
      await post(hook.url, original, signedHeaders(original, "wrong-key")),
      await post(hook.url, tampered, signedHeaders(original)),
    ];

    for (const attempt of attempts) {
      expect(attempt.status).toBe(401);
      expect(attempt.body).toMatchObject({ error: { code: "UNAUTHORIZED" } });
    }
    expect(hook.messages).toHaveLength(0);
    const warnings = hook.lines.filter((line) => line.includes("webhook request refused"));
    expect(warnings).toHaveLength(3);
    expect(warnings.join("\n")).not.toContain(ENCRYPT_KEY);
  });

  it("refuses a replayed (stale) or future timestamp, and accepts one inside the 5 min window", async () => {
    const emu = await emulator();
    const hook = await webhook();
    emu.clock.advance(-6 * 60_000);
    expect(await emu.deliverWebhook(hook.url, message(emu))).toMatchObject({ status: 401 });
    emu.clock.advance(12 * 60_000);
    expect(await emu.deliverWebhook(hook.url, message(emu))).toMatchObject({ status: 401 });
    expect(hook.messages).toHaveLength(0);
    emu.clock.advance(-10 * 60_000);
    expect(await emu.deliverWebhook(hook.url, message(emu))).toMatchObject({ status: 200 });
    expect(hook.messages).toHaveLength(1);
  });

  it("refuses a verification token that differs from the configured one", async () => {
    const emu = await emulator({ verificationToken: "someone-elses-token" });
    const hook = await webhook();
    const result = await emu.deliverWebhook(hook.url, message(emu));
    expect(result).toMatchObject({
      status: 401,
      body: { error: { message: "Verification token mismatch" } },
    });
    expect(hook.messages).toHaveLength(0);
  });

  it("answers 400 to a signed body that is not JSON, not encrypted, undecryptable or not an event", async () => {
    const emu = await emulator();
    const hook = await webhook();
    const bodies = {
      garbage: "not json at all",
      plaintext: JSON.stringify(message(emu)),
      wrongKey: sealed(message(emu), "other-key"),
      notCiphertext: JSON.stringify({ encrypt: "c2hvcnQ=" }),
      notAnEvent: sealed({ hello: "world" }),
    };
    const results = Object.fromEntries(
      await Promise.all(
        Object.entries(bodies).map(async ([name, body]) => [
          name,
          await post(hook.url, body, signedHeaders(body)),
        ]),
      ),
    );
    expect(results).toMatchObject({
      garbage: {
        status: 400,
        body: { error: { code: "INVALID_INPUT", message: "Request body is not JSON" } },
      },
      plaintext: { status: 400, body: { error: { message: expect.stringContaining("not encrypted") } } },
      wrongKey: { status: 400 },
      notCiphertext: { status: 400, body: { error: { message: expect.stringContaining("decrypt") } } },
      notAnEvent: { status: 400, body: { error: { message: expect.stringContaining("schema 2.0") } } },
    });
    expect(hook.messages).toHaveLength(0);
  });

  it("refuses a body over 1 MiB", async () => {
    const hook = await webhook();
    const body = JSON.stringify({ encrypt: "a".repeat(1024 * 1024 + 10) });
    expect((await post(hook.url, body, signedHeaders(body))).status).toBe(413);
  });

  it("acknowledges event types it does not handle", async () => {
    const emu = await emulator();
    const hook = await webhook();
    const payload = {
      schema: "2.0",
      header: { event_id: "ev-1", event_type: "im.chat.member.bot.added_v1", token: VERIFICATION_TOKEN },
      event: { chat_id: "oc_1" },
    };
    expect(await emu.deliverWebhook(hook.url, payload)).toMatchObject({ status: 200, body: {} });
    expect(hook.messages).toHaveLength(0);
    expect(hook.actions).toHaveLength(0);
  });

  it("answers with the timeout toast when the card handler throws or overruns its budget, and keeps serving", async () => {
    const emu = await emulator();
    const messageId = await sentCard(emu);
    const late = deferred<Awaited<ReturnType<CardAction>>>();
    const afterLate = vi.fn();
    const throwing = await webhook({ onCardAction: () => Promise.reject(new Error("handler bug")) });
    const hanging = await webhook(
      { onCardAction: () => late.promise },
      { callbackBudgetMs: 50, settleMs: 0 },
    );

    const click = () => emu.cardAction({ messageId, operatorOpenId: "ou_alice" });
    expect(await emu.deliverWebhook(throwing.url, click())).toMatchObject({
      status: 200,
      body: TIMEOUT_BODY,
    });
    expect(await emu.deliverWebhook(hanging.url, click())).toMatchObject({ status: 200, body: TIMEOUT_BODY });

    // The overrunning handler finishes later: its follow-up still runs, after the (timeout) answer.
    late.resolve({ response: { toast: { type: "success", content: "late" } }, afterResponse: afterLate });
    await vi.waitFor(() => expect(afterLate).toHaveBeenCalledTimes(1));
    // What went out was the timeout toast, not the late handler's answer.
    expect(afterLate).toHaveBeenCalledWith(false);
    expect(await emu.deliverWebhook(hanging.url, message(emu))).toMatchObject({ status: 200, body: {} });
  });
});

describe("Feishu long connection: the SDK's EventDispatcher", () => {
  const quiet = createLogger({ level: "silent" });

  it("calls onMessage with the same flattened data as the webhook and returns at once", async () => {
    const emu = await emulator();
    const never = deferred();
    const ws = recording({
      onMessage: () => {
        void never.promise;
      },
    });
    const hook = await webhook();
    const payload = message(emu);

    const result = await createEventDispatcher(ws.handlers, quiet).invoke(payload, { needCheck: false });
    await emu.deliverWebhook(hook.url, payload);

    expect(result).toBeUndefined();
    // The SDK also keeps `schema` (and a symbol key, which JSON drops); everything else is identical.
    expect(JSON.parse(JSON.stringify(ws.messages[0]))).toEqual({ schema: "2.0", ...hook.messages[0] });
  });

  it("rejects when onMessage could not record the event, so WSClient answers the frame with code 500", async () => {
    const emu = await emulator();
    const ws = recording({
      onMessage: () => {
        throw new Error("database is locked");
      },
    });
    // WSClient.handleEventData turns a rejected invoke into {code: 500}: Feishu redelivers such an event.
    await expect(
      createEventDispatcher(ws.handlers, quiet).invoke(message(emu), { needCheck: false }),
    ).rejects.toThrow("could not be recorded");
  });

  it("returns the callback response and runs afterResponse only after the SDK could send it", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const emu = await emulator();
    const messageId = await sentCard(emu);
    const afterResponse = vi.fn();
    const response = {
      toast: { type: "info", content: "ok" },
      card: { type: "raw", data: { schema: "2.0" } },
    };
    const ws = recording({ onCardAction: async () => ({ response, afterResponse }) });
    const dispatcher = createEventDispatcher(ws.handlers, quiet);

    const result = await dispatcher.invoke(emu.cardAction({ messageId, operatorOpenId: "ou_bob" }), {
      needCheck: false,
    });

    expect(result).toEqual(response);
    expect(ws.actions[0]).toMatchObject({
      event_type: "card.action.trigger",
      operator: { open_id: "ou_bob" },
    });
    expect(afterResponse).not.toHaveBeenCalled();
    // The SDK sends the ack in the microtasks after the handler; "sent" is marked on the next macrotask,
    // and the follow-up runs the settle delay (default 1 s) after it.
    await new Promise((resolve) => setImmediate(resolve));
    await vi.advanceTimersByTimeAsync(DEFAULT_SETTLE_MS - 1);
    expect(afterResponse).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(afterResponse).toHaveBeenCalledTimes(1);
    expect(afterResponse).toHaveBeenCalledWith(true);
  });

  it("returns {} rather than undefined for an empty response, and the toast for a failing or hanging handler", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const emu = await emulator();
    const messageId = await sentCard(emu);
    const click = () => emu.cardAction({ messageId, operatorOpenId: "ou_bob" });
    const invoke = (onCardAction: CardAction) =>
      createEventDispatcher(recording({ onCardAction }).handlers, quiet).invoke(click(), {
        needCheck: false,
      });

    expect(await invoke(async () => ({ response: {} }))).toEqual({});
    expect(await invoke(() => Promise.reject(new Error("bug")))).toEqual(TIMEOUT_BODY);
    const hanging = invoke(() => new Promise(() => {}));
    await vi.advanceTimersByTimeAsync(2500);
    expect(await hanging).toEqual(TIMEOUT_BODY);
  });
});

describe("Feishu long connection: WSClient start-up", () => {
  it("refuses an app id the SDK would silently ignore", () => {
    const { logger } = captureLogger();
    const handlers = recording({}).handlers;
    expect(() =>
      startLongConnection({ appId: "cli_short", appSecret: "s", domain: "feishu", handlers, logger }),
    ).toThrow(ConfigError);
  });

  it("asks the configured domain for an endpoint and logs when Feishu refuses the app", async () => {
    const asked: unknown[] = [];
    const fake = express();
    fake.post("/callback/ws/endpoint", express.json(), (req, res) => {
      asked.push(req.body);
      res.json({ code: 403, msg: "forbidden", data: {} });
    });
    const domain = await listen(createServer(fake));
    const { logger, lines } = captureLogger();
    const connection = startLongConnection({
      appId: "cli_0123456789abcdef",
      appSecret: "secret-1",
      domain,
      handlers: recording({}).handlers,
      logger,
    });
    running.push(async () => connection.close());

    await vi.waitFor(() => expect(lines.some((line) => line.includes("long connection failed"))).toBe(true));
    expect(asked).toEqual([{ AppID: "cli_0123456789abcdef", AppSecret: "secret-1" }]);
    expect(lines.join("\n")).not.toContain("secret-1");
  });
});
