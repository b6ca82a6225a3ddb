import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, vi } from "vitest";
import { z } from "zod";
import type { Card } from "../../src/cards/model.ts";
import { type Core, createCore } from "../../src/core.ts";
import type { FeishuChannel } from "../../src/feishu/channel.ts";
import type { FeishuChannelOptions } from "../../src/feishu/channel-options.ts";
import { createAppLimiter } from "../../src/feishu/limits.ts";
import { createFeishuRuntime } from "../../src/feishu/runtime.ts";
import { answerCardAction, DEFAULT_CALLBACK_BUDGET_MS, deliverMessage } from "../../src/feishu/transport.ts";
import type { Agent } from "../../src/harness/agents/agent.ts";
import { createDemoAgent, createDemoTools } from "../../src/harness/agents/demo.ts";
import type { ToolImpl } from "../../src/harness/dispatcher.ts";
import type { CardActionInput, MessageView, UserMessageInput } from "../../src/local/emulator/types.ts";
import { createLogger, type Logger } from "../../src/logger.ts";
import { openDatabase } from "../../src/store/db.ts";
import { FeishuStore } from "../../src/store/feishu.ts";
import { FakeCardKit } from "../../src/testing/fake-cardkit.ts";
import {
  applyCallbackCard,
  beforeCallback,
  cardAction,
  revertUpdatesDuring,
  userMessage,
} from "../../src/testing/fake-inbound.ts";
import { FakeMessenger } from "../../src/testing/fake-messenger.ts";

/**
 * The Feishu channel on fake time: wired as test/helpers/feishu.ts wires it (same options, same core), but
 * over the in-memory fake messenger and with events handed over by the transports' own shared code
 * (deliverMessage, answerCardAction with its settle delay) instead of a socket. Everything waits on
 * vitest's fake timers, so a scenario of minutes runs in milliseconds and the same way every time.
 *
 * The channel is built by createFeishuRuntime, as main.ts and the emulator rigs build it.
 * Call `vi.useFakeTimers()` before starting (and `vi.useRealTimers()` after stopping).
 */

export interface FakeChannelRig {
  fake: FakeMessenger;
  /** FEISHU_CARD_TRANSPORT=cardkit: the fake's CardKit (its entities show on the fake's messages). */
  cardkit: FakeCardKit | undefined;
  core: Core;
  channel: FeishuChannel;
  dataDir: string;
  dbFile: string;
  /**
   * A user's message, delivered as a transport does; returns its id at once, before the message is recorded
   * (await `deliver` to see the recording, or its refusal).
   */
  send(input: UserMessageInput): string;
  /** Builds a user's message without delivering it (to deliver it twice). */
  message(input: UserMessageInput): { messageId: string; data: Record<string, unknown> };
  /** Resolves once the message is recorded (the transport's ack); rejects as the transport would refuse it. */
  deliver(data: Record<string, unknown>): Promise<void>;
  /** A click as the Feishu client makes it: answered within the budget, its card applied, then settled. */
  click(
    input: CardActionInput,
  ): Promise<{ toast?: { type: string; content: string }; card?: { data: Card } }>;
  progressCard(userMessageId: string): Promise<string>;
  /** What every member sees, or `viewer` (who may still see a callback's card the others do not). */
  cardOf(messageId: string, viewer?: string): Card;
  /** The bot's messages (cards and texts), oldest first. */
  fromBot(): MessageView[];
  /** Moves fake time on until `probe` holds; fails after `limitMs` of fake time. */
  until<T>(
    probe: () => T | undefined | false | Promise<T | undefined | false>,
    what: string,
    limitMs?: number,
  ): Promise<T>;
  /** Awaits `work` while fake time moves on (anything that waits on the channel's timers). */
  drive<T>(work: Promise<T>, limitMs?: number): Promise<T>;
  /** Waits for the channel's background work and cards to land, on fake time. */
  idle(): Promise<void>;
  stop(): Promise<void>;
  /**
   * The process dies (SIGKILL, OOM): nothing is flushed, every timer it had is dropped unrun, the database is
   * closed as it is. The fake (the platform) stays. Only for a rig started last: the timers are all vitest's.
   */
  kill(): Promise<void>;
}

