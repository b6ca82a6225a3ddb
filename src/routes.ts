import type { Express } from "express";
import { mountAgentSetup } from "./agents-api/console-setup.ts";
import { type AgentTasks, createAgentsApi } from "./agents-api/index.ts";
import type { Core } from "./core.ts";
import type { StandingPermissions } from "./domain/standing-permissions.ts";
import type { FeishuRuntime } from "./feishu/index.ts";
import { LOCAL_GROUP_CHAT_ID, LOCAL_USERS, mountConsole } from "./local/console/index.ts";
import type { Emulator } from "./local/emulator/index.ts";
import type { Logger } from "./logger.ts";
import type { StoreSql } from "./store/sql.ts";
import { mountSessionPages } from "./web/session-page.ts";

/**
 * Every route the service mounts besides createApp's own (`/healthz`, `/metrics`): the channel's (the
 * webhook), the session pages and sign-in, and in local mode the console. main.ts and the README test both
 * build the app from this list, so the README's route table is checked against what really answers.
 */
export function serviceRoutes(options: {
  feishu: Pick<FeishuRuntime, "routes">;
  core: Pick<Core, "shown"> & Partial<Pick<Core, "revocations">>;
  authSecret: string;
  logger: Logger;
  now: () => number;
  /** The sessions' "always allow" choices, listed and revoked on the session page (issue 30). */
  standing?: StandingPermissions;
  /** How long a browser sign-in lasts (SIGNIN_TTL_HOURS). */
  signInTtlMs?: number;
  /**
   * Local mode: the emulator behind the console; where the console delivers events to the bot when the app is
   * subscribed by webhook (absent: the long connection); the first log sequence number (console/index.ts).
   */
  local?: { emulator: Emulator; botWebhookUrl?: () => string; logSeqStart?: number };
  /** More routes (the outside agents' API, its console panel), mounted before the console's catch-all 404. */
  extra?: ((app: Express) => void)[];
}): ((app: Express) => void)[] {
  const { core, authSecret, logger, now, local } = options;
  const routes = [
    ...options.feishu.routes,
    (app: Express) =>
      mountSessionPages(app, {
        runs: core.shown,
        authSecret,
        ...(core.revocations ? { revocations: core.revocations } : {}),
        ...(options.signInTtlMs !== undefined ? { signInTtlMs: options.signInTtlMs } : {}),
        ...(options.standing ? { standing: options.standing } : {}),
        now,
        logger,
        ...(local ? { localUsers: LOCAL_USERS } : {}),
      }),
    ...(options.extra ?? []),
  ];
  if (local) {
    const { emulator, botWebhookUrl, logSeqStart } = local;
    routes.push((app: Express) =>
      mountConsole(app, {
        emulator,
        ...(botWebhookUrl ? { botWebhookUrl } : {}),
        logger,
        ...(logSeqStart !== undefined ? { logSeqStart } : {}),
      }),
    );
  }
  return routes;
}

/**
 * Outside agents (issue 17): /mcp and /api/tasks|asks, their tasks joining the run feed (so their cards are the
 * Feishu channel's like any run's), and in local mode the console's panel for connecting an agent (mounted
 * before the console, whose /console/api router answers 404 for paths it does not know). main.ts and the README test both build them here.
 */
export function agentRoutes(options: {
  core: Pick<Core, "registry" | "runs">;
  /** The bot's store (the SQLite file or Postgres): the agents' tasks, asks and tokens. */
  store: StoreSql;
  authSecret: string;
  askTimeoutMs: number;
  now: () => number;
  logger: Logger;
  /** Local mode: the console's users are named on cards, and the panel tells agents where the bot is. */
  local?: { publicUrl: () => string };
  /** All agents' waiting calls together (main.ts: a quarter of the connection cap). */
  maxWaits?: number;
}): { tasks: AgentTasks; routes: ((app: Express) => void)[] } {
  const { core, authSecret, now, local } = options;
  const agentsApi = createAgentsApi({
    registry: core.registry,
    runs: core.runs,
    store: options.store,
    authSecret,
    askTimeoutMs: options.askTimeoutMs,
    now,
    logger: options.logger,
    tuning: {
      ...(local ? { nameOf: (openId: string) => LOCAL_USERS.find((u) => u.openId === openId)?.name } : {}),
      ...(options.maxWaits !== undefined ? { waits: { total: options.maxWaits } } : {}),
    },
  });
  const routes = [agentsApi.mount];
  if (local) {
    routes.push((app: Express) =>
      mountAgentSetup(app, {
        authSecret,
        publicUrl: local.publicUrl,
        mayAsk: [...LOCAL_USERS.map((user) => user.openId), LOCAL_GROUP_CHAT_ID],
        now,
      }),
    );
  }
  return { tasks: agentsApi.tasks, routes };
}
