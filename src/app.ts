import { createServer, type Server } from "node:http";
import express, { type NextFunction, type Request, type Response } from "express";
import { Registry } from "prom-client";
import type { AskRegistry } from "./asks/registry.ts";
import { AppError } from "./errors.ts";
import type { SessionRunner } from "./harness/runner.ts";
import type { Logger } from "./logger.ts";
import { createMetrics, type Metrics, type MetricsSources } from "./metrics.ts";
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
}

/** Builds the HTTP server (routes, WebSocket hub, one error middleware). It does not listen. */
export function createApp(deps: AppDeps): { app: express.Express; server: Server } {
  const app = express();
  app.disable("x-powered-by");

  app.get("/healthz", (_req, res) => {
    res.json({ ok: true });
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

  const server = createServer(app);
  deps.hub.attach(server);
  return { app, server };
}

function isBodyParserError(error: unknown): boolean {
  return (
    typeof error === "object" &&
    error !== null &&
    (error as { type?: unknown }).type === "entity.parse.failed"
  );
}
