import type { Server } from "node:http";
import { Registry } from "prom-client";
import type { AgentTasks } from "./agents-api/index.ts";
import { createApp } from "./app.ts";
import { personalLink } from "./auth/link.ts";
import { localWebhookKey, resolveAuthSecret } from "./auth/secret.ts";
import { type Config, loadConfig } from "./config.ts";
import { readConfigFile } from "./config-file.ts";
import { createCore } from "./core.ts";
import { ConfigError, describeError } from "./errors.ts";
import { startupChecks } from "./feishu/doctor/startup.ts";
import { type FeishuApps, startFeishuApps } from "./feishu/index.ts";
import { withSetupCredentials } from "./feishu/setup/credentials-file.ts";
import { FEISHU_WEBHOOK_PATH, webhookPathsFor } from "./feishu/webhook.ts";
import { createAgentsFromConfig } from "./harness/agents/index.ts";
import { resolveIsolation } from "./harness/agents/isolation.ts";
import { SECRET_ENV_KEYS } from "./harness/agents/isolation-config.ts";
import { elicitThrough, startMcpFromConfig } from "./harness/agents/mcp/index.ts";
import { severalInstances } from "./instances.ts";
import { listen } from "./listen.ts";
import type { Emulator } from "./local/emulator/index.ts";
import { startLocalFeishu } from "./local/index.ts";
import { createLogger, wantsPrettyLogs } from "./logger.ts";
import { createMetrics } from "./metrics.ts";
import { createShutdown, installProcessGuard, watchParent } from "./process-guard.ts";
import { PublicAddress } from "./public-url.ts";
import { agentRoutes, serviceRoutes } from "./routes.ts";
import { lockDataDir } from "./store/lock.ts";
import { openStore } from "./store/open.ts";
import { StoreStandingPermissions } from "./store/permissions.ts";
import { selectLocale } from "./strings/index.ts";
import { connectionCap, readOpenFilesLimit } from "./web/fd-limit.ts";
import { isLoopbackAddress } from "./web/host-guard.ts";

/**
 * A graceful stop's limit: under the 10 s a container runtime gives before SIGKILL (docker stop), so the
 * lock is released and the exit code is ours.
 */
const SHUTDOWN_DEADLINE_MS = 8_000;

