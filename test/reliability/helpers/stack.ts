import fs from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterEach } from "vitest";
import { WebSocket } from "ws";
import { createApp, type ServerLimits } from "../../../src/app.ts";
import { signToken } from "../../../src/auth/token.ts";
import type { Card } from "../../../src/cards/model.ts";
import { type Core, createCore } from "../../../src/core.ts";
import type { FeishuChannel } from "../../../src/feishu/channel.ts";
import { createLarkMessenger } from "../../../src/feishu/lark-messenger.ts";
import type { Limiter } from "../../../src/feishu/limits.ts";
import { createFeishuRuntime } from "../../../src/feishu/runtime.ts";
import type { FeishuEventHandlers } from "../../../src/feishu/transport.ts";
import type { Agent } from "../../../src/harness/agents/agent.ts";
import { createDemoAgent, createDemoTools } from "../../../src/harness/agents/demo.ts";
import type { ToolImpl } from "../../../src/harness/dispatcher.ts";
import { checkCard } from "../../../src/local/emulator/card-checker/index.ts";
import {
  type CardActionInput,
  type Emulator,
  type EmulatorOptions,
  startEmulator,
  type UserMessageInput,
  type WebhookResult,
} from "../../../src/local/emulator/index.ts";
import { createLogger } from "../../../src/logger.ts";
import { serviceRoutes } from "../../../src/routes.ts";
import { type Db, openDatabase } from "../../../src/store/db.ts";
import { cardReplyingTo } from "../../helpers/feishu.ts";
import { TestClient } from "../../helpers/harness.ts";
import { until } from "./env.ts";

/**
 * The whole service in this process, wired as `src/feishu/index.ts` and `src/main.ts` wire it: the real
 * core on a real SQLite file, the real Lark SDK over HTTP to the emulator, the webhook (events and card
 * callbacks), the WebSocket hub and the session pages on one HTTP server on 127.0.0.1. Only the knobs a
 * test needs differ (messenger timeout, patch interval, step pace), never the code paths.
 */

export const ALICE = "ou_alice000000000000000000000000000";
export const BOB = "ou_bob00000000000000000000000000000";
export const CAROL = "ou_carol0000000000000000000000000000";
export const ENCRYPT_KEY = "reliability-encrypt-key";
export const AUTH_SECRET = "reliability-auth-secret-0123456789";
export const GROUP_CHAT = "oc_group_reliability";

export interface StackOptions {
  emulator?: Emulator;
  emulatorOptions?: EmulatorOptions;
  dataDir?: string;
  agent?: Agent;
  tools?: ToolImpl[];
  /** Pace of the demo agent's steps (DEMO_STEP_MS); default 5. */
  stepMs?: number;
  askTimeoutMs?: number;
  /** Where the SDK sends Open API calls (default: the emulator; a test may put a slow path in between). */
  apiUrl?: string;
  /** The SDK's per-request timeout; default 10 s as in production. */
  messengerTimeoutMs?: number;
  cardPatchIntervalMs?: number;
  askPing?: boolean;
  verificationToken?: string;
  recover?: boolean;
  /** Callback budget of the webhook (default 2500 ms as in production). */
  callbackBudgetMs?: number;
  /** The app-wide limiter (default: the production one); a test may stand in a congested budget. */
  appLimiter?: Limiter;
  /** HTTP server timeouts and connection cap (default: production's SERVER_LIMITS). */
  serverLimits?: Partial<ServerLimits>;
  /**
   * How events and callbacks reach the bot: signed webhooks (default) or the long connection, the SDK's
   * WSClient against the emulator (then `deliver` resolves with the ack: `status` is its code).
   */
  transport?: "webhook" | "ws";
}

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export interface Stack {
  emulator: Emulator;
  core: Core;
  channel: FeishuChannel;
  handlers: FeishuEventHandlers;
  db: Db;
  dbFile: string;
  dataDir: string;
  /** The bot's HTTP server (its connection guard's figures: app.ts connectionStats). */
  server: Server;
  /** http://127.0.0.1:PORT */
  httpUrl: string;
  hookUrl: string;
  /** Every log line at warn or above, parsed. */
  logs: LogLine[];
  /** Log lines at error or above (an exception that was caught at a boundary, a failed handler…). */
  errors(): LogLine[];
  /** A user's message delivered over the stack's transport; resolves once acknowledged. */
  say(input: UserMessageInput): Promise<{ messageId: string; result: WebhookResult }>;
  deliver(payload: unknown): Promise<WebhookResult>;
  /** A card click delivered over the stack's transport; resolves with Feishu's view of the answer. */
  click(input: CardActionInput): Promise<CallbackBody & { status: number; durationMs: number }>;
  progressCard(userMessageId: string, waitMs?: number): Promise<string>;
  cardOf(messageId: string): Card;
  tokenFor(userId: string, ttlMs?: number): string;
  connect(userId: string): Promise<TestClient>;
  /**
   * Tries an upgrade with exactly these credentials: resolves with the open client, or with the HTTP status
   * the server refused it with.
   */
  upgrade(credentials: { token?: string; cookie?: string; origin?: string }): Promise<TestClient | number>;
  privateSessionId(userId: string): string;
  groupSessionId(chatId?: string): string;
  stop(): Promise<void>;
}

