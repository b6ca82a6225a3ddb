import type { Express } from "express";
import type { AskRegistry } from "../asks/registry.ts";
import { HOLDER_DEFAULTS } from "../cluster/holder.ts";
import type { AskSurface, RunWriters, SessionRuns } from "../domain/ports.ts";
import type { RunFeed } from "../domain/run-feed.ts";
import { CardEntityStore } from "../store/cardkit.ts";
import { FeishuStore } from "../store/feishu.ts";
import type { StoreSql } from "../store/sql.ts";
import type { CardActionDeps } from "./card-action-deps.ts";
import { handleCardAction } from "./card-actions.ts";
import type { CardKitApi } from "./cardkit/api.ts";
import { FeishuChannel } from "./channel.ts";
import type { FeishuChannelOptions } from "./channel-options.ts";
import { createClusterLimiter, servingShare } from "./cluster-budget.ts";
import type { FeishuCluster } from "./cluster-options.ts";
import { startHeldConnection } from "./held-connection.ts";
import { createAppLimiter, type Limiter } from "./limits.ts";
import { type LongConnectionOptions, startLongConnection } from "./long-connection.ts";
import type { FeishuMessenger } from "./messenger.ts";
import { type FeishuMetrics, NO_FEISHU_METRICS } from "./metrics.ts";
import type { RepairScope } from "./progress/lifecycle.ts";
import { type Sweeper, startSweeper } from "./sweeper.ts";
import type { FeishuEventHandlers } from "./transport.ts";
import { type FeishuWebhookOptions, mountFeishuWebhook } from "./webhook.ts";

/**
 * The Feishu shell, wired once: the channel over any messenger (the SDK's, or a fake in tests), the card
 * callbacks with their dependencies named, the event handlers (with their metrics), and the transport that
 * feeds them. main.ts reaches it through startFeishu (index.ts); the test rigs call it directly with their
 * own messenger and knobs, so there is one wiring, not three.
 */

/** What the runtime uses of the core (core.ts), by shape. */
export interface FeishuCore {
  runner: SessionRuns<StoreSql>;
  /** Every run, the runner's and whatever joined (core.runs): what the cards follow. */
  runs: RunFeed;
  registry: AskRegistry;
  store: { sql: StoreSql };
  dispatcher: { addSurface(surface: AskSurface): void };
  /** Which runs this instance runs (core.ts); with several instances a card whose run went elsewhere stops. */
  ownership?: RunWriters;
}

/**
 * How events reach the handlers. `none`: nobody delivers them but the caller, through `handlers` (scenario
 * tests over a fake messenger). The webhook's `now` checks request timestamps (an emulator's clock in tests).
 */
export type FeishuInbound =
  | { transport: "none" }
  | ({ transport: "webhook" } & Omit<FeishuWebhookOptions, "handlers" | "logger" | "now"> & {
        now?: () => number;
      })
  | ({ transport: "ws" } & Omit<LongConnectionOptions, "handlers" | "logger" | "onState">);

export type FeishuRuntimeDeps = Omit<
  FeishuChannelOptions,
  "runner" | "runs" | "registry" | "store" | "appLimiter" | "cardkit"
> & {
  /** FEISHU_CARD_TRANSPORT=cardkit: the CardKit API the progress cards use (absent: IM PATCH). */
  cardkit?: CardKitApi;
  core: FeishuCore;
  inbound: FeishuInbound;
  /** Default: a store on the core's database. */
  store?: FeishuStore;
  /** The app-wide budget (default: the production limiter, reporting its waits to `metrics`). */
  appLimiter?: Limiter;
  /** PATCHes, callbacks, limiter waits and the connection, for `/metrics` (default: none). */
  metrics?: FeishuMetrics;
  /**
   * One of several instances behind the app (issue 27): the app's budget is shared (cluster-budget.ts) and
   * only the lease's holder opens the long connection (held-connection.ts). Absent: this process alone.
   */
  cluster?: FeishuCluster;
};

export interface FeishuRuntime {
  channel: FeishuChannel;
  messenger: FeishuMessenger;
  handlers: FeishuEventHandlers;
  /** Routes to mount on the HTTP app (the webhook, in webhook mode). */
  routes: ((app: Express) => void)[];
  /** Resolves once events can arrive: at once for the webhook, on the first connection for the long one. */
  ready: Promise<void>;
  /**
   * Called once the service listens: the final states a kill left unsent go out. Alone, now; with several
   * instances, by the app's sweeper, from its election on (sweeper.ts). Resolves to how many were sent now.
   */
  repairEnded(): Promise<number>;
  /**
   * Whether this instance can serve the app now: alone, always; one of several, once its share of the app's
   * budget lets it send cards (cluster-budget.ts servingShare). `/readyz` says it, and until then the other
   * instances adopt the runs and take the stored messages.
   */
  serving(): boolean;
  close(): Promise<void>;
}

