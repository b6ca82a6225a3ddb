import path from "node:path";
import type { Express } from "express";
import { createApp } from "./app.ts";
import { resolveAuthSecret } from "./auth/secret.ts";
import { loadConfig } from "./config.ts";
import { createCore } from "./core.ts";
import { ConfigError, describeError } from "./errors.ts";
import { startFeishu } from "./feishu/index.ts";
import { createAgentFromConfig } from "./harness/agents/index.ts";
import { LOCAL_USERS, mountConsole } from "./local/console/index.ts";
import { startLocalFeishu } from "./local/index.ts";
import { createLogger } from "./logger.ts";
import { openDatabase } from "./store/db.ts";
import { mountSessionPages } from "./web/session-page.ts";

/** Composition root: config → logger → store → core → HTTP server → listen → resume. */
async function main(): Promise<void> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
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
  // Local mode: the emulator plays Feishu on loopback; the bot is wired exactly as in production.
  const local = config.mode === "local" ? await startLocalFeishu(config) : undefined;
  const feishuConfig = local?.config ?? config;
  const feishu = await startFeishu({ config: feishuConfig, core, logger, now: Date.now });
  let port = config.port;
  const routes = [
    ...feishu.routes,
    (app: Express) =>
      mountSessionPages(app, {
        runner: core.runner,
        authSecret,
        now: Date.now,
        logger,
        ...(local ? { localUsers: LOCAL_USERS } : {}),
      }),
    ...(local
      ? [
          (app: Express) =>
            mountConsole(app, {
              emulator: local.emulator,
              botWebhookUrl: () => `http://127.0.0.1:${port}/feishu/events`,
              logger,
            }),
        ]
      : []),
  ];
  const { server } = createApp({ ...core, logger, routes });
  await new Promise<void>((resolve) => server.listen(config.port, resolve));
  const address = server.address();
  port = typeof address === "object" && address ? address.port : config.port;
  logger.info({ port, mode: config.mode, dataDir: config.dataDir }, "listening");
  if (local) {
    process.stdout.write(
      `\n  Local mode: open http://localhost:${port}/console to talk to the bot as Alice, Bob or Carol.\n\n`,
    );
  }
  const resumed = core.runner.recover();
  if (resumed.length > 0) logger.info({ runs: resumed.length }, "resumed interrupted runs");

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    await core.runner.stop();
    await feishu.close();
    await local?.emulator.close();
    await core.hub.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    db.close();
    process.exit(0);
  };
  process.on("SIGINT", () => void shutdown("SIGINT"));
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("unhandledRejection", (reason) => logger.error({ err: reason }, "unhandled rejection"));
}

main().catch((error: unknown) => {
  process.stderr.write(`feishu-progress-bot failed to start: ${describeError(error)}\n`);
  process.exit(1);
});
