import { createServer, type Server } from "node:http";
import express from "express";
import { mountAuthRoutes, mountBotRoutes } from "./auth-routes.ts";
import { mountCardRoutes } from "./card-routes.ts";
import { mountCardKitRoutes } from "./cardkit-routes.ts";
import type { EmulatorContext } from "./context.ts";
import { mountEphemeralRoutes } from "./ephemeral-routes.ts";
import {
  applyFaults,
  appOf,
  appRateLimit,
  errorHandler,
  recordCalls,
  requireTenantToken,
  sendJson,
} from "./http.ts";
import { mountLongConnectionRoutes } from "./long-connection/routes.ts";
import { mountMessageRoutes } from "./message-routes.ts";
import { mountRegistrationRoutes, type Registrations } from "./registration.ts";
import { requireScopes } from "./scopes.ts";

/**
 * The HTTP side. Order matters and mirrors the platform: record → injected faults → body → token
 * endpoint (no auth, not rate limited) → tenant token → app rate limit → endpoints.
 */
export function createApp(
  ctx: EmulatorContext,
  registration?: { registrations: Registrations; baseUrl: () => string },
): express.Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use(recordCalls(ctx));
  app.use(applyFaults(ctx));
  app.use(express.json({ limit: "2mb" }));
  app.use(applyFaults(ctx, { afterBody: true }));

  const open = express.Router();
  mountAuthRoutes(open, ctx);
  if (registration) mountRegistrationRoutes(open, registration.registrations, registration.baseUrl);
  mountLongConnectionRoutes(open, ctx);
  app.use(open);

  app.use(requireTenantToken(ctx));
  // Served as the token's app (apps.ts): its scopes, its rate window, its bot, its messages' sender.
  const apis = new Map(ctx.apps.all.map((appCtx) => [appCtx, apiFor(appCtx)]));
  app.use((req, res, next) => {
    const api = apis.get(appOf(ctx, res));
    if (!api) return next(new Error("no API for the token's app"));
    api(req, res, next);
  });

  app.use((req, res) => {
    sendJson(res, 404, { code: 404, msg: `404 page not found: ${req.method} ${req.path}` });
  });
  app.use(errorHandler);
  return app;
}

/** One app's side of the Open API, bound to its context. */
function apiFor(ctx: EmulatorContext): express.Router {
  const api = express.Router();
  api.use(requireScopes(ctx));
  api.use(appRateLimit(ctx));
  mountBotRoutes(api, ctx);
  mountMessageRoutes(api, ctx);
  mountCardRoutes(api, ctx);
  mountCardKitRoutes(api, ctx);
  mountEphemeralRoutes(api, ctx);
  return api;
}

/** Listens on 127.0.0.1 on an ephemeral port. */
export async function listen(app: express.Express): Promise<{ server: Server; url: string }> {
  const server = createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("emulator: no TCP address");
  return { server, url: `http://127.0.0.1:${address.port}` };
}

/**
 * Stops accepting and drops idle keep-alive sockets (the SDK's axios keeps them). Calls in flight get
 * `graceMs` to finish before their sockets are cut too.
 */
export async function shutdown(server: Server, graceMs = 500): Promise<void> {
  const cut = setTimeout(() => server.closeAllConnections(), graceMs);
  cut.unref();
  try {
    await new Promise<void>((resolve, reject) => {
      server.close((error) => (error ? reject(error) : resolve()));
      server.closeIdleConnections();
    });
  } finally {
    clearTimeout(cut);
  }
}
