import type { Config, RunnableConfig } from "../config.ts";
import type { Logger } from "../logger.ts";
import { createLarkCardKit } from "./cardkit/api.ts";
import { createLarkMessenger } from "./lark-messenger.ts";
import type { FeishuMetrics } from "./metrics.ts";
import { createFeishuRuntime, type FeishuCore, type FeishuRuntime } from "./runtime.ts";

export type { FeishuRuntime } from "./runtime.ts";

/**
 * Wires the Feishu channel into the core from the configuration: the messenger over the SDK, and the
 * configured transport (long connection by default; webhook with an encrypt key). The wiring itself is
 * createFeishuRuntime's (runtime.ts), shared with the test rigs.
 */
export async function startFeishu(options: {
  config: Pick<RunnableConfig, "feishu" | "dataDir" | "publicUrl" | "cardPatchIntervalMs" | "detailsLinks"> &
    Partial<Pick<RunnableConfig, "asks" | "workspacesDir" | "cardFooter">>;
  /** The live public URL (public-url.ts PublicAddress): with PORT=0 it is known only after listen. */
  publicUrl?: () => string;
  core: FeishuCore;
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
  const { feishu } = config;
  // Credentials are there by type (config.ts): feishu mode refuses to load without them.
  const { appId, appSecret, domain } = feishu;
  const publicUrl = detailsLinkBase(config, logger, options.publicUrl);
  const settleMs = feishu.callbackSettleMs;
  return createFeishuRuntime({
    messenger: createLarkMessenger({ appId, appSecret, domain, logger }),
    // FEISHU_CARD_TRANSPORT=cardkit: progress cards as CardKit entities, IM PATCH when CardKit refuses.
    ...(feishu.cardTransport === "cardkit"
      ? { cardkit: createLarkCardKit({ appId, appSecret, domain, logger }) }
      : {}),
    core,
    logger,
    now,
    appId,
    dataDir: config.dataDir,
    ...(config.workspacesDir !== undefined ? { workspacesDir: config.workspacesDir } : {}),
    ...(publicUrl !== undefined ? { publicUrl } : {}),
    cardPatchIntervalMs: config.cardPatchIntervalMs,
    ...(config.cardFooter !== undefined ? { cardFooter: config.cardFooter } : {}),
    askPing: feishu.askPing,
    replyInThread: feishu.replyInThread,
    ...(config.asks ? { asks: config.asks } : {}),
    ...(options.signInLink ? { signInLink: options.signInLink } : {}),
    ...(options.metrics ? { metrics: options.metrics } : {}),
    inbound:
      feishu.transport === "webhook"
        ? {
            transport: "webhook",
            encryptKey: feishu.encryptKey,
            ...(feishu.verificationToken ? { verificationToken: feishu.verificationToken } : {}),
            settleMs,
          }
        : {
            transport: "ws",
            appId,
            appSecret,
            domain,
            settleMs,
            ...(options.onFatal ? { onFatal: options.onFatal } : {}),
          },
  });
}

/**
 * The base of the cards' 会话详情 link, or undefined (with a start-up warning) in feishu mode without
 * PUBLIC_URL: the default http://localhost:PORT would be a dead link on a real tenant. A getter, read at
 * each render: without PUBLIC_URL the port is the one bound (PORT=0 picks it at listen).
 */
export function detailsLinkBase(
  config: Pick<Config, "publicUrl" | "detailsLinks">,
  logger: Logger,
  live: () => string = () => config.publicUrl,
): (() => string) | undefined {
  if (config.detailsLinks) return live;
  // No address in the line: before listen, PORT=0's default would read localhost:0.
  logger.warn(
    "PUBLIC_URL is not set: progress cards carry no 会话详情 link; set PUBLIC_URL to the bot's public address",
  );
  return undefined;
}
