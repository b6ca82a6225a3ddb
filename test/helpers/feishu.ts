import fs from "node:fs";
import type { Server } from "node:http";
import os from "node:os";
import path from "node:path";
import type { Express } from "express";
import { WebSocket } from "ws";
import { createApp, type ServerLimits } from "../../src/app.ts";
import { signToken } from "../../src/auth/token.ts";
import { readStack } from "../../src/cards/form-fields.ts";
import type { Card } from "../../src/cards/model.ts";
import { type Core, createCore } from "../../src/core.ts";
import { createLarkCardKit } from "../../src/feishu/cardkit/api.ts";
import type { FeishuChannel } from "../../src/feishu/channel.ts";
import type { FeishuChannelOptions } from "../../src/feishu/channel-options.ts";
import type { FeishuCluster } from "../../src/feishu/cluster-options.ts";
import { createLarkMessenger } from "../../src/feishu/lark-messenger.ts";
import type { FeishuMessenger } from "../../src/feishu/messenger.ts";
import { createFeishuRuntime } from "../../src/feishu/runtime.ts";
import type { FeishuEventHandlers } from "../../src/feishu/transport.ts";
import type { Agent } from "../../src/harness/agents/agent.ts";
import { createDemoAgent, createDemoTools } from "../../src/harness/agents/demo.ts";
import type { ToolImpl } from "../../src/harness/dispatcher.ts";
import { checkCard } from "../../src/local/emulator/card-checker/index.ts";
import { type Emulator, startEmulator } from "../../src/local/emulator/index.ts";
import { contentFor } from "../../src/local/emulator/state.ts";
import { createLogger } from "../../src/logger.ts";
import { openDatabase } from "../../src/store/db.ts";
import { until as waitUntil } from "./wait.ts";

export const WEBHOOK_KEY = "rig-encrypt-key";

/**
 * The Feishu channel end to end: the real SDK over HTTP to the emulator, a real SQLite file, the demo agent.
 * Events reach the bot through the transport under test, at the wire: the SDK's WSClient connected to the
 * emulator's long-connection server (pbbp2 frames, acks), or signed and encrypted webhooks.
 */

/** ClientConfig for tests: reconnect at once and every second instead of after 30 s + 120 s. */
export const FAST_LONG_CONNECTION = { pingIntervalS: 5, reconnectIntervalS: 1, reconnectNonceS: 0 } as const;
export interface FeishuRig {
  emulator: Emulator;
  core: Core;
  channel: FeishuChannel;
  messenger: FeishuMessenger;
  /** The runtime's event handlers, for a caller that delivers events itself (bench/callbacks.ts). */
  handlers: FeishuEventHandlers;
  dbFile: string;
  dataDir: string;
  /** http://127.0.0.1:PORT when started withServer. */
  httpUrl: string;
  /** A WebSocket client for a user, connected to the hub (withServer). */
  connect(userId: string): Promise<{
    frames: { type: string; data: Record<string, unknown> }[];
    send(frame: unknown): void;
    close(): void;
  }>;
  /** Delivers a user's message the way the transport under test does; resolves once it was acknowledged. */
  send(input: Parameters<Emulator["userMessage"]>[0]): Promise<string>;
  /** Delivers an already-built event again (a redelivery). */
  deliver(payload: ReturnType<Emulator["userMessage"]>): Promise<void>;
  /** A click as the Feishu client makes it: answered within 3 s, the answer's card applied to the message. */
  click(
    input: Parameters<Emulator["cardAction"]>[0],
  ): Promise<{ toast?: { type: string; content: string }; card?: { data: Card } }>;
  /** The progress card (the bot's reply carrying a card) to a user message, once it exists. */
  progressCard(userMessageId: string): Promise<string>;
  /** The card JSON currently stored for a message in the emulator (after PATCHes). */
  /** The card as `viewer` sees it (a callback's card reaches its clicker alone), else as every member does. */
  cardOf(messageId: string, viewer?: string): Card;
  until<T>(
    probe: () => T | undefined | false | Promise<T | undefined | false>,
    what: string,
    timeoutMs?: number,
  ): Promise<T>;
  stop(): Promise<void>;
}