/** Composition root: config → logger → store → core → Feishu (or the local emulator) → HTTP → listen → resume. */
async function main(): Promise<void> {
  const config = configOrExit();
  // The connection cap follows the descriptor limit (or MAX_CONNECTIONS, checked against it): refused here
  // rather than found out when accept() starts failing with EMFILE under load.
  const fdLimit = readOpenFilesLimit();
  const cap = orExit(() =>
    connectionCap({
      ...(config.connections.max !== undefined ? { configured: config.connections.max } : {}),
      ...(fdLimit !== undefined ? { fdLimit } : {}),
    }),
  );
  // The config holds the secrets now; nothing started from here on can inherit them by accident (the
  // kernel's copy of the initial environment stays: isolation.ts, README "What an agent can reach").
  for (const key of [...SECRET_ENV_KEYS, ...config.secretEnvNames]) delete process.env[key];
  // The catalogue is chosen once, before anything writes a word (issue 19: Lark tenants default to English).
  selectLocale(config.locale);
  const logger = createLogger({ level: config.logLevel, pretty: wantsPrettyLogs(process.stdout) });
  // Before anything reads the store: a second process on this DATA_DIR exits here, naming the holder. On
  // Postgres (DATABASE_URL) instances share the database and no disk: each has a DATA_DIR of its own.
  const dataDirLock = lockDataDir(config.dataDir);
  installProcessGuard(logger);
  const store = await openStore(config, logger).catch((error: unknown) => {
    dataDirLock.release();
    throw error;
  });
  const instances =
    config.database.kind === "postgres"
      ? severalInstances(store, { dataDir: config.dataDir, database: config.database }, logger)
      : undefined;
  const authSecret = resolveAuthSecret(config.authSecret, config.dataDir);
  // Where ACP agents, their terminals and MCP stdio servers run: said once, before any starts.
  const isolation = resolveIsolation(config.isolation);
  const appAgents =
    config.mode === "feishu" ? config.apps.flatMap((app) => (app.agent ? [app.agent] : [])) : [];
  if ([config.agent, ...appAgents].some((agent) => agent.kind === "acp") || config.agent.mcp.configFile)
    logger[isolation.kind === "none" ? "warn" : "info"]({ sandbox: isolation.kind }, isolation.notice);
  // MCP_CONFIG: a bad file stops here; a server that fails to start is logged and left out.
  const mcp = await startMcpFromConfig(
    { agent: config.agent, apps: config.mode === "feishu" ? config.apps : [] },
    logger,
    { isolation },
  );
  // "Always allow" on ACP permission forms (issue 30): the agent answers by them, the session page revokes them.
  const standing = new StoreStandingPermissions(store.sql);
  // Each app with an agent of its own gets it; the rest get AGENT's. A run's app is read from its source.
  const agent = createAgentsFromConfig(
    config,
    logger,
    { ...(mcp ? { tools: mcp.tools } : {}), isolation, standing },
    (runId) => core.store.runSource(runId),
  );
  const core = await createCore({
    sql: store.sql,
    ...(store.file ? { db: store.file } : {}),
    ...(instances ? { ownership: instances.ownership } : {}),
    logger,
    ...agent,
    askTimeoutMs: config.askTimeoutMs,
    askExtendMaxMs: config.asks.extendMaxMs,
    authSecret,
    maxQueued: config.queueMax,
  });
  // An MCP server's questions (elicitation) become forms on the card, through the same registry as the model's.
  mcp?.setElicitationHandler(elicitThrough(core.dispatcher, logger));
  // An answer given on another instance reaches the call waiting here (and ours reach theirs), and the runs
  // the others run are shown live on this instance's pages.
  instances?.connect(core);

  // Whatever has started so far is stopped on the way out; shutdown may come at any point, and has a deadline.
  const started: { feishu?: FeishuApps; emulator?: Emulator; server?: Server; agents?: AgentTasks } = {};
  const shutdown = createShutdown({
    deadlineMs: SHUTDOWN_DEADLINE_MS,
    logger,
    release: () => dataDirLock.release(),
    exit: (code) => process.exit(code),
    async stop() {
      await core.runner.stop();
      // Outside agents' latest steps, held back a moment to coalesce them, are written before the store closes.
      await started.agents?.flush();
      // An ACP agent's child processes go with us (a live child would keep its pipes and our exit waiting).
      await agent.agent.close?.();
      await mcp?.close();
      await started.feishu?.close();
      await started.emulator?.close();
      await core.hub.close();
      started.server?.closeAllConnections();
      await new Promise<void>((resolve) =>
        started.server ? started.server.close(() => resolve()) : resolve(),
      );
      await instances?.close();
      await store.close();
    },
  });
  process.on("SIGINT", () => shutdown("SIGINT", 0));
  process.on("SIGTERM", () => shutdown("SIGTERM", 0));
  // Under `npm start` a signal to npm stops at its shell: the parent going away is our signal then.
  watchParent({ onGone: () => shutdown("parent process gone", 0) });

  const metrics = createMetrics({ registry: new Registry(), sources: core });
  // PUBLIC_URL, or localhost on the port listen binds (PORT=0 learns it there): read live, never copied.
  const address = new PublicAddress(config);
  const publicUrl = () => address.url();

  // Local mode: the emulator plays Feishu on loopback; the bot is wired exactly as in production.
  // Feishu mode's config has its app; local mode's gets the emulator's (a union on `mode`, config.ts).
  const [local, runnable] =
    config.mode === "local"
      ? await startLocalFeishu(config, localWebhookKey(config.dataDir)).then((l) => [l, l.config] as const)
      : ([undefined, config] as const);
  started.emulator = local?.emulator;
  started.feishu = await startFeishuApps({
    config: runnable,
    core,
    logger,
    now: Date.now,
    publicUrl,
    // /login in a private chat: the personal link that signs a Feishu user in to the session pages.
    signInLink: async (userId: string) =>
      personalLink({
        publicUrl: publicUrl(),
        authSecret,
        userId,
        now: Date.now(),
        generation: await core.revocations.generation(userId),
      }),
    metrics: metrics.feishu,
    ...(instances ? { cluster: instances.feishu } : {}),
    // A long connection lost for good would leave the bot deaf: exit, so a supervisor restarts it.
    onFatal: (error) => {
      logger.fatal({ err: describeError(error) }, "feishu long connection lost for good");
      shutdown("long connection lost", 1);
    },
  });

  let port = config.port;
  const agents = agentRoutes({
    core,
    store: store.sql,
    authSecret,
    askTimeoutMs: config.askTimeoutMs,
    now: Date.now,
    logger,
    ...(local ? { local: { publicUrl } } : {}),
    // Waiting calls hold connections: together they never take more than a quarter of the cap.
    maxWaits: Math.floor(cap.maxConnections / 4),
  });
  started.agents = agents.tasks;
  // Events and clicks from the console go where the app is subscribed: the long connection by default.
  const webhook = local?.config.feishu.transport === "webhook";
  const routes = serviceRoutes({
    feishu: started.feishu,
    core,
    authSecret,
    logger,
    now: Date.now,
    signInTtlMs: config.signInTtlMs,
    standing,
    extra: agents.routes,
    ...(local
      ? {
          local: {
            emulator: local.emulator,
            ...(webhook
              ? { botWebhookUrl: () => `http://${callableHost(config.host)}:${port}${FEISHU_WEBHOOK_PATH}` }
              : {}),
            logSeqStart: Date.now() * 1000, // above every number the previous process gave (console/index.ts)
          },
        }
      : {}),
  });
  const hostPolicy = {
    publicUrl,
    // Feishu reaches the webhook by whatever Host its console URL or a proxy gives; the signature guards it.
    exemptPaths: local
      ? []
      : (config.mode === "feishu" ? config.apps : []).flatMap((app, i) =>
          webhookPathsFor(app.appId, i === 0),
        ),
  };
  if (cap.warning) logger.warn({ fdLimit, maxConnections: cap.maxConnections }, cap.warning);
  logger.debug(
    {
      maxConnections: cap.maxConnections,
      perAddress: config.connections.perAddress,
      fdLimit,
      source: cap.source,
    },
    "connection limits",
  );
  const serverLimits = {
    maxConnections: cap.maxConnections,
    maxConnectionsPerAddress: config.connections.perAddress,
  };
  // Several instances: a newcomer without its share of the budget yet is not ready (/readyz), adopts nothing.
  const serving = () => started.feishu?.serving() ?? true;
  instances?.ownership.serveWhen(serving);
  const { server } = createApp({ ...core, logger, routes, hostPolicy, metrics, serverLimits, serving });
  started.server = server;
  port = await listen(server, {
    port: config.port,
    ...(config.host !== undefined ? { host: config.host } : {}),
  });
  address.bound(port);
  if (local && config.host !== undefined && !isLoopbackAddress(config.host)) {
    logger.warn(
      { host: config.host },
      "local mode is listening beyond loopback: anyone who can reach this port can act as any user in the console",
    );
  }
  // In local mode the console's first message must find the bot connected (the emulator is in-process).
  if (local) await withTimeout(started.feishu.ready, 10_000, () => logger.warn("long connection not up yet"));
  // Where we listen, for people and for scripts (PORT=0): a JSON line carrying `port` and `url`, written
  // whatever LOG_LEVEL says (short of silent), since nothing else tells a caller which port it got.
  const announce =
    logger.isLevelEnabled("info") || config.logLevel === "silent"
      ? logger
      : logger.child({}, { level: "info" });
  // The banner is this one line: where, which mode and transport, and in local mode the console.
  announce.info(
    {
      port,
      url: publicUrl(),
      host: config.host ?? "*",
      mode: config.mode,
      transport: local ? local.config.feishu.transport : config.feishu.transport,
      ...(config.mode === "feishu" && config.apps.length > 1
        ? {
            apps: config.apps.map(
              (app) => `${app.appId} (${app.transport}${app.agent ? `, agent ${app.agent.kind}` : ""})`,
            ),
          }
        : {}),
      ...(local ? { console: `${publicUrl()}/console` } : {}),
      dataDir: config.dataDir,
      store: store.describe,
      ...(instances ? { instance: instances.instance } : {}),
    },
    "listening",
  );
  if (local) announceConsole(port);

  const resumedTasks = await agents.tasks.resume();
  if (resumedTasks > 0) logger.info({ tasks: resumedTasks }, "resumed outside agents' tasks");
  const resumed = await core.runner.recover();
  if (resumed.length > 0) logger.info({ runs: resumed.length }, "resumed interrupted runs");
  await started.feishu.repairEnded();
  // What the tenant may be missing (scopes, bot capability, transport, PUBLIC_URL, clock): warnings only.
  if (config.mode === "feishu") void startupChecks(runnable, logger);
}

