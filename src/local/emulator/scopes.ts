import type { NextFunction, Request, Response } from "express";
import type { EmulatorContext } from "./context.ts";
import { CODES, fail } from "./errors.ts";

/**
 * The permission check the Open API makes before anything else about a call: each endpoint is granted by
 * any one of its scopes (the docs' 权限要求), and an app holding none of them gets 99991672 naming them all,
 * whatever the rest of the request says. Only with `grantedScopes` set: by default the app has them all.
 */

const ENDPOINTS: { method: string; path: RegExp; scopes: string[] }[] = [
  {
    method: "POST",
    path: /^\/open-apis\/im\/v1\/messages$/,
    scopes: ["im:message", "im:message:send_as_bot", "im:message:send"],
  },
  {
    method: "POST",
    path: /^\/open-apis\/im\/v1\/messages\/[^/]+\/reply$/,
    scopes: ["im:message", "im:message:send_as_bot", "im:message:reply"],
  },
  {
    method: "PATCH",
    path: /^\/open-apis\/im\/v1\/messages\/[^/]+$/,
    scopes: ["im:message", "im:message:send_as_bot", "im:message:update"],
  },
  {
    method: "PUT",
    path: /^\/open-apis\/im\/v1\/messages\/[^/]+$/,
    scopes: ["im:message", "im:message:send_as_bot", "im:message:update"],
  },
  {
    method: "DELETE",
    path: /^\/open-apis\/im\/v1\/messages\/[^/]+$/,
    scopes: ["im:message", "im:message:send_as_bot", "im:message:recall"],
  },
  {
    method: "GET",
    path: /^\/open-apis\/im\/v1\/messages\/[^/]+$/,
    scopes: ["im:message", "im:message:readonly", "im:message.history:readonly"],
  },
  // CardKit card entities: create, full update, settings, an element's text (feishu-platform §3.5).
  { method: "POST", path: /^\/open-apis\/cardkit\/v1\/cards$/, scopes: ["cardkit:card:write"] },
  { method: "PUT", path: /^\/open-apis\/cardkit\/v1\/cards\/[^/]+$/, scopes: ["cardkit:card:write"] },
  {
    method: "PATCH",
    path: /^\/open-apis\/cardkit\/v1\/cards\/[^/]+\/settings$/,
    scopes: ["cardkit:card:write"],
  },
  {
    method: "PUT",
    path: /^\/open-apis\/cardkit\/v1\/cards\/[^/]+\/elements\/[^/]+\/content$/,
    scopes: ["cardkit:card:write"],
  },
  {
    method: "GET",
    path: /^\/open-apis\/contact\/v3\/users\/[^/]+$/,
    scopes: [
      "contact:user.base:readonly",
      "contact:contact.base:readonly",
      "contact:contact:readonly_as_app",
    ],
  },
];

export function requireScopes(ctx: EmulatorContext) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    const granted = ctx.tenant.grantedScopes;
    const endpoint = granted
      ? ENDPOINTS.find((e) => e.method === req.method && e.path.test(req.path))
      : undefined;
    if (granted && endpoint && !endpoint.scopes.some((scope) => granted.has(scope))) {
      const list = `[${endpoint.scopes.join(", ")}]`;
      throw fail(
        CODES.scopeMissing,
        `Access denied. One of the following scopes is required: ${list}.应用尚未开通所需的应用身份权限：${list}，点击链接申请并开通任一权限即可：https://open.feishu.cn/app/${ctx.config.appId}/auth`,
      );
    }
    next();
  };
}
