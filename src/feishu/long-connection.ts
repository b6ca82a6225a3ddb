import * as lark from "@larksuiteoapi/node-sdk";
import { ConfigError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { resolveDomain, sdkLogger } from "./lark-messenger.ts";
import type { ConnectionState } from "./metrics.ts";
import {
  answerCardAction,
  DEFAULT_CALLBACK_BUDGET_MS,
  deliverMessage,
  type FeishuEventHandlers,
} from "./transport.ts";

/**
 * Feishu's long-connection transport (feishu-platform §2.5, §4.4): the SDK's WSClient pulls events and
 * callbacks over a WebSocket and sends each handler's return value back in the same frame. No crypto here:
 * the connection authenticates once with the app secret and payloads arrive in plaintext.
 */

/** WSClient.start() only logs and returns for other app ids (§4.4); we fail loudly instead. */
const APP_ID = /^cli_[0-9a-fA-F]{16}$/;

type Flat = Record<string, unknown>;

export function createEventDispatcher(
  handlers: FeishuEventHandlers,
  logger: Logger,
  options: { callbackBudgetMs?: number; settleMs?: number } = {},
): lark.EventDispatcher {
  const log = logger.child({ module: "feishu-long-connection" });
  // No encryptKey: WSClient invokes with needCheck:false and the frames are not encrypted.
  const dispatcher = new lark.EventDispatcher({
    logger: sdkLogger(logger),
    loggerLevel: lark.LoggerLevel.warn,
  });
  // card.action.trigger is not in the SDK's generated handler typings (§4.3), hence the type argument.
  return dispatcher.register<{ "card.action.trigger": (data: Flat) => Promise<Flat> }>({
    // Resolve once recorded: the SDK acks the frame only after the handler resolves, and a late ack is
    // redelivered (§5). A rejection (not recorded) makes the SDK answer code 500, and Feishu redelivers it.
    "im.message.receive_v1": async (data: Flat) => {
      await deliverMessage(handlers, data, log);
    },
    "card.action.trigger": async (data: Flat) => {
      const answer = await answerCardAction(handlers, data, {
        budgetMs: options.callbackBudgetMs ?? DEFAULT_CALLBACK_BUDGET_MS,
        logger: log,
        ...(options.settleMs === undefined ? {} : { settleMs: options.settleMs }),
      });
      // WSClient has no "sent" hook: it encodes the ack and hands it to the socket in the microtasks right
      // after this handler resolves, so by the next macrotask the answer is out. The settle delay counts
      // from there (docs/long-connection.md §Settle).
      setImmediate(answer.sent);
      // Never undefined: WSClient would send a frame with no data, which may count as a malformed answer.
      return answer.response;
    },
  });
}

export interface LongConnectionOptions {
  appId: string;
  appSecret: string;
  /** "feishu", "lark" or a base URL. */
  domain: string;
  handlers: FeishuEventHandlers;
  logger: Logger;
  callbackBudgetMs?: number;
  /** Wait after a callback's answer before the card's next PATCH (default DEFAULT_SETTLE_MS). */
  settleMs?: number;
  /** The SDK gave up for good; without this the bot would silently hear nothing more. */
  onFatal?: (error: unknown) => void;
  /** Each change of the connection's state (for `/metrics`). */
  onState?: (state: ConnectionState) => void;
}

/** Throws the ConfigError the long connection would, before anything is started. */
export function checkLongConnectionAppId(appId: string): void {
  if (!APP_ID.test(appId)) {
    throw new ConfigError(
      `FEISHU_APP_ID must look like cli_ followed by 16 hex digits for the long connection`,
    );
  }
}

export function startLongConnection(options: LongConnectionOptions): {
  /** Resolves once the first connection is up (never rejects; a fatal failure goes to onFatal). */
  ready: Promise<void>;
  close(): void;
} {
  checkLongConnectionAppId(options.appId);
  const log = options.logger.child({ module: "feishu-long-connection" });
  let markReady = () => {};
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  const client = new lark.WSClient({
    appId: options.appId,
    appSecret: options.appSecret,
    domain: resolveDomain(options.domain),
    logger: sdkLogger(options.logger),
    // LoggerLevel.fatal (0) would be ignored as falsy (§4.1); info keeps connect/reconnect lines.
    loggerLevel: lark.LoggerLevel.info,
    handshakeTimeoutMs: 15_000,
    onReady: () => {
      log.debug("long connection ready");
      markReady();
      options.onState?.("ready");
    },
    // Called when the SDK gives up (bad credentials or retries exhausted): the bot hears nothing from now on.
    onError: (error) => {
      log.error({ err: error }, "long connection failed");
      options.onState?.("failed");
      options.onFatal?.(error);
    },
    onReconnecting: () => {
      log.warn("long connection lost; reconnecting");
      options.onState?.("reconnecting");
    },
    onReconnected: () => {
      log.info("long connection restored");
      options.onState?.("ready");
    },
  });
  options.onState?.("connecting");
  const dispatcher = createEventDispatcher(options.handlers, options.logger, {
    ...(options.callbackBudgetMs === undefined ? {} : { callbackBudgetMs: options.callbackBudgetMs }),
    ...(options.settleMs === undefined ? {} : { settleMs: options.settleMs }),
  });
  client
    .start({ eventDispatcher: dispatcher })
    .catch((error: unknown) => log.error({ err: error }, "long connection failed to start"));
  return {
    ready,
    close: () => {
      client.close({ force: true });
      options.onState?.("closed");
    },
  };
}