export interface FakeChannelOptions {
  agent?: Agent;
  tools?: ToolImpl[];
  stepMs?: number;
  askTimeoutMs?: number;
  dataDir?: string;
  /** The platform, kept across a restart (as the emulator is). */
  fake?: FakeMessenger;
  askPing?: boolean;
  cardPatchIntervalMs?: number;
  recover?: boolean;
  /** The wait after a callback's answer before its card's next PATCH (production 1000). */
  settleMs?: number;
  asks?: FeishuChannelOptions["asks"];
  /** FEISHU_REPLY_IN_THREAD=on: a task from a plain group message answers in a new thread under it. */
  replyInThread?: boolean;
  /** The /login link (private chats get it; groups are told to ask privately). */
  signInLink?: FeishuChannelOptions["signInLink"];
  /** The public URL as main.ts gives it (live: with PORT=0 it throws until the server listens). */
  publicUrl?: () => string;
  /** Where the service logs (default: silent); a test that reads the log lines passes its own. */
  logger?: Logger;
  /** CARD_FOOTER (default on). */
  cardFooter?: boolean;
  /** FEISHU_CARD_TRANSPORT (default `im`): `cardkit` makes progress cards CardKit entities on the fake. */
  cardTransport?: "im" | "cardkit";
  /** The app's allow-list (FEISHU_ALLOWED_USERS / _CHATS). */
  allow?: { users: readonly string[]; chats: readonly string[] };
  /** The fake's CardKit, kept across a restart with `fake` (default: a new one over `fake`). */
  cardkit?: FakeCardKit;
}

/** The card transports (FEISHU_CARD_TRANSPORT) the scenario suites run on, each (issue 29: "run them twice"). */
export const CARD_TRANSPORTS = ["im", "cardkit"] as const;
export type CardTransportName = (typeof CARD_TRANSPORTS)[number];

/** The transport a rig started without `cardTransport` uses: `im`, or the one `eachTransport` runs. */
let defaultTransport: CardTransportName = "im";

/**
 * The suites in `body` once per card transport: every rig started inside without a `cardTransport` of its own
 * uses that transport (so a suite is written once, about what the user sees, and runs on both).
 */
export function eachTransport(body: (transport: CardTransportName) => void): void {
  describe.each(CARD_TRANSPORTS)("on the %s card transport", (transport) => {
    beforeEach(() => {
      defaultTransport = transport;
    });
    afterEach(() => {
      defaultTransport = "im";
    });
    body(transport);
  });
}

/** One tick of fake time between looks at the world: short next to every interval the channel uses. */
const TICK_MS = 10;

const answerSchema = z.object({
  toast: z.object({ type: z.string(), content: z.string() }).optional(),
  card: z
    .object({ type: z.literal("raw"), data: z.custom<Card>((v) => typeof v === "object" && v !== null) })
    .optional(),
});

