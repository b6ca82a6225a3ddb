import { createServer, type IncomingMessage, type Server } from "node:http";
import type { Duplex } from "node:stream";
import express, { type NextFunction, type Request, type Response } from "express";
import { Registry } from "prom-client";
import type { AskRegistry } from "./asks/registry.ts";
import { AppError } from "./errors.ts";
import { FEISHU_WEBHOOK_PATH } from "./feishu/webhook.ts";
import type { SessionRunner } from "./harness/runner.ts";
import type { Logger } from "./logger.ts";
import { createMetrics, type Metrics, type MetricsSources } from "./metrics.ts";
import { ConnectionSlots } from "./web/connection-slots.ts";
import { type HostPolicy, hostGuard, upgradeAllowed } from "./web/host-guard.ts";
import type { WsHub } from "./ws/hub.ts";

export interface AppDeps {
  registry: AskRegistry;
  runner: SessionRunner;
  hub: WsHub;
  logger: Logger;
  /** Runs and queue lengths for `/metrics`. */
  store?: MetricsSources["store"];
  /** The registry `/metrics` serves; main.ts passes the one the Feishu side reports into. Default: a fresh one. */
  metrics?: Metrics;
  /** Extra routes from channels (e.g. the Feishu webhook), mounted before the error middleware. */
  routes?: ((app: express.Express) => void)[];
  /** Refuse requests whose Host is not ours (DNS rebinding); absent only in tests that build bare apps. */
  hostPolicy?: HostPolicy;
  /** Overrides of SERVER_LIMITS (tests use short timeouts to keep a slowloris run short). */
  serverLimits?: Partial<ServerLimits>;
  /** Whether the service can serve now (`/readyz`; feishu/runtime.ts serving); absent: whenever it listens. */
  serving?: () => boolean;
}

/**
 * How long a client may take and how many may be connected. Node's defaults (60 s for headers, 300 s for a
 * request, checked every 30 s, no cap) let a few hundred slow clients hold the port. Feishu sends a webhook
 * at once and in well under a second, so the bounds are short; the cap leaves file descriptors for the bot's
 * own outbound calls and is still far above a team's sockets (the hub caps those per user). Who holds the
 * slots (per address, silent sockets, the webhook's reserve) is web/connection-slots.ts; main.ts sizes the cap
 * from the file-descriptor limit (web/fd-limit.ts).
 */
export interface ServerLimits {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  /** How often Node looks for connections past those timeouts. */
  checkIntervalMs: number;
  maxConnections: number;
  /** Sockets one client address may hold (MAX_CONNECTIONS_PER_ADDRESS). */
  maxConnectionsPerAddress: number;
  /** A socket without a complete request this long after it opened is dropped (Node's timeouts never start). */
  firstRequestMs: number;
  /** Slots kept for the webhook once everything else is busy. */
  webhookReserve: number;
}

export const SERVER_LIMITS: ServerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  checkIntervalMs: 1_000,
  maxConnections: 1_000,
  maxConnectionsPerAddress: 32,
  firstRequestMs: 1_500,
  webhookReserve: 64,
};

/** Builds the HTTP server (routes, WebSocket hub, one error middleware). It does not listen. */
export function createApp(deps: AppDeps): { app: express.Express; server: Server } {
  const app = express();
  app.disable("x-powered-by");
  const hostPolicy = deps.hostPolicy;
  if (hostPolicy) app.use(hostGuard(hostPolicy));

  app.get("/healthz", (_req, res) => {
    res.json({ ok: true });
  });
  // Readiness, for a load balancer in front of several instances: alive but not ready while an instance waits
  // for its share of the app's budget (a newcomer right after another was killed), so traffic goes elsewhere.
  app.get("/readyz", (_req, res) => {
    const ready = deps.serving?.() ?? true;
    res.status(ready ? 200 : 503).json({ ready });
  });

  const metrics =
    deps.metrics ??
    createMetrics({
      registry: new Registry(),
      sources: { registry: deps.registry, hub: deps.hub, ...(deps.store ? { store: deps.store } : {}) },
    });
  app.get("/metrics", async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  for (const mount of deps.routes ?? []) mount(app);

  app.use((_req: Request, _res: Response, next: NextFunction) => {
    next(new AppError("NOT_FOUND", "No such route"));
  });

  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const appError =
      error instanceof AppError
        ? error
        : isBodyParserError(error)
          ? new AppError("INVALID_INPUT", "Request body is not valid JSON", { cause: error })
          : new AppError("INTERNAL", "Internal error", { cause: error });
    if (appError.status >= 500) deps.logger.error({ err: error, path: req.path }, "request failed");
    res.status(appError.status).json({ error: { code: appError.code, message: appError.message } });
  });

  const limits = { ...SERVER_LIMITS, ...deps.serverLimits };
  const slots = new ConnectionSlots(
    {
      maxConnections: limits.maxConnections,
      perAddress: limits.maxConnectionsPerAddress,
      reserve: Math.min(limits.webhookReserve, Math.floor(limits.maxConnections / 4)),
      firstRequestMs: limits.firstRequestMs,
    },
    { isReserved: (req) => req.method === "POST" && req.url?.split("?")[0] === FEISHU_WEBHOOK_PATH },
  );
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      connectionsCheckingInterval: limits.checkIntervalMs,
    },
    slots.gate(app),
  );
  slots.attach(server);
  // Express never sees an upgrade: the hub listens on a server that only ever hears the upgrades that got a
  // slot and whose Host passed, so neither a rebound page nor a flood of sockets opens it.
  const upgrades = createServer();
  deps.hub.attach(upgrades);
  server.on("upgrade", (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    // A reset on a refused socket must not become an unhandled 'error' event (that would end the process).
    socket.on("error", (error) => deps.logger.debug({ err: error }, "refused upgrade socket error"));
    if (!slots.admitUpgrade(request)) {
      socket.end("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\n\r\n");
      return;
    }
    if (!hostPolicy || upgradeAllowed(request, socket, hostPolicy))
      upgrades.emit("upgrade", request, socket, head);
  });
  connectionSlotsOf.set(server, slots);
  return { app, server };
}

const connectionSlotsOf = new WeakMap<Server, ConnectionSlots>();

/** What the server's connection guard has seen (tests and the bench read it). */
export function connectionStats(server: Server): ConnectionSlots["stats"] | undefined {
  return connectionSlotsOf.get(server)?.stats;
}

function isBodyParserError(error: unknown): boolean {
  return (
    typeof error === "object" &&
    error !== null &&
    (error as { type?: unknown }).type === "entity.parse.failed"
  );
}
