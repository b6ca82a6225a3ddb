import type { NextFunction, Request, Response } from "express";
import { AppError } from "../errors.ts";
import { type AgentPrincipal, type AgentTokenRevocations, checkAgentToken } from "./token.ts";

/**
 * `Authorization: Bearer <agent token>` on /mcp and /api/tasks|asks. A user token, a forged or an expired one
 * is refused with 401 before any body is looked at; the reason names which (it reveals nothing secret).
 * A revoked token too: the revocations are read on every request, so `npm run token -- --revoke-agent`
 * against a running bot holds from its next request on.
 */

const principals = new WeakMap<Request, AgentPrincipal>();

export function requireAgent(authSecret: string, now: () => number, revocations?: AgentTokenRevocations) {
  // Express 5 hands a rejection (the store unreachable: 503) to the error middleware.
  return async (req: Request, res: Response, next: NextFunction) => {
    const header = req.get("authorization") ?? "";
    const match = /^Bearer\s+(\S+)$/i.exec(header);
    if (!match?.[1]) {
      res.setHeader("WWW-Authenticate", 'Bearer realm="agents"');
      next(new AppError("UNAUTHORIZED", "an agent token is required: Authorization: Bearer <token>"));
      return;
    }
    const check = await checkAgentToken(authSecret, match[1], now(), revocations);
    if (!check.ok) {
      res.setHeader("WWW-Authenticate", `Bearer realm="agents", error="invalid_token"`);
      next(new AppError("UNAUTHORIZED", `agent token refused: ${check.reason}`));
      return;
    }
    principals.set(req, check.principal);
    next();
  };
}

/** The agent `requireAgent` let through (a route behind it always has one). */
export function agentOf(req: Request): AgentPrincipal {
  const principal = principals.get(req);
  if (!principal) throw new AppError("UNAUTHORIZED", "an agent token is required");
  return principal;
}