export async function startFakeChannel(options: FakeChannelOptions = {}): Promise<FakeChannelRig> {
  if (!vi.isFakeTimers()) throw new Error("startFakeChannel: call vi.useFakeTimers() first");
  const fake = options.fake ?? new FakeMessenger({ timeoutMs: 5000 });
  const settleMs = options.settleMs ?? 20;
  const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), "fpb-fake-"));
  const dbFile = path.join(dataDir, "bot.sqlite");
  const db = openDatabase(dbFile);
  const logger = options.logger ?? createLogger({ level: "silent" });
  // Clocks are read through Date.now at each call, so they follow vi.setSystemTime and advancing timers.
  const now = () => Date.now();
  const core = await createCore({
    db,
    logger,
    now,
    agent: options.agent ?? createDemoAgent(),
    tools: options.tools ?? createDemoTools({ stepMs: options.stepMs ?? 5 }),
    askTimeoutMs: options.askTimeoutMs ?? 60_000,
    authSecret: "test-secret-0123456789",
  });
  // The production wiring (createFeishuRuntime), over the fake and with no transport: events are handed to
  // its handlers below by the transports' own shared code. The channel starts under drive() further down,
  // since starting reads the platform through the fake's timers.
  // The platform as this process reaches it: once the process is killed, nothing it still had under way
  // reaches the fake (a call never returns), as a dead process sends nothing.
  let dead = false;
  const reachable = <T extends object>(platform: T): T =>
    new Proxy(platform, {
      get(target, property) {
        const value: unknown = Reflect.get(target, property, target);
        if (typeof value !== "function") return value;
        return (...args: unknown[]) => (dead ? new Promise(() => undefined) : value.apply(target, args));
      },
    });
  const messenger = reachable(fake);
  const cardkit =
    (options.cardTransport ?? defaultTransport) === "cardkit" || options.cardkit
      ? (options.cardkit ?? new FakeCardKit(fake))
      : undefined;
  const starting = createFeishuRuntime({
    messenger,
    core,
    store: FeishuStore.onFile(db, now),
    appLimiter: createAppLimiter({ now }),
    logger,
    now,
    appId: fake.appId,
    dataDir,
    publicUrl: options.publicUrl ?? (() => "http://localhost:3000"),
    cardPatchIntervalMs: options.cardPatchIntervalMs ?? 200,
    askPing: options.askPing ?? true,
    requestTimeoutMs: fake.timeoutMs,
    inbound: { transport: "none" },
    ...(cardkit ? { cardkit: reachable(cardkit) } : {}),
    ...(options.asks ? { asks: options.asks } : {}),
    ...(options.replyInThread !== undefined ? { replyInThread: options.replyInThread } : {}),
    ...(options.signInLink ? { signInLink: options.signInLink } : {}),
    ...(options.cardFooter !== undefined ? { cardFooter: options.cardFooter } : {}),
    ...(options.allow ? { allow: options.allow } : {}),
  });

  const drive = async <T>(work: Promise<T>, limitMs = 120_000): Promise<T> => {
    let outcome: { ok: true; value: T } | { ok: false; error: unknown } | undefined;
    void work.then(
      (value) => {
        outcome = { ok: true, value };
      },
      (error: unknown) => {
        outcome = { ok: false, error };
      },
    );
    const deadline = Date.now() + limitMs;
    for (;;) {
      // Let what is already resolved run before moving time.
      await vi.advanceTimersByTimeAsync(0);
      if (outcome?.ok) return outcome.value;
      if (outcome) throw outcome.error;
      if (Date.now() > deadline) throw new Error(`still waiting after ${limitMs} ms of fake time`);
      await vi.advanceTimersByTimeAsync(TICK_MS);
    }
  };
  const until = async <T>(
    probe: () => T | undefined | false | Promise<T | undefined | false>,
    what: string,
    limitMs = 120_000,
  ): Promise<T> => {
    const deadline = Date.now() + limitMs;
    for (;;) {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
      if (Date.now() > deadline)
        throw new Error(`timed out after ${limitMs} ms of fake time waiting for ${what}`);
      await vi.advanceTimersByTimeAsync(TICK_MS);
    }
  };

  const runtime = await drive(starting);
  const { channel, handlers } = runtime;
  // As main.ts does once it listens: resume unfinished runs, then repair ended runs' final cards.
  if (options.recover) {
    await core.runner.recover();
    await channel.repairEnded();
  }

  const rig: FakeChannelRig = {
    fake,
    cardkit,
    core,
    channel,
    dataDir,
    dbFile,
    send(input) {
      const { messageId, data } = userMessage(fake, input);
      // A refusal is the test's to see through `deliver`; here it is logged by deliverMessage.
      deliverMessage(handlers, data, logger).catch(() => undefined);
      return messageId;
    },
    message: (input) => userMessage(fake, input),
    deliver: (data) => deliverMessage(handlers, data, logger),
    async click(input) {
      // As emulator.click: an update that landed while the callback was answered is reverted, and the
      // answer's card is shown to the clicker alone.
      const before = beforeCallback(fake, input.messageId);
      // Every CardKit operation on the clicked card gets 200810 until the answer is in (feishu-platform §2.3).
      cardkit?.callbackStarted(input.messageId);
      const answered = await drive(
        answerCardAction(handlers, cardAction(fake, input), {
          budgetMs: DEFAULT_CALLBACK_BUDGET_MS,
          logger,
          settleMs,
        }),
      ).finally(() => cardkit?.callbackEnded(input.messageId));
      const body = answerSchema.parse(answered.response);
      revertUpdatesDuring(fake, input.messageId, before);
      if (body.card) {
        const applied = applyCallbackCard(fake, input.messageId, body.card.data, input.operatorOpenId);
        if (!applied.ok) throw new Error(`the callback answer's card would be refused: ${applied.reason}`);
      }
      answered.sent(true);
      return {
        ...(body.toast ? { toast: body.toast } : {}),
        ...(body.card ? { card: { data: body.card.data } } : {}),
      };
    },
    progressCard: (userMessageId) =>
      until(
        () =>
          fake
            .messages()
            .find(
              (m) => m.parentId === userMessageId && m.msgType === "interactive" && m.senderType === "app",
            )?.messageId,
        `a card replying to ${userMessageId}`,
      ),
    cardOf: (messageId, viewer) => fake.cardOf(messageId, viewer),
    fromBot: () => fake.messages().filter((m) => m.senderType === "app"),
    until,
    drive,
    idle: () => drive(channel.idle()),
    async kill() {
      dead = true;
      // clearAllTimers also puts the fake clock back to where it started: time itself goes on.
      const now = Date.now();
      vi.clearAllTimers();
      vi.setSystemTime(now);
      db.close();
      // Sockets of the hub only (no Feishu call): released so the test worker does not keep them.
      await core.hub.close();
    },
    async stop() {
      await drive(core.runner.stop());
      await drive(channel.idle());
      await drive(runtime.close());
      await drive(core.hub.close());
      db.close();
    },
  };
  return rig;
}
