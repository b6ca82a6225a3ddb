import type { Router } from "express";
import { z } from "zod";
import type { EmulatorContext } from "../context.ts";
import { sendJson } from "../http.ts";
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
    if (
      !body.success ||
      body.data.AppID !== ctx.config.appId ||
      body.data.AppSecret !== ctx.config.appSecret
    ) {
      sendJson(res, 200, { code: ENDPOINT_CODES.authFailed, msg: "auth failed: app id or secret", data: {} });
      return;
    }
    const answer = ctx.longConnection.issue(`ws://${req.get("host") ?? "127.0.0.1"}`);
    sendJson(res, 200, { ...answer, data: answer.data ?? {} });
  });
}