function configOrExit(): Config {
  // No app in the environment: what `npm run setup` wrote under DATA_DIR, if anything (setup/credentials-file.ts).
  // The config file (CONFIG_FILE, else ./feishu-progress-bot.json if present) under the environment.
  // What `npm run setup` wrote counts only when neither the environment nor the file names an app.
  return orExit(() => {
    const file = readConfigFile(process.env);
    return loadConfig(file?.apps ? process.env : withSetupCredentials(process.env), file);
  });
}

/** A configuration problem is one message on stderr and exit 1, not a stack. */
function orExit<T>(load: () => T): T {
  try {
    return load();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}

/** Where the emulator reaches the bot: loopback when we listen everywhere, else the one address we bound. */
function callableHost(host: string | undefined): string {
  if (host === undefined || host === "0.0.0.0" || host === "::") return "127.0.0.1";
  return host.includes(":") ? `[${host}]` : host;
}

/** Waits for `promise`, but no longer than `ms` (then runs `onTimeout` and goes on). */
async function withTimeout(promise: Promise<void>, ms: number, onTimeout: () => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<"expired">((resolve) => {
    timer = setTimeout(resolve, ms, "expired");
  });
  if ((await Promise.race([promise, expired])) === "expired") onTimeout();
  clearTimeout(timer);
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
