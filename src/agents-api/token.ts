import { createHmac, timingSafeEqual } from "node:crypto";
import { z } from "zod";

/**
 * Agent tokens: `a1.<base64url(JSON {agent, may, exp})>.<base64url(HMAC-SHA256)>`, a different kind from the
 * user tokens of auth/token.ts (`v1.`). The prefix is inside the MAC, so neither kind can be passed off as the
 * other: a user token is refused at /mcp and /api/tasks, an agent token at /ws and the session pages.
 * `may` is the allow-list: the open_ids (`ou_…`) and chat ids (`oc_…`) this agent may put a card in front of.
 */

export const AGENT_TOKEN_TTL_MS = 90 * 24 * 60 * 60 * 1000;

const AGENT_NAME = /^[\p{L}\p{N}][\p{L}\p{N} ._-]{0,39}$/u;
const TARGET_ID = /^o[uc]_[A-Za-z0-9_-]{1,64}$/;

export interface AgentPrincipal {
  /** Shown on every card it opens (`Claude Code 正在处理…`) and in the audit. */
  agent: string;
  mayAsk: ReadonlySet<string>;
  expiresAt: number;
}

const claimsSchema = z.strictObject({
  agent: z.string().regex(AGENT_NAME),
  may: z.array(z.string().regex(TARGET_ID)).max(1000),
  exp: z.number(),
});

/** Checks what `npm run token -- --agent` is given; the message says what to fix. */
export function checkAgentClaims(agent: string, mayAsk: readonly string[]): string | undefined {
  if (!AGENT_NAME.test(agent))
    return "agent name: 1-40 letters, digits, spaces, '.', '_' or '-', starting with a letter or digit";
  const bad = mayAsk.find((id) => !TARGET_ID.test(id));
  if (bad !== undefined) return `--may-ask: "${bad}" is neither an open_id (ou_…) nor a chat id (oc_…)`;
  return undefined;
}

export function signAgentToken(
  secret: string,
  claims: { agent: string; mayAsk: readonly string[]; expiresAt: number },
): string {
  const body = { agent: claims.agent, may: [...claims.mayAsk], exp: claims.expiresAt };
  const payload = Buffer.from(JSON.stringify(body)).toString("base64url");
  return `a1.${payload}.${mac(secret, payload)}`;
}

export type AgentTokenCheck = { ok: true; principal: AgentPrincipal } | { ok: false; reason: string };

export function verifyAgentToken(secret: string, token: string, now: number): AgentTokenCheck {
  const parts = token.split(".");
  if (parts.length !== 3) return { ok: false, reason: "malformed token" };
  if (parts[0] === "v1") return { ok: false, reason: "a user token is not an agent token" };
  if (parts[0] !== "a1") return { ok: false, reason: "malformed token" };
  const [, payload = "", signature = ""] = parts;
  const expected = Buffer.from(mac(secret, payload));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given))
    return { ok: false, reason: "bad signature" };
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  } catch (error) {
    return { ok: false, reason: `malformed token (${error instanceof Error ? error.name : "parse"})` };
  }
  const claims = claimsSchema.safeParse(raw);
  if (!claims.success) return { ok: false, reason: "malformed token" };
  if (claims.data.exp <= now) return { ok: false, reason: "token expired" };
  return {
    ok: true,
    principal: { agent: claims.data.agent, mayAsk: new Set(claims.data.may), expiresAt: claims.data.exp },
  };
}

function mac(secret: string, payload: string): string {
  return createHmac("sha256", secret).update(`a1.${payload}`).digest("base64url");
}
