import { createServer, type Server } from "node:http";
import express, { type NextFunction, type Request, type Response } from "express";
import type { AskRegistry } from "./asks/registry.ts";
import { AppError } from "./errors.ts";
import type { SessionRunner } from "./harness/runner.ts";
import type { Logger } from "./logger.ts";
import type { WsHub } from "./ws/hub.ts";

export interface AppDeps {
  registry: AskRegistry;
  runner: SessionRunner;
  hub: WsHub;
  logger: Logger;
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

  app.get("/metrics", (_req, res) => {
    res
      .type("text/plain; version=0.0.4")
      .send(
        [
          "# HELP fpb_pending_asks Questions waiting for an answer.",
          "# TYPE fpb_pending_asks gauge",
          `fpb_pending_asks ${deps.registry.size}`,
          "# HELP fpb_ws_connections Open WebSocket connections.",
          "# TYPE fpb_ws_connections gauge",
          `fpb_ws_connections ${deps.hub.connectionCount()}`,
          "",
        ].join("\n"),
      );
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
