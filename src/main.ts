import type { Server } from "node:http";
import path from "node:path";
import type { Express } from "express";
import { mountAgentSetup } from "./agents-api/console-setup.ts";
import { agentCardsOn, createAgentsApi } from "./agents-api/index.ts";
import { createApp } from "./app.ts";
import { personalLink } from "./auth/link.ts";
import { resolveAuthSecret } from "./auth/secret.ts";
import { type Config, loadConfig } from "./config.ts";
import { createCore } from "./core.ts";
import { ConfigError, describeError } from "./errors.ts";
import { type FeishuRuntime, startFeishu } from "./feishu/index.ts";
import { createAgentFromConfig } from "./harness/agents/index.ts";
import { LOCAL_GROUP_CHAT_ID, LOCAL_USERS, mountConsole } from "./local/console/index.ts";
import type { Emulator } from "./local/emulator/index.ts";
import { startLocalFeishu } from "./local/index.ts";
import { createLogger } from "./logger.ts";
import { openDatabase } from "./store/db.ts";
import { mountSessionPages } from "./web/session-page.ts";

/** Composition root: config → logger → store → core → Feishu (or the local emulator) → HTTP → listen → resume. */
async function main(): Promise<void> {
  const config = configOrExit();
  const logger = createLogger({ level: config.logLevel });
  const db = openDatabase(path.join(config.dataDir, "bot.sqlite"));
  const authSecret = resolveAuthSecret(config.authSecret, config.dataDir);
  const core = createCore({
    db,
    logger,
    ...createAgentFromConfig(config, logger),
    askTimeoutMs: config.askTimeoutMs,
    authSecret,
  });

  // Whatever has started so far is stopped on the way out; shutdown may come at any point.
  const started: { feishu?: FeishuRuntime; emulator?: Emulator; server?: Server } = {};
  let stopping = false;
  const shutdown = async (reason: string, exitCode: number) => {
    if (stopping) return;
    stopping = true;
    logger.info({ reason }, "shutting down");
    await core.runner.stop();
    await started.feishu?.close();
    await started.emulator?.close();
    await core.hub.close();
    started.server?.closeAllConnections();
    await new Promise<void>((resolve) =>
      started.server ? started.server.close(() => resolve()) : resolve(),
    );
    db.close();
    process.exit(exitCode);
  };
  process.on("SIGINT", () => void shutdown("SIGINT", 0));
  process.on("SIGTERM", () => void shutdown("SIGTERM", 0));
  process.on("unhandledRejection", (reason) => logger.error({ err: reason }, "unhandled rejection"));

  // Local mode: the emulator plays Feishu on loopback; the bot is wired exactly as in production.
  const local = config.mode === "local" ? await startLocalFeishu(config) : undefined;
  started.emulator = local?.emulator;
  started.feishu = await startFeishu({
    config: local?.config ?? config,
    core,
    logger,
    now: Date.now,
    // /login in a private chat: the personal link that signs a Feishu user in to the session pages.
    signInLink: (userId: string) =>
      personalLink({ publicUrl: config.publicUrl, authSecret, userId, now: Date.now() }),
    // A long connection lost for good would leave the bot deaf: exit, so a supervisor restarts it.
    onFatal: (error) => {
      logger.fatal({ err: describeError(error) }, "feishu long connection lost for good");
      void shutdown("long connection lost", 1);
    },
  });

  let port = config.port;
  const routes = [
    ...started.feishu.routes,
    (app: Express) =>
      mountSessionPages(app, {
        runner: core.runner,
        authSecret,
        now: Date.now,
        logger,
        ...(local ? { localUsers: LOCAL_USERS } : {}),
      }),
  ];
  // Outside agents (issue 17): /mcp and /api/tasks|asks, their cards through the Feishu channel's own.
  const agentsApi = createAgentsApi({
    registry: core.registry,
    cards: agentCardsOn(started.feishu.channel),
    db,
    authSecret,
    askTimeoutMs: config.askTimeoutMs,
    now: Date.now,
    logger,
    tuning: local ? { nameOf: (openId) => LOCAL_USERS.find((u) => u.openId === openId)?.name } : {},
  });
  routes.push(agentsApi.mount);
  if (local) {
    const botWebhookUrl = () => `http://127.0.0.1:${port}/feishu/events`;
    // Before the console: its /console/api router answers 404 for paths it does not know.
    routes.push((app: Express) =>
      mountAgentSetup(app, {
        authSecret,
        // The port is known only after listen (PORT=0 picks one).
        publicUrl: () => (process.env.PUBLIC_URL?.trim() ? config.publicUrl : `http://localhost:${port}`),
        mayAsk: [...LOCAL_USERS.map((user) => user.openId), LOCAL_GROUP_CHAT_ID],
        now: Date.now,
      }),
    );
    routes.push((app: Express) => mountConsole(app, { emulator: local.emulator, botWebhookUrl, logger }));
  }
  const { server } = createApp({ ...core, logger, routes });
  started.server = server;
  await new Promise<void>((resolve) => server.listen(config.port, resolve));
  const address = server.address();
  port = typeof address === "object" && address ? address.port : config.port;
  logger.info({ port, mode: config.mode, dataDir: config.dataDir }, "listening");
  if (local) announceConsole(port);

  const resumedTasks = agentsApi.tasks.resume();
  if (resumedTasks > 0) logger.info({ tasks: resumedTasks }, "resumed outside agents' tasks");
  const resumed = core.runner.recover();
  if (resumed.length > 0) logger.info({ runs: resumed.length }, "resumed interrupted runs");
}

function configOrExit(): Config {
  try {
    return loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}

function announceConsole(port: number): void {
  process.stdout.write(
    `\n  Local mode: open http://localhost:${port}/console to talk to the bot as Alice, Bob or Carol.\n\n`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`feishu-progress-bot failed to start: ${describeError(error)}\n`);
  process.exit(1);
});