export async function startFeishuRig(
  options: {
    agent?: Agent;
    tools?: ToolImpl[];
    stepMs?: number;
    askTimeoutMs?: number;
    dataDir?: string;
    emulator?: Emulator;
    askPing?: boolean;
    cardPatchIntervalMs?: number;
    recover?: boolean;
    /** Also serve HTTP (WebSocket hub) on an ephemeral port; implied by the webhook transport. */
    withServer?: boolean;
    /** How events reach the bot: the long connection (default) or signed webhooks over HTTP. */
    transport?: "ws" | "webhook";
    /** Personal sign-in links for /login (as main.ts wires them). */
    signInLink?: (userId: string) => Promise<{ url: string; expiresAt: number }>;
    /** The wait after a callback's answer before its card's next PATCH (production 1000; tests 20). */
    settleMs?: number;
    /** More routes for the HTTP app, built from the rig's parts (e.g. the agents' API); implies withServer. */
    routes?: (parts: { core: Core; channel: FeishuChannel }) => ((app: Express) => void)[];
    /** Overrides of the HTTP server's limits (app.ts SERVER_LIMITS), e.g. a bench's many connections. */
    serverLimits?: Partial<ServerLimits>;
    /** Deadlines, reminders and 延长 (issue 16). */
    asks?: FeishuChannelOptions["asks"];
    /** FEISHU_REPLY_IN_THREAD (issue 19). */
    replyInThread?: boolean;
    /** FEISHU_CARD_TRANSPORT (issue 29): `cardkit` makes progress cards CardKit entities. */
    cardTransport?: "im" | "cardkit";
    /** Where the service logs (default: silent). */
    logger?: ReturnType<typeof createLogger>;
    /** The bot's clock, core and channel alike (default Date.now); e.g. the emulator's, which a test moves. */
    now?: () => number;
    /** One of several instances on a shared Postgres (issue 27): the budget shared, the connection held. */
    cluster?: FeishuCluster;
  } = {},
): Promise<FeishuRig> {
  const transport = options.transport ?? "ws";
  const emulator =
    options.emulator ??
    (await startEmulator({ encryptKey: WEBHOOK_KEY, longConnection: FAST_LONG_CONNECTION }));
  const settleMs = options.settleMs ?? 20;
  const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), "fpb-feishu-"));
  const dbFile = path.join(dataDir, "bot.sqlite");
  const db = openDatabase(dbFile);
  const logger = options.logger ?? createLogger({ level: "silent" });
  const core = await createCore({
    db,
    logger,
    agent: options.agent ?? createDemoAgent(),
    tools: options.tools ?? createDemoTools({ stepMs: options.stepMs ?? 5 }),
    askTimeoutMs: options.askTimeoutMs ?? 60_000,
    authSecret: "test-secret-0123456789",
    ...(options.now ? { now: options.now } : {}),
  });
  let server: Server | undefined;
  let httpUrl = "";
  // The production wiring (src/feishu/runtime.ts) with the rig's knobs: the SDK over HTTP to the emulator.
  const feishu = await createFeishuRuntime({
    messenger: createLarkMessenger({
      appId: emulator.appId,
      appSecret: emulator.appSecret,
      domain: emulator.url,
      logger,
      timeoutMs: 5000,
    }),
    core,
    logger,
    now: options.now ?? Date.now,
    appId: emulator.appId,
    dataDir,
    publicUrl: () => "http://localhost:3000",
    cardPatchIntervalMs: options.cardPatchIntervalMs ?? 200,
    askPing: options.askPing ?? true,
    ...(options.signInLink ? { signInLink: options.signInLink } : {}),
    ...(options.asks ? { asks: options.asks } : {}),
    ...(options.replyInThread ? { replyInThread: true } : {}),
    ...(options.cluster ? { cluster: options.cluster } : {}),
    ...(options.cardTransport === "cardkit"
      ? {
          cardkit: createLarkCardKit({
            appId: emulator.appId,
            appSecret: emulator.appSecret,
            domain: emulator.url,
            logger,
            timeoutMs: 5000,
          }),
        }
      : {}),
    inbound:
      transport === "ws"
        ? {
            transport: "ws",
            appId: emulator.appId,
            appSecret: emulator.appSecret,
            domain: emulator.url,
            settleMs,
          }
        : // The emulator stamps deliveries with its own clock (which tests move); the webhook reads the same.
          { transport: "webhook", encryptKey: WEBHOOK_KEY, now: emulator.clock.now, settleMs },
  });
  const { channel, messenger } = feishu;
  if (options.withServer || options.routes || transport === "webhook") {
    const routes = [...feishu.routes, ...(options.routes?.({ core, channel }) ?? [])];
    server = createApp({
      ...core,
      logger,
      routes,
      ...(options.serverLimits ? { serverLimits: options.serverLimits } : {}),
    }).server;
    await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    httpUrl = typeof address === "object" && address ? `http://127.0.0.1:${address.port}` : "";
  }
  await feishu.ready;
  if (transport === "ws") emulator.subscribe({ mode: "long_connection" });
  else emulator.subscribe({ mode: "webhook", url: `${httpUrl}/feishu/events` });
  // As main.ts does once it listens: resume unfinished runs, then repair ended runs' final cards.
  if (options.recover) {
    await core.runner.recover();
    await channel.repairEnded();
  }

  const until = <T>(
    probe: () => T | undefined | false | Promise<T | undefined | false>,
    what: string,
    timeoutMs = 8000,
  ): Promise<T> => waitUntil(probe, what, timeoutMs);

  const sockets: WebSocket[] = [];
  const deliverEvent = async (payload: unknown): Promise<unknown> => {
    if (transport === "webhook") {
      const result = await emulator.deliverWebhook(`${httpUrl}/feishu/events`, payload);
      if (result.status !== 200)
        throw new Error(`webhook answered ${result.status}: ${JSON.stringify(result.body)}`);
      return result.body;
    }
    const ack = await emulator.longConnection.deliver(payload, { timeoutMs: 10_000 }); // a stalled CI machine, not the deadline under test
    if (ack.status !== 200) throw new Error(`long connection acked ${ack.status}`);
    return ack.body === "" ? undefined : ack.body;
  };

  return {
    emulator,
    core,
    channel,
    messenger,
    handlers: feishu.handlers,
    dbFile,
    dataDir,
    httpUrl,
    async connect(userId) {
      const token = signToken("test-secret-0123456789", userId, Date.now() + 60_000);
      const ws = new WebSocket(`${httpUrl.replace("http", "ws")}/ws?token=${token}`);
      const frames: { type: string; data: Record<string, unknown> }[] = [];
      ws.on("message", (data) => frames.push(JSON.parse(String(data))));
      await new Promise((resolve, reject) => {
        ws.once("open", resolve);
        ws.once("error", reject);
      });
      sockets.push(ws);
      return { frames, send: (frame) => ws.send(JSON.stringify(frame)), close: () => ws.close() };
    },
    async send(input) {
      const payload = emulator.userMessage(input);
      await deliverEvent(payload);
      return payload.event.message.message_id;
    },
    async deliver(payload) {
      await deliverEvent(payload);
    },
    async click(input) {
      // As the Feishu client: the answer's toast is shown and its card applied to the message.
      const outcome = await emulator.click(input);
      if (outcome.answer === undefined) throw new Error(`the click failed: ${outcome.error}`);
      const body = outcome.answer as { toast?: { type: string; content: string }; card?: { data: Card } };
      // The toast as the client shows it: one text, in the clicking client's language (the `i18n` pick).
      const answer = { ...body, ...(outcome.toast ? { toast: outcome.toast } : {}) };
      // The card of every callback answer must pass the emulator's independent checker, as Feishu's client
      // would refuse it (200673) otherwise.
      if (answer?.card) {
        const verdict = checkCard(answer.card.data);
        if (!verdict.ok) throw new Error(`the callback answer's card would be refused: ${verdict.summary}`);
      }
      return answer;
    },
    progressCard(userMessageId) {
      return until(() => cardReplyingTo(emulator, userMessageId), `a card replying to ${userMessageId}`);
    },
    cardOf(messageId, viewer) {
      const message = emulator.messages.getMessage(messageId);
      if (!message) throw new Error(`no message ${messageId}`);
      return JSON.parse(contentFor(message, viewer)) as Card;
    },
    until,
    async stop() {
      for (const ws of sockets) ws.terminate();
      await core.runner.stop();
      await feishu.close();
      await core.hub.close();
      if (server) await new Promise((resolve) => server?.close(resolve));
      db.close();
      if (!options.emulator) await emulator.close();
    },
  };
}

/** The id of the first card the bot replied to a user's message with (its progress card), if any yet. */
export function cardReplyingTo(emulator: Emulator, userMessageId: string): string | undefined {
  return emulator.messages
    .listMessages()
    .find((m) => m.parentId === userMessageId && m.msgType === "interactive" && m.senderType === "app")
    ?.messageId;
}

/** Names of the forms on a card. */
export function formsOn(card: Card): string[] {
  return card.body.elements.flatMap((node) => (node.tag === "form" ? [node.name] : []));
}

/**
 * The request ids carried by the submit buttons of a card's forms, in order: a stacked asks' one form
 * (cards/ask-form.ts askForms) carries each of its asks in the submit's `stack`.
 */
export function requestIdsOn(card: Card): string[] {
  const values = JSON.stringify(card).matchAll(
    /"requestId":"([^"]+)","sender":"[^"]*"(?:,"stack":"([^"]+)")?/g,
  );
  return [...values].flatMap((m) => (m[2] ? readStack(m[2]).map((ask) => ask.requestId) : [m[1] ?? ""]));
}

export function cardText(card: Card): string {
  return JSON.stringify(card);
}
