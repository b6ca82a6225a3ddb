import type { Router } from "express";
import { z } from "zod";
import type { EmulatorContext } from "./context.ts";
import { CODES, fail } from "./errors.ts";
import { callLocals, parse, sendJson } from "./http.ts";

const tokenRequest = z.object({ app_id: z.string().min(1), app_secret: z.string().min(1) });

/**
 * `POST /open-apis/auth/v3/tenant_access_token/internal` (§3.4): the response is flat, not under `data`.
 * The SDK's TokenManager only uses this endpoint for a self-built app, so app_access_token is not emulated.
 */
export function mountAuthRoutes(router: Router, ctx: EmulatorContext): void {
  router.post("/open-apis/auth/v3/tenant_access_token/internal", (req, res) => {
    const body = (() => {
      try {
        return parse(tokenRequest, req.body);
      } catch {
        throw fail(CODES.invalidParam, "param is invalid: app_id and app_secret are required");
      }
    })();
    // Each app of the tenant has its own tokens (apps.ts).
    const app = ctx.apps.byId(body.app_id);
    if (!app) throw fail(CODES.invalidParam, "app_id is invalid");
    callLocals(res).app = app;
    if (body.app_secret !== app.config.appSecret) throw fail(CODES.appSecretInvalid, "app secret invalid");
    const { token, expireSeconds } = app.tokens.issue(ctx.clock.now());
    sendJson(res, 200, { code: CODES.ok, msg: "ok", tenant_access_token: token, expire: expireSeconds });
  });
}

/** `GET /open-apis/bot/v3/info` (D-bot): the bot object is top-level, not under `data`. */
export function mountBotRoutes(router: Router, ctx: EmulatorContext): void {
  // 获取单个用户信息 (contact/v3/users/:user_id, user_id_type=open_id): the name, for people in the app's
  // contact scope; anyone else gets an error (the bot then words its toast without a name).
  router.get("/open-apis/contact/v3/users/:user_id", (req, res) => {
    const openId = String(req.params.user_id);
    const name = Object.hasOwn(ctx.config.userNames, openId) ? ctx.config.userNames[openId] : undefined;
    if (req.query.user_id_type !== "open_id" || name === undefined)
      throw fail(CODES.contactNoAuthority, "no user authority error");
    sendJson(res, 200, { code: CODES.ok, msg: "success", data: { user: { open_id: openId, name } } });
  });
  router.get("/open-apis/bot/v3/info", (_req, res) => {
    sendJson(res, 200, {
      code: CODES.ok,
      msg: "ok",
      bot: {
        activate_status: 2,
        app_name: ctx.config.botName,
        avatar_url: "",
        ip_white_list: [],
        open_id: ctx.config.botOpenId,
      },
    });
  });
}