export async function createFeishuRuntime(deps: FeishuRuntimeDeps): Promise<FeishuRuntime> {
  const { core, inbound, logger, now } = deps;
  const metrics = deps.metrics ?? NO_FEISHU_METRICS;
  const shared =
    deps.cluster && !deps.appLimiter
      ? createClusterLimiter({
          cluster: deps.cluster,
          appId: deps.appId,
          onWait: metrics.limiterWait,
          log: logger,
        })
      : undefined;
  if (shared) metrics.limiterQueue(shared.limiter.pending);
  const appLimiter = deps.appLimiter ?? shared?.limiter ?? ownLimiter(metrics);
  const first = deps.firstApp ?? true;
  // Each app's channel sees its own rows (several apps, issue 30); the first also owns what earlier versions wrote.
  const store = deps.store ?? new FeishuStore(core.store.sql, now, { appId: deps.appId, first });
  if (first) await store.claimUnowned();
  const entities = deps.cardkit ? new CardEntityStore(core.store.sql) : undefined;
  await entities?.prepare();
  const {
    core: _core,
    inbound: _inbound,
    store: _store,
    appLimiter: _limiter,
    cluster: _cluster,
    cardkit,
    ...channelOptions
  } = deps;
  const channel = new FeishuChannel({
    ...channelOptions,
    ...(entities && cardkit ? { cardkit: { api: cardkit, store: entities } } : {}),
    ...(deps.cluster?.callbacks ? { callbacks: deps.cluster.callbacks } : {}),
    ...(deps.cluster && core.ownership ? { ownership: core.ownership } : {}),
    runner: core.runner,
    runs: core.runs,
    registry: core.registry,
    store,
    appLimiter,
    metrics,
  });
  core.dispatcher.addSurface(channel);
  await channel.start();

  const actions: CardActionDeps = {
    runner: core.runner,
    registry: core.registry,
    store,
    cards: channel,
    ...(channel.remote ? { remote: channel.remote } : {}),
    queuedCards: channel.queuedCards,
    times: channel.times,
    now,
    appId: deps.appId,
  };
  const handlers: FeishuEventHandlers = {
    onMessage: (data) => channel.handleMessage(data),
    onCardAction: async (data) => {
      const startedAt = now();
      let outcome: "answered" | "failed" = "failed";
      try {
        const answer = await handleCardAction(actions, data, logger);
        outcome = "answered";
        return answer;
      } finally {
        metrics.callback(now() - startedAt, outcome);
      }
    },
  };

  const serving = () => shared === undefined || servingShare(shared.limits());
  const routes: FeishuRuntime["routes"] = [];
  let connection: { ready: Promise<void>; close(): void | Promise<void> } | undefined;
  let stopTaking: (() => void) | undefined;
  if (inbound.transport === "webhook") {
    const { transport: _t, now: webhookNow, ...webhook } = inbound;
    routes.push((app) => mountFeishuWebhook(app, { ...webhook, handlers, logger, now: webhookNow ?? now }));
  } else if (inbound.transport === "ws") {
    const { transport: _t, ...connect } = inbound;
    const options = { ...connect, handlers, logger, onState: metrics.connection };
    const relay = deps.cluster?.events;
    if (deps.cluster && relay) {
      // The holder stores each message (acknowledged once durable); every instance of the app takes them in.
      const appId = deps.appId;
      stopTaking = relay.take(appId, (data) => channel.handleMessage(data), serving);
      const held = { ...handlers, onMessage: (data: Record<string, unknown>) => relay.hand(appId, data) };
      connection = startHeldConnection(deps.cluster, { ...options, handlers: held });
    } else
      connection = deps.cluster ? startHeldConnection(deps.cluster, options) : startLongConnection(options);
  }
  let sweeper: Sweeper | undefined;
  return {
    channel,
    messenger: deps.messenger,
    handlers,
    routes,
    ready: connection?.ready ?? Promise.resolve(),
    serving,
    async repairEnded() {
      if (!deps.cluster) return channel.repairEnded();
      // The lease's TTL sets the pace: a sweep every 3 TTLs, of runs that ended at least that long ago.
      const leaseMs = deps.cluster.holder?.ttlMs ?? HOLDER_DEFAULTS.ttlMs;
      const pace = { everyMs: 3 * leaseMs, graceMs: 3 * leaseMs };
      const repair = (only: RepairScope) => channel.repairEnded(only);
      sweeper ??= startSweeper(deps.cluster, { appId: deps.appId, repair, now, log: logger, ...pace });
      return 0;
    },
    async close() {
      await sweeper?.close();
      await connection?.close();
      stopTaking?.();
      await channel.idle();
      await channel.close();
      await shared?.stop();
    },
  };
}

function ownLimiter(metrics: FeishuMetrics): Limiter {
  const limiter = createAppLimiter({ onWait: metrics.limiterWait });
  metrics.limiterQueue(limiter.pending);
  return limiter;
}