export interface CallbackBody {
  toast?: { type: string; content: string };
  card?: { type: string; data: Card };
}

/**
 * For one test file: `stack()` starts a stack with the file's defaults; every stack it started, then anything
 * pushed to `closers`, is stopped after each test.
 */
export function stacksForEachTest(defaults: StackOptions = {}): {
  stack: (options?: StackOptions) => Promise<Stack>;
  closers: (() => Promise<void>)[];
} {
  const stacks: Stack[] = [];
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const started of stacks.splice(0)) await started.stop();
    for (const close of closers.splice(0)) await close();
  });
  const stack = async (options: StackOptions = {}) => {
    const started = await startStack({ ...defaults, ...options });
    stacks.push(started);
    return started;
  };
  return { stack, closers };
}

export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const emulator =
    options.emulator ??
    (await startEmulator({
      encryptKey: ENCRYPT_KEY,
      ...(options.verificationToken ? { verificationToken: options.verificationToken } : {}),
      ...options.emulatorOptions,
    }));
  const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), "fpb-rel-"));
  const dbFile = path.join(dataDir, "bot.sqlite");
  const db = openDatabase(dbFile);
  const logs: LogLine[] = [];
  const logger = createLogger({
    level: "warn",
    destination: {
      write: (line: string) => {
        logs.push(JSON.parse(line) as LogLine);
      },
    },
  });
  const core = await createCore({
    db,
    logger,
    agent: options.agent ?? createDemoAgent(),
    tools: options.tools ?? createDemoTools({ stepMs: options.stepMs ?? 5 }),
    askTimeoutMs: options.askTimeoutMs ?? 15 * 60_000,
    authSecret: AUTH_SECRET,
  });
  // The production wiring (src/feishu/runtime.ts) with the stack's knobs.
  const budget = options.callbackBudgetMs ? { callbackBudgetMs: options.callbackBudgetMs } : {};
  const feishu = await createFeishuRuntime({
    messenger: createLarkMessenger({
      appId: emulator.appId,
      appSecret: emulator.appSecret,
      domain: options.apiUrl ?? emulator.url,
      logger,
      timeoutMs: options.messengerTimeoutMs ?? 10_000,
    }),
    core,
    logger,
    now: Date.now,
    appId: emulator.appId,
    dataDir,
    publicUrl: () => "http://localhost:3000",
    cardPatchIntervalMs: options.cardPatchIntervalMs ?? 200,
    askPing: options.askPing ?? true,
    requestTimeoutMs: options.messengerTimeoutMs ?? 10_000,
    ...(options.appLimiter ? { appLimiter: options.appLimiter } : {}),
    inbound:
      options.transport === "ws"
        ? {
            transport: "ws",
            appId: emulator.appId,
            appSecret: emulator.appSecret,
            domain: emulator.url,
            ...budget,
          }
        : {
            transport: "webhook",
            encryptKey: ENCRYPT_KEY,
            ...(options.verificationToken ? { verificationToken: options.verificationToken } : {}),
            // The emulator stamps deliveries with its own clock (which tests move); the webhook reads the same.
            now: emulator.clock.now,
            ...budget,
          },
  });
  const { channel, handlers } = feishu;
  // The production route list (routes.ts), as main.ts mounts it in feishu mode.
  const routes = serviceRoutes({ feishu, core, authSecret: AUTH_SECRET, logger, now: Date.now });
  const server: Server = createApp({
    ...core,
    logger,
    routes,
    ...(options.serverLimits ? { serverLimits: options.serverLimits } : {}),
  }).server;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const httpUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const hookUrl = `${httpUrl}/feishu/events`;
  // As main.ts does once it listens: resume unfinished runs, then repair ended runs' final cards.
  if (options.recover) {
    core.runner.recover();
    await channel.repairEnded();
  }
  const clients: TestClient[] = [];

  await feishu.ready;
  if (options.transport === "ws") emulator.subscribe({ mode: "long_connection" });
  else emulator.subscribe({ mode: "webhook", url: hookUrl });
  const deliver = (payload: unknown) => emulator.deliver(payload, { timeoutMs: 10_000 });
  const tokenFor = (userId: string, ttlMs = 60 * 60_000) =>
    signToken(AUTH_SECRET, userId, Date.now() + ttlMs);

  return {
    emulator,
    server,
    core,
    channel,
    handlers,
    db,
    dbFile,
    dataDir,
    httpUrl,
    hookUrl,
    logs,
    errors: () => logs.filter((line) => line.level >= 50),
    async say(input) {
      const payload = emulator.userMessage(input);
      const result = await deliver(payload);
      if (result.status !== 200)
        throw new Error(`webhook answered ${result.status}: ${JSON.stringify(result.body)}`);
      return { messageId: payload.event.message.message_id, result };
    },
    deliver,
    async click(input) {
      // As the Feishu client: the answer's card is applied to the message (unless a PATCH overtook it).
      const outcome = await emulator.click(input, { timeoutMs: 10_000 });
      if (outcome.status === undefined) throw new Error(`the click got no answer: ${outcome.error}`);
      const answer = outcome.answer;
      const body = (typeof answer === "object" && answer !== null ? answer : {}) as CallbackBody;
      // Feishu's client refuses (200673) an answer whose card breaks the card rules: judge it as the emulator would.
      const verdict = body.card ? checkCard(body.card.data) : undefined;
      if (verdict && !verdict.ok)
        throw new Error(`the callback answer's card would be refused: ${verdict.summary}`);
      return { ...body, status: outcome.status, durationMs: outcome.durationMs };
    },
    progressCard(userMessageId, waitMs = 10_000) {
      return until(
        () => cardReplyingTo(emulator, userMessageId),
        `a card replying to ${userMessageId}`,
        waitMs,
      );
    },
    cardOf(messageId) {
      const message = emulator.messages.getMessage(messageId);
      if (!message) throw new Error(`no message ${messageId}`);
      return JSON.parse(message.content) as Card;
    },
    tokenFor,
    async connect(userId) {
      const ws = new WebSocket(`${httpUrl.replace("http", "ws")}/ws?token=${tokenFor(userId)}`);
      const client = new TestClient(ws);
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("websocket did not open")), 5000);
        ws.once("open", () => {
          clearTimeout(timer);
          resolve();
        });
        ws.once("unexpected-response", (_req, res) =>
          reject(new Error(`upgrade refused: ${res.statusCode}`)),
        );
      });
      clients.push(client);
      return client;
    },
    upgrade(credentials) {
      const url = new URL(`${httpUrl.replace("http", "ws")}/ws`);
      if (credentials.token !== undefined) url.searchParams.set("token", credentials.token);
      const headers: Record<string, string> = {};
      if (credentials.cookie) headers.cookie = credentials.cookie;
      if (credentials.origin) headers.origin = credentials.origin;
      const ws = new WebSocket(url, { headers });
      return new Promise<TestClient | number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("upgrade neither opened nor was refused")), 5000);
        ws.once("open", () => {
          clearTimeout(timer);
          const client = new TestClient(ws);
          clients.push(client);
          resolve(client);
        });
        ws.once("unexpected-response", (req, res) => {
          clearTimeout(timer);
          res.resume();
          req.destroy();
          resolve(res.statusCode ?? 0);
        });
        ws.on("error", () => undefined);
      });
    },
    privateSessionId: (userId) => `feishu-${emulator.appId}-private-${userId}`,
    groupSessionId: (chatId = GROUP_CHAT) => `feishu-${emulator.appId}-group-${chatId}`,
    async stop() {
      for (const client of clients) client.ws.terminate();
      await core.runner.stop();
      await feishu.close();
      await core.hub.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      db.close();
      if (!options.emulator) await emulator.close();
    },
  };
}

export { formsOn, requestIdsOn } from "../../helpers/feishu.ts";

/** The completed state: the green header. */
export const isCompleted = (card: Card) => card.header?.template === "green";

/** The value the submit button of an ask's form carries. */
export function submitValue(sessionId: string, requestId: string, sender: string) {
  return { kind: "feishu_ask", act: "submit", sessionId, requestId, sender };
}
