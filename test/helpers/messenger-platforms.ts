import { createLarkMessenger } from "../../src/feishu/lark-messenger.ts";
import type { FeishuMessenger } from "../../src/feishu/messenger.ts";
import { type Emulator, startEmulator } from "../../src/local/emulator/index.ts";
import type { MessageView, UserMessageInput } from "../../src/local/emulator/types.ts";
import { createLogger } from "../../src/logger.ts";
import type { FakeFaultResponse, MessengerMethod } from "../../src/testing/fake-faults.ts";
import { userMessage } from "../../src/testing/fake-inbound.ts";
import { FakeMessenger } from "../../src/testing/fake-messenger.ts";

/**
 * The two platforms test/messenger-contract.test.ts runs its cases against: the fake messenger, and the SDK
 * messenger over the emulator, each behind the same handles (a user's message, a recall, a fault, the clock).
 */

export interface Platform {
  messenger: FeishuMessenger;
  botOpenId: string;
  botName: string;
  userMessage(input: UserMessageInput): string;
  recall(messageId: string): void;
  stored(messageId: string): MessageView | undefined;
  fault(
    method: MessengerMethod,
    response: FakeFaultResponse,
    /** `inThread`: only replies sent into a thread (`reply_in_thread`), cards and texts. */
    options?: { times?: number; messageId?: string; bodyIncludes?: string; inThread?: true },
  ): void;
  expireTokens(): void;
  tokenFetches(): number;
  advance(ms: number): void;
  close(): Promise<void>;
}

export interface PlatformOptions {
  appCallsPerSecond?: number;
  /** The tenant's people, by open_id (获取单个用户信息). */
  userNames?: Record<string, string>;
}

/** The time both platforms start at; frozen unless a case advances it, so rate windows are exact. */
const T0 = Date.UTC(2026, 11, 1, 12);
// Long enough that a loaded machine never times out an ordinary call (300 ms once failed the first token fetch
// beside the suite), short enough that the slow-call case stays quick.
export const TIMEOUT_MS = 1500;

export async function emulatorPlatform(options: PlatformOptions): Promise<Platform> {
  let now = T0;
  const emulator: Emulator = await startEmulator({ now: () => now, ...options });
  const messenger = createLarkMessenger({
    appId: emulator.appId,
    appSecret: emulator.appSecret,
    domain: emulator.url,
    logger: createLogger({ level: "silent" }),
    timeoutMs: TIMEOUT_MS,
  });
  const paths: Record<MessengerMethod, [string, (id: string) => RegExp]> = {
    replyCard: ["POST", (id) => new RegExp(`^/open-apis/im/v1/messages/${id}/reply$`)],
    sendCard: ["POST", () => /^\/open-apis\/im\/v1\/messages$/],
    sendText: ["POST", () => /^\/open-apis\/im\/v1\/messages$/],
    patchCard: ["PATCH", (id) => new RegExp(`^/open-apis/im/v1/messages/${id}$`)],
    editText: ["PUT", (id) => new RegExp(`^/open-apis/im/v1/messages/${id}$`)],
    recall: ["DELETE", (id) => new RegExp(`^/open-apis/im/v1/messages/${id}$`)],
    messageStatus: ["GET", (id) => new RegExp(`^/open-apis/im/v1/messages/${id}$`)],
    botInfo: ["GET", () => /^\/open-apis\/bot\/v3\/info$/],
    userName: ["GET", () => /^\/open-apis\/contact\/v3\/users\/[^/]+$/],
  };
  return {
    messenger,
    botOpenId: emulator.botOpenId,
    botName: emulator.botName,
    userMessage: (input) => emulator.userMessage(input).event.message.message_id,
    recall: (id) => void emulator.recall(id),
    stored: (id) => emulator.messages.getMessage(id),
    fault(method, response, { times = 1, messageId = "[^/]+", bodyIncludes, inThread } = {}) {
      const [httpMethod, path] = paths[method];
      const { resetSeconds, ...rest } =
        "delayMs" in response ? { resetSeconds: undefined, delayMs: response.delayMs } : response;
      emulator.injectFault({
        // A delay that lands late holds the call after its body was read (faults with bodyIncludes run then).
        match: {
          method: httpMethod,
          // A thread reply is a reply whichever method sent it (a text with replyTo too).
          path: inThread ? new RegExp(`^/open-apis/im/v1/messages/${messageId}/reply$`) : path(messageId),
          ...("landsLate" in response && response.landsLate ? { bodyIncludes: "" } : {}),
          ...(bodyIncludes !== undefined ? { bodyIncludes } : {}),
          // The SDK messenger's reply body carries the flag only when asked (lark-messenger.ts).
          ...(inThread ? { bodyIncludes: '"reply_in_thread":true' } : {}),
        },
        times,
        response:
          "delayMs" in rest
            ? rest
            : {
                httpStatus: rest.httpStatus ?? 400,
                ...(rest.code !== undefined ? { code: rest.code } : {}),
                ...(rest.msg !== undefined ? { msg: rest.msg } : {}),
                ...(resetSeconds !== undefined
                  ? { headers: { "x-ogw-ratelimit-reset": String(resetSeconds) } }
                  : {}),
              },
      });
    },
    expireTokens: () => emulator.expireTokens(),
    tokenFetches: () => emulator.callsTo("POST", "/open-apis/auth/v3/tenant_access_token/internal").length,
    advance: (ms) => {
      now += ms;
    },
    close: () => emulator.close(),
  };
}

export async function fakePlatform(options: PlatformOptions): Promise<Platform> {
  let now = T0;
  const fake = new FakeMessenger({ now: () => now, timeoutMs: TIMEOUT_MS, ...options });
  return {
    messenger: fake,
    botOpenId: fake.botOpenId,
    botName: fake.botName,
    userMessage: (input) => userMessage(fake, input).messageId,
    recall: (id) => void fake.recallMessage(id),
    stored: (id) => fake.message(id),
    fault: (method, response, { times = 1, messageId, bodyIncludes, inThread } = {}) =>
      void fake.fail({
        method,
        times,
        response,
        ...(messageId ? { messageId } : {}),
        ...(bodyIncludes !== undefined ? { bodyIncludes } : {}),
        ...(inThread ? { inThread } : {}),
      }),
    expireTokens: () => fake.expireTokens(),
    tokenFetches: () => fake.tokenFetches,
    advance: (ms) => {
      now += ms;
    },
    close: async () => undefined,
  };
}
