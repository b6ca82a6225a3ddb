import fs from "node:fs";
import type { Server } from "node:http";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../src/app.ts";
import { loadConfig } from "../src/config.ts";
import { parseConfigFile } from "../src/config-file.ts";
import { createCore } from "../src/core.ts";
import { feishuGroupSessionId } from "../src/domain/session-id.ts";
import { type FeishuApps, startFeishuApps } from "../src/feishu/index.ts";
import { createDemoAgent, createDemoTools } from "../src/harness/agents/demo.ts";
import {
  type Emulator,
  type EmulatorApp,
  type MessageReceiveEvent,
  startEmulator,
} from "../src/local/emulator/index.ts";
import { createLogger } from "../src/logger.ts";
import { type Db, openDatabase } from "../src/store/db.ts";
import { zh } from "../src/strings/index.ts";
import { FAST_LONG_CONNECTION } from "./helpers/feishu.ts";
import { until } from "./helpers/wait.ts";

/**
 * Several Feishu apps in one process (issue 30), end to end: two apps of one emulated tenant (each its own
 * credentials, tokens, rate window and subscription: app A by long connection, app B by webhook at its own
 * path), one bot process wired by the production composition (config file → loadConfig → startFeishuApps), the
 * same two group chats holding both bots. Every card and reply must go out with the token of the app that
 * received the message, into that message's chat; the same chat id in two apps is two sessions.
 */

const A = "cli_a000000000000001";
const B = "cli_b000000000000002";
const KEY_B = "encrypt-key-of-b";
const VT_B = "verification-token-of-b";
const CHATS = ["oc_shared_one", "oc_shared_two"] as const;
const OUTSIDE = "oc_not_allowed";

let emulator: Emulator;
let apps: FeishuApps;
let db: Db;
let server: Server;
let dataDir: string;
let core: Awaited<ReturnType<typeof createCore>>;
/** Which app each user message was delivered to. */
const deliveredTo = new Map<string, string>();

beforeAll(async () => {
  emulator = await startEmulator({
    appId: A,
    longConnection: FAST_LONG_CONNECTION,
    otherApps: [{ appId: B, encryptKey: KEY_B, verificationToken: VT_B, botName: "Second Bot" }],
  });
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-multi-app-"));
  const file = parseConfigFile(
    JSON.stringify({
      env: { DEMO_STEP_MS: 2, CARD_PATCH_INTERVAL_MS: 200, FEISHU_CALLBACK_SETTLE_MS: 20, QUEUE_MAX: 100 },
      apps: [
        { appId: A, appSecret: { env: "APP_A_SECRET" }, transport: "ws", domain: emulator.url },
        {
          appId: B,
          appSecret: emulator.app(B).appSecret,
          transport: "webhook",
          encryptKey: KEY_B,
          verificationToken: VT_B,
          domain: emulator.url,
          allow: { chats: [...CHATS] },
        },
      ],
    }),
    "feishu-progress-bot.json",
  );
  const config = loadConfig(
    { AUTH_SECRET: "0123456789abcdef0123456789abcdef", DATA_DIR: dataDir, APP_A_SECRET: emulator.appSecret },
    file,
  );
  if (config.mode !== "feishu") throw new Error("expected feishu mode");
  const logger = createLogger({ level: "silent" });
  db = openDatabase(path.join(dataDir, "bot.sqlite"));
  core = await createCore({
    db,
    logger,
    agent: createDemoAgent(),
    tools: createDemoTools({ stepMs: config.agent.demoStepMs }),
    askTimeoutMs: 60_000,
    authSecret: "0123456789abcdef0123456789abcdef",
    maxQueued: config.queueMax,
  });
  apps = await startFeishuApps({ config, core, logger, now: Date.now });
  server = createApp({ ...core, logger, routes: apps.routes }).server;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  emulator.subscribe({ mode: "long_connection" });
  emulator.app(B).subscribe({ mode: "webhook", url: `http://127.0.0.1:${port}/feishu/${B}/events` });
  await apps.ready;
}, 30_000);

