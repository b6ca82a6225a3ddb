import type { Router } from "express";
import { z } from "zod";
import type { EmulatorContext } from "../context.ts";
import { callLocals, sendJson } from "../http.ts";
import { ENDPOINT_CODES } from "./server.ts";

const endpointRequest = z.object({ AppID: z.string(), AppSecret: z.string() });

/**
 * `POST /callback/ws/endpoint` (not under /open-apis, no Authorization header): the app's credentials buy a
 * WebSocket URL with a one-time ticket, plus ClientConfig. Failures still carry `data: {}` because the Node
 * SDK destructures `data.URL` before it looks at `code`, and would otherwise call a refusal "retryable".
 */
export function mountLongConnectionRoutes(router: Router, ctx: EmulatorContext): void {
  router.post("/callback/ws/endpoint", (req, res) => {
    const body = endpointRequest.safeParse(req.body ?? {});
    // Each app of the tenant has its own connections (apps.ts).
    const app = body.success ? ctx.apps.byId(body.data.AppID) : undefined;
    if (!body.success || !app || body.data.AppSecret !== app.config.appSecret) {
      sendJson(res, 200, { code: ENDPOINT_CODES.authFailed, msg: "auth failed: app id or secret", data: {} });
      return;
    }
    callLocals(res).app = app;
    const answer = app.longConnection.issue(`ws://${req.get("host") ?? "127.0.0.1"}`);
    sendJson(res, 200, { ...answer, data: answer.data ?? {} });
  });
}
