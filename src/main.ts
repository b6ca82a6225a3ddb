import type { Server } from "node:http";
import path from "node:path";
import { Registry } from "prom-client";
import { createApp } from "./app.ts";
import { resolveAuthSecret } from "./auth/secret.ts";
import { type Config, loadConfig } from "./config.ts";
import { createCore } from "./core.ts";
import { ConfigError, describeError } from "./errors.ts";
import { type FeishuRuntime, startFeishu } from "./feishu/index.ts";
import { createAgentFromConfig } from "./harness/agents/index.ts";
import { listen } from "./listen.ts";
import type { Emulator } from "./local/emulator/index.ts";
import { startLocalFeishu } from "./local/index.ts";
import { createLogger, wantsPrettyLogs } from "./logger.ts";
import { createMetrics } from "./metrics.ts";
import { serviceRoutes } from "./routes.ts";
import { openDatabase } from "./store/db.ts";

/** Composition root: config → logger → store → core → Feishu (or the local emulator) → HTTP → listen → resume. */
async function main(): Promise<void> {
  const config = configOrExit();
  const logger = createLogger({ level: config.logLevel, pretty: wantsPrettyLogs(process.stdout) });
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

  const metrics = createMetrics({ registry: new Registry(), sources: core });

  // Local mode: the emulator plays Feishu on loopback; the bot is wired exactly as in production.
  const local = config.mode === "local" ? await startLocalFeishu(config) : undefined;
  started.emulator = local?.emulator;
  started.feishu = await startFeishu({
    config: local?.config ?? config,
    core,
    logger,
    now: Date.now,
    metrics: metrics.feishu,
    // A long connection lost for good would leave the bot deaf: exit, so a supervisor restarts it.
    onFatal: (error) => {
      logger.fatal({ err: describeError(error) }, "feishu long connection lost for good");
      void shutdown("long connection lost", 1);
    },
  });

  let port = config.port;
  const routes = serviceRoutes({
    feishu: started.feishu,
    core,
    authSecret,
    logger,
    now: Date.now,
    ...(local
      ? { local: { emulator: local.emulator, botWebhookUrl: () => `http://127.0.0.1:${port}/feishu/events` } }
      : {}),
  });
  const { server } = createApp({ ...core, logger, routes, metrics });
  started.server = server;
  port = await listen(server, { port: config.port });
  logger.info({ port, mode: config.mode, dataDir: config.dataDir }, "listening");
  if (local) announceConsole(port);

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
