import type { Config } from "../config.ts";
import type { Core } from "../core.ts";
import type { Logger } from "../logger.ts";
import { FeishuStore } from "../store/feishu.ts";
import { handleCardAction } from "./card-actions.ts";
import { FeishuChannel } from "./channel.ts";
import { createLarkMessenger } from "./lark-messenger.ts";
import { createAppLimiter } from "./limits.ts";
import { startLongConnection } from "./long-connection.ts";
import { type FeishuMetrics, NO_FEISHU_METRICS } from "./metrics.ts";
import type { FeishuEventHandlers } from "./transport.ts";
import { mountFeishuWebhook } from "./webhook.ts";

export interface FeishuRuntime {
  channel: FeishuChannel;
  handlers: FeishuEventHandlers;
  /** Routes to mount on the HTTP app (the webhook, in webhook mode). */
  routes: ((app: import("express").Express) => void)[];
  /** Resolves once events can arrive: at once for the webhook, on the first connection for the long one. */
  ready: Promise<void>;
  close(): Promise<void>;
}

/**
 * Wires the Feishu channel into the core: the messenger over the SDK, the channel as an ask surface, and the
 * configured transport (long connection by default; webhook with an encrypt key).
 */
export async function startFeishu(options: {
  config: Pick<Config, "feishu" | "dataDir" | "publicUrl" | "cardPatchIntervalMs" | "detailsLinks"> &
    Partial<Pick<Config, "asks">>;
  core: Core;
  logger: Logger;
  now: () => number;
  /** The long connection was lost for good (bad credentials, retries exhausted). */
  onFatal?: (error: unknown) => void;
  /** Personal sign-in links for /login in a private chat (auth/link.ts). */
  signInLink?: (userId: string) => { url: string; expiresAt: number };
  /** Where the channel reports PATCHes, callbacks, limiter waits and the connection (`/metrics`). */
  metrics?: FeishuMetrics;
}): Promise<FeishuRuntime> {
  const { config, core, logger, now } = options;
  const metrics = options.metrics ?? NO_FEISHU_METRICS;
  const appLimiter = createAppLimiter({ onWait: metrics.limiterWait });
  metrics.limiterQueue(appLimiter.pending);
  const { appId, appSecret, domain, transport, encryptKey, verificationToken, askPing, callbackSettleMs } =
    config.feishu;
  if (!appId || !appSecret)
    throw new Error("FEISHU_APP_ID and FEISHU_APP_SECRET are required for the Feishu channel");
  const messenger = createLarkMessenger({ appId, appSecret, domain, logger });
  const publicUrl = detailsLinkBase(config, logger);
  const channel = new FeishuChannel({
    messenger,
    runner: core.runner,
    registry: core.registry,
    store: new FeishuStore(core.store.db, now),
    appLimiter,
    logger,
    now,
    appId,
    dataDir: config.dataDir,
    ...(publicUrl !== undefined ? { publicUrl } : {}),
    cardPatchIntervalMs: config.cardPatchIntervalMs,
    askPing,
    replyInThread: config.feishu.replyInThread,
    ...(config.asks ? { asks: config.asks } : {}),
    ...(options.signInLink ? { signInLink: options.signInLink } : {}),
    metrics,
  });
  core.dispatcher.addSurface(channel);
  await channel.start();
  const handlers: FeishuEventHandlers = {
    onMessage: (data) => channel.handleMessage(data),
    onCardAction: async (data) => {
      const startedAt = now();
      let outcome: "answered" | "failed" = "failed";
      try {
        const answer = await handleCardAction(channel, data, logger);
        outcome = "answered";
        return answer;
      } finally {
        metrics.callback(now() - startedAt, outcome);
      }
    },
  };
  const routes: FeishuRuntime["routes"] = [];
  let connection: { ready: Promise<void>; close(): void } | undefined;
  if (transport === "webhook") {
    if (!encryptKey) throw new Error("FEISHU_ENCRYPT_KEY is required with FEISHU_TRANSPORT=webhook");
    routes.push((app) =>
      mountFeishuWebhook(app, {
        encryptKey,
        ...(verificationToken ? { verificationToken } : {}),
        handlers,
        logger,
        now,
        settleMs: callbackSettleMs,
      }),
    );
  } else {
    connection = startLongConnection({
      appId,
      appSecret,
      domain,
      handlers,
      logger,
      settleMs: callbackSettleMs,
      ...(options.onFatal ? { onFatal: options.onFatal } : {}),
      onState: metrics.connection,
    });
  }
  return {
    channel,
    handlers,
    routes,
    ready: connection?.ready ?? Promise.resolve(),
    async close() {
      connection?.close();
      await channel.idle();
      channel.close();
    },
  };
}

/**
 * The base of the cards' 会话详情 link, or undefined (with a start-up warning) in feishu mode without
 * PUBLIC_URL: the default http://localhost:PORT would be a dead link on a real tenant.
 */
export function detailsLinkBase(
  config: Pick<Config, "publicUrl" | "detailsLinks">,
  logger: Logger,
): string | undefined {
  if (config.detailsLinks) return config.publicUrl;
  logger.warn(
    { publicUrl: config.publicUrl },
    "PUBLIC_URL is not set: progress cards carry no 会话详情 link; set PUBLIC_URL to the bot's public address",
  );
  return undefined;
}
