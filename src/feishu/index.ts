import path from "node:path";
import type { Config, FeishuSettings, RunnableConfig } from "../config.ts";
import type { Logger } from "../logger.ts";
import { createLarkCardKit } from "./cardkit/api.ts";
import type { FeishuCluster } from "./cluster-options.ts";
import { createLarkMessenger } from "./lark-messenger.ts";
import type { ConnectionState, FeishuMetrics } from "./metrics.ts";
import { createFeishuRuntime, type FeishuCore, type FeishuRuntime } from "./runtime.ts";
import { webhookPathsFor } from "./webhook.ts";

export type { FeishuRuntime } from "./runtime.ts";

/**
 * Wires the Feishu channel into the core from the configuration: the messenger over the SDK, and the
 * configured transport (long connection by default; webhook with an encrypt key). The wiring itself is
 * createFeishuRuntime's (runtime.ts), shared with the test rigs.
 */
type StartOptions = {
  config: Pick<RunnableConfig, "feishu" | "dataDir" | "publicUrl" | "cardPatchIntervalMs" | "detailsLinks"> &
    Partial<Pick<RunnableConfig, "asks" | "workspacesDir" | "cardFooter" | "apps">>;
  /** The live public URL (public-url.ts PublicAddress): with PORT=0 it is known only after listen. */
  publicUrl?: () => string;
  core: FeishuCore;
  logger: Logger;
  now: () => number;
  /** The long connection was lost for good (bad credentials, retries exhausted). */
  onFatal?: (error: unknown) => void;
  /** Personal sign-in links for /login in a private chat (auth/link.ts). */
  signInLink?: (userId: string) => Promise<{ url: string; expiresAt: number }>;
  /** Where the channel reports PATCHes, callbacks, limiter waits and the connection (`/metrics`). */
  metrics?: FeishuMetrics;
  /** One of several instances on one Postgres (issue 27): the budget shared, one long connection per app. */
  cluster?: FeishuCluster;
};

/** Every app's runtime, run as one: what main.ts starts, routes, repairs and closes. */
export interface FeishuApps {
  /** One per app, the first first. */
  runtimes: FeishuRuntime[];
  routes: FeishuRuntime["routes"];
  /** Resolves once every app can receive events. */
  ready: Promise<void>;
  repairEnded(): Promise<number>;
  /** Every app's runtime can serve (runtime.ts serving). */
  serving(): boolean;
  close(): Promise<void>;
}

/**
 * Several Feishu apps in one process (issue 30): one runtime per app of the configuration (`apps`, else the one
 * app), each with its own messenger, token, rate budget (Feishu's limits are per app), long connection or
 * webhook path, and channel. The first keeps `POST /feishu/events`; each also answers at `/feishu/<app id>/events`.
 */
export async function startFeishuApps(options: StartOptions): Promise<FeishuApps> {
  const apps = options.config.apps ?? [options.config.feishu];
  const metrics = options.metrics ? perAppMetrics(options.metrics, apps.length) : undefined;
  const runtimes: FeishuRuntime[] = [];
  try {
    for (const [i, app] of apps.entries()) {
      const logger = apps.length > 1 ? options.logger.child({ appId: app.appId }) : options.logger;
      // Two bots in one group are two sessions, and two agents: each app after the first works in a folder of
      // its own (`WORKSPACES_DIR/apps/<app id>/…`), so they never write in each other's. The first app keeps
      // the paths a single-app setup always had.
      const base = options.config.workspacesDir ?? path.join(options.config.dataDir, "workspaces");
      const workspacesDir = i === 0 ? options.config.workspacesDir : path.join(base, "apps", app.appId);
      const config = { ...options.config, ...(workspacesDir !== undefined ? { workspacesDir } : {}) };
      runtimes.push(
        await startFeishu(
          { ...options, config, logger, ...(metrics ? { metrics: metrics[i] } : {}) },
          { app, first: i === 0, paths: webhookPathsFor(app.appId, i === 0) },
        ),
      );
    }
  } catch (error) {
    // An app that cannot start (bad secret, no bot) stops the start-up; those already started are closed.
    await Promise.allSettled(runtimes.map((runtime) => runtime.close()));
    throw error;
  }
  return {
    runtimes,
    routes: runtimes.flatMap((runtime) => runtime.routes),
    ready: Promise.all(runtimes.map((runtime) => runtime.ready)).then(() => undefined),
    repairEnded: async () => {
      const repaired = await Promise.all(runtimes.map((runtime) => runtime.repairEnded()));
      return repaired.reduce((sum, count) => sum + count, 0);
    },
    serving: () => runtimes.every((runtime) => runtime.serving()),
    async close() {
      await Promise.allSettled(runtimes.map((runtime) => runtime.close()));
    },
  };
}

export async function startFeishu(
  options: StartOptions,
  which?: { app: FeishuSettings; first: boolean; paths?: string[] },
): Promise<FeishuRuntime> {
  const { config, core, logger, now } = options;
  const feishu = which?.app ?? config.feishu;
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
    firstApp: which?.first ?? true,
    ...(feishu.allow ? { allow: feishu.allow } : {}),
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
    ...(options.cluster ? { cluster: options.cluster } : {}),
    inbound:
      feishu.transport === "webhook"
        ? {
            transport: "webhook",
            encryptKey: feishu.encryptKey,
            ...(which?.paths ? { paths: which.paths, appId } : {}),
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

/**
 * The service's one set of Feishu series, fed by several apps: the limiter gauge reads every app's queue, and
 * the connection gauge shows the worst of the apps' long connections (one app down is the bot half deaf).
 */
function perAppMetrics(metrics: FeishuMetrics, count: number): FeishuMetrics[] {
  if (count === 1) return [metrics];
  const pendings: (() => number)[] = [];
  metrics.limiterQueue(() => pendings.reduce((sum, pending) => sum + pending(), 0));
  const states: (ConnectionState | undefined)[] = new Array(count).fill(undefined);
  const WORST: ConnectionState[] = ["failed", "closed", "reconnecting", "connecting", "standby", "ready"];
  return states.map((_, i) => ({
    ...metrics,
    limiterQueue: (pending) => {
      pendings.push(pending);
    },
    connection: (state) => {
      states[i] = state;
      const worst = WORST.find((candidate) => states.includes(candidate));
      if (worst) metrics.connection(worst);
    },
  }));
}