afterAll(async () => {
  await core?.runner.stop();
  await apps?.close();
  await core?.hub.close();
  await new Promise((resolve) => server?.close(resolve));
  db?.close();
  await emulator?.close();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

async function deliver(app: EmulatorApp, payload: MessageReceiveEvent): Promise<string> {
  const id = payload.event.message.message_id;
  deliveredTo.set(`${app.appId}:${id}`, app.appId);
  const result = await app.deliver(payload, { timeoutMs: 10_000 });
  if (result.status !== 200) throw new Error(`${app.appId} answered ${result.status}`);
  return id;
}

function runsEnded(expected: number): boolean {
  const rows = db.prepare("SELECT status FROM runs").all() as { status: string }[];
  return rows.length >= expected && rows.every((row) => !["running", "queued"].includes(row.status));
}

function botMessages() {
  return emulator.messages.listMessages().filter((m) => m.senderType === "app");
}

describe("two Feishu apps in one process", () => {
  it("answers 100 interleaved messages in two shared chats, every one by the app that received it", async () => {
    const sent: { id: string; app: string; chat: string }[] = [];
    for (let i = 0; i < 100; i += 1) {
      const app = emulator.app(i % 2 === 0 ? A : B);
      const chat = CHATS[Math.floor(i / 2) % 2] ?? CHATS[0];
      // open_ids are per app on the platform: the same person is a different id in each app.
      const sender = `ou_person${i % 3}_${app.appId.slice(4, 5)}`;
      const payload = app.userMessage({
        chatType: "group",
        chatId: chat,
        senderOpenId: sender,
        text: `/quick message ${i}`,
        mentionBot: true,
      });
      sent.push({ id: await deliver(app, payload), app: app.appId, chat });
    }
    await until(() => runsEnded(100), "every run ended", 60_000);
    await until(
      () => sent.every((m) => botMessages().some((b) => b.parentId === m.id && b.msgType === "interactive")),
      "a card for every message",
      20_000,
    );
    // Let the last PATCHes land before the calls are read.
    await Promise.all(apps.runtimes.map((runtime) => runtime.channel.idle()));

    const appOf = new Map(sent.map((m) => [m.id, m]));
    const crossApp: string[] = [];
    for (const message of botMessages()) {
      const source = message.parentId === undefined ? undefined : appOf.get(message.parentId);
      if (!source) {
        crossApp.push(`${message.messageId}: not a reply to a delivered message`);
        continue;
      }
      if (message.senderId !== source.app) crossApp.push(`${message.messageId}: sent by ${message.senderId}`);
      if (message.chatId !== source.chat) crossApp.push(`${message.messageId}: in ${message.chatId}`);
    }
    // Every call that sent or changed a message was made with the token of the message's app.
    const writes = emulator.calls.filter(
      (call) => call.path.startsWith("/open-apis/im/v1/messages") && call.method !== "GET",
    );
    for (const call of writes) {
      const target = /\/open-apis\/im\/v1\/messages\/([^/]+)/.exec(call.path)?.[1];
      const message = target === undefined ? undefined : emulator.messages.getMessage(target);
      const owner =
        message === undefined
          ? undefined
          : message.senderType === "app"
            ? message.senderId
            : appOf.get(message.messageId)?.app;
      if (call.appId === undefined || call.appId !== owner)
        crossApp.push(`${call.method} ${call.path} as ${call.appId}, message of ${owner}`);
      if (call.code !== 0) crossApp.push(`${call.method} ${call.path} answered ${call.code}`);
    }
    expect(crossApp).toEqual([]);
    expect(writes.length).toBeGreaterThanOrEqual(100); // at least the card replying to each message
    expect(new Set(writes.map((call) => call.appId))).toEqual(new Set([A, B]));

    // The same chat id in two apps is two sessions; each holds its own app's 25 messages, no other's.
    const sessions = db
      .prepare("SELECT session_id, COUNT(*) AS runs FROM runs GROUP BY session_id ORDER BY session_id")
      .all() as { session_id: string; runs: number }[];
    expect(sessions).toEqual(
      [A, B]
        .flatMap((app) => CHATS.map((chat) => ({ session_id: feishuGroupSessionId(app, chat), runs: 25 })))
        .sort((x, y) => x.session_id.localeCompare(y.session_id)),
    );
    // …and two workspaces: the second app's agent never writes in the first's folder for the same chat.
    const workspaces = db
      .prepare("SELECT id, workspace FROM sessions WHERE chat_id = ? ORDER BY id")
      .all(CHATS[0]) as { id: string; workspace: string }[];
    expect(workspaces).toEqual([
      {
        id: feishuGroupSessionId(A, CHATS[0]),
        workspace: path.join(dataDir, "workspaces", "feishu-chat", CHATS[0]),
      },
      {
        id: feishuGroupSessionId(B, CHATS[0]),
        workspace: path.join(dataDir, "workspaces", "apps", B, "feishu-chat", CHATS[0]),
      },
    ]);
    const inputs = db.prepare("SELECT session_id, input FROM runs").all() as {
      session_id: string;
      input: string;
    }[];
    for (const run of inputs) {
      const i = Number(/message (\d+)/.exec(run.input)?.[1]);
      const expected = feishuGroupSessionId(i % 2 === 0 ? A : B, CHATS[Math.floor(i / 2) % 2] ?? "");
      expect(run.session_id).toBe(expected);
    }
  }, 120_000);

  it("answers one message that @-mentions both bots once in each app", async () => {
    const b = emulator.app(B);
    const first = emulator.app(A).userMessage({
      chatType: "group",
      chatId: CHATS[0],
      senderOpenId: "ou_both_a",
      text: "/quick both of you",
      mentionBot: true,
      mentions: [{ openId: b.botOpenId, name: b.botName }],
    });
    const id = await deliver(emulator.app(A), first);
    // The platform delivers the same message to the second app, with that app's header.
    const second = structuredClone(first);
    second.header = { ...second.header, event_id: `${second.header.event_id}_b`, app_id: B, token: VT_B };
    await deliver(b, second);
    await until(
      () => {
        const cards = botMessages().filter((m) => m.parentId === id && m.msgType === "interactive");
        return cards.length === 2 && cards;
      },
      "a card from each app",
      20_000,
    ).then((cards) => expect(new Set(cards.map((card) => card.senderId))).toEqual(new Set([A, B])));
  }, 30_000);

  it("keeps each app's allow-list its own: app B refuses a chat it does not list, app A serves it", async () => {
    const refused = await deliver(
      emulator.app(B),
      emulator.app(B).userMessage({
        chatType: "group",
        chatId: OUTSIDE,
        senderOpenId: "ou_stranger_b",
        text: "/quick let me in",
        mentionBot: true,
      }),
    );
    const served = await deliver(
      emulator.app(A),
      emulator.app(A).userMessage({
        chatType: "group",
        chatId: OUTSIDE,
        senderOpenId: "ou_stranger_a",
        text: "/quick hello",
        mentionBot: true,
      }),
    );
    const reply = await until(() => botMessages().find((m) => m.parentId === refused), "the refusal");
    expect(reply).toMatchObject({ senderId: B, msgType: "text" });
    expect(JSON.parse(reply.content)).toEqual({ text: zh.feishu.notAllowed });
    await until(
      () => botMessages().find((m) => m.parentId === served && m.msgType === "interactive"),
      "app A's card",
    );
    const outside = db.prepare("SELECT session_id FROM runs WHERE session_id LIKE ?").all(`%${OUTSIDE}%`);
    expect(outside).toEqual([{ session_id: feishuGroupSessionId(A, OUTSIDE) }]);
  }, 30_000);

  it("takes a click on app B's card through app B, and 重试's new card comes from app B too", async () => {
    const b = emulator.app(B);
    const sessionId = feishuGroupSessionId(B, CHATS[1]);
    const id = await deliver(
      b,
      b.userMessage({
        chatType: "group",
        chatId: CHATS[1],
        senderOpenId: "ou_retry_b",
        text: "/fail",
        mentionBot: true,
      }),
    );
    const cards = () => botMessages().filter((m) => m.parentId === id && m.msgType === "interactive");
    await until(async () => (await core.runner.currentRun(sessionId))?.status === "failed", "the failed run");
    const card = await until(() => cards()[0], "the failed card");
    const run = await core.runner.currentRun(sessionId);
    const value = { kind: "progress", act: "retry", sessionId, runId: run?.id, sender: "ou_retry_b" };
    // A card's callbacks go to the app that sent it: app A's subscription never sees this click.
    expect(() =>
      emulator.app(A).cardAction({ messageId: card.messageId, operatorOpenId: "ou_retry_b", value }),
    ).toThrow(/sent by cli_b/);
    const outcome = await b.click({ messageId: card.messageId, operatorOpenId: "ou_retry_b", value });
    expect(outcome.toast?.content).toBe(zh.feishu.retried);
    const again = await until(() => cards().length === 2 && cards(), "the retry's card");
    expect(again.map((m) => m.senderId)).toEqual([B, B]);
  }, 30_000);

  it("refuses at app B's URL an event whose header names app A, whatever key and token signed it", async () => {
    const payload = emulator.app(A).userMessage({
      chatType: "group",
      chatId: CHATS[0],
      senderOpenId: "ou_misrouted",
      text: "/quick wrong door",
      mentionBot: true,
    });
    // Signed with B's key and carrying B's verification token (two apps set up with the same ones): only the
    // header's app id tells that the event is not B's.
    payload.header = { ...payload.header, token: VT_B };
    const result = await emulator.app(B).deliver(payload, { timeoutMs: 10_000 });
    expect(result.status).toBe(403);
    expect(db.prepare("SELECT COUNT(*) AS n FROM runs WHERE sender_id = ?").get("ou_misrouted")).toEqual({
      n: 0,
    });
  });
});
