import type { Config } from "../config.ts";
import type { Core } from "../core.ts";
import type { Logger } from "../logger.ts";
import { FeishuStore } from "../store/feishu.ts";
import { handleCardAction } from "./card-actions.ts";
import { FeishuChannel } from "./channel.ts";
import { createLarkMessenger } from "./lark-messenger.ts";
import { createAppLimiter } from "./limits.ts";
import { startLongConnection } from "./long-connection.ts";
import type { FeishuEventHandlers } from "./transport.ts";
import { mountFeishuWebhook } from "./webhook.ts";

export interface FeishuRuntime {
  channel: FeishuChannel;
  handlers: FeishuEventHandlers;
  /** Routes to mount on the HTTP app (the webhook, in webhook mode). */
  routes: ((app: import("express").Express) => void)[];
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
}): Promise<FeishuRuntime> {
  const { config, core, logger, now } = options;
  const { appId, appSecret, domain, transport, encryptKey, verificationToken, askPing } = config.feishu;
  if (!appId || !appSecret)
    throw new Error("FEISHU_APP_ID and FEISHU_APP_SECRET are required for the Feishu channel");
  const messenger = createLarkMessenger({ appId, appSecret, domain, logger });
  const publicUrl = detailsLinkBase(config, logger);
  const channel = new FeishuChannel({
    messenger,
    runner: core.runner,
    registry: core.registry,
    store: new FeishuStore(core.store.db, now),
    appLimiter: createAppLimiter(),
    logger,
    now,
    appId,
    dataDir: config.dataDir,
    ...(publicUrl !== undefined ? { publicUrl } : {}),
    cardPatchIntervalMs: config.cardPatchIntervalMs,
    askPing,
    ...(config.asks ? { asks: config.asks } : {}),
    ...(options.signInLink ? { signInLink: options.signInLink } : {}),
  });
  core.dispatcher.addSurface(channel);
  await channel.start();
  const handlers: FeishuEventHandlers = {
    onMessage: (data) => channel.handleMessage(data),
    onCardAction: (data) => handleCardAction(channel, data, logger),
  };
  const routes: FeishuRuntime["routes"] = [];
  let connection: { close(): void } | undefined;
  if (transport === "webhook") {
    if (!encryptKey) throw new Error("FEISHU_ENCRYPT_KEY is required with FEISHU_TRANSPORT=webhook");
    routes.push((app) =>
      mountFeishuWebhook(app, {
        encryptKey,
        ...(verificationToken ? { verificationToken } : {}),
        handlers,
        logger,
        now,
      }),
    );
  } else {
    connection = startLongConnection({
      appId,
      appSecret,
      domain,
      handlers,
      logger,
      ...(options.onFatal ? { onFatal: options.onFatal } : {}),
    });
  }
  return {
    channel,
    handlers,
    routes,
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
