import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import { MAX_CLOCK_SKEW_MS } from "../auth/token.ts";

/**
 * Agent tokens: `a1.<base64url(JSON {agent, may, exp})>.<base64url(HMAC-SHA256)>`, a different kind from the
 * user tokens of auth/token.ts (`v1.`). The prefix is inside the MAC, so neither kind can be passed off as the
 * other: a user token is refused at /mcp and /api/tasks, an agent token at /ws and the session pages.
 * `may` is the allow-list: the open_ids (`ou_…`) and chat ids (`oc_…`) this agent may put a card in front of.
 *
 * `jti` is the token's id (`at_…`), `iat` when it was issued (issue 24 items 8, 11, 15): a task and an ask
 * belong to the token id that made them, a revocation names a token id or an agent name (every token of that
 * name issued before it), and an `iat` beyond the clock skew is refused, since it would outlive revocations.
 * Tokens from before these claims get an id derived from their payload and count as issued at 0.
 */

export const AGENT_TOKEN_TTL_MS = 90 * 24 * 60 * 60 * 1000;

const AGENT_NAME = /^[\p{L}\p{N}][\p{L}\p{N} ._-]{0,39}$/u;
const TARGET_ID = /^o[uc]_[A-Za-z0-9_-]{1,64}$/;

const TOKEN_ID = /^at_[A-Za-z0-9_-]{8,64}$/;

export interface AgentPrincipal {
  /** Shown on every card it opens (`Claude Code 正在处理…`) and in the audit. */
  agent: string;
  mayAsk: ReadonlySet<string>;
  expiresAt: number;
  /** The token's id: what owns its tasks and asks, and what `--revoke-token` names. */
  tokenId: string;
  /** When it was issued (0 for tokens from before `iat`). */
  issuedAt: number;
}

/** Whether a token is revoked now (agents-api/token-store.ts reads it from the store on every request). */
export interface AgentTokenRevocations {
  isRevoked(token: { tokenId: string; agent: string; issuedAt: number }): Promise<boolean>;
}

const claimsSchema = z.strictObject({
  agent: z.string().regex(AGENT_NAME),
  may: z.array(z.string().regex(TARGET_ID)).max(1000),
  exp: z.number(),
  iat: z.number().optional(),
  jti: z.string().regex(TOKEN_ID).optional(),
});

/** A fresh token id. */
export function newAgentTokenId(): string {
  return `at_${randomBytes(12).toString("base64url")}`;
}

export function isAgentTokenId(text: string): boolean {
  return TOKEN_ID.test(text);
}

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
  claims: {
    agent: string;
    mayAsk: readonly string[];
    expiresAt: number;
    issuedAt?: number;
    tokenId?: string;
  },
): string {
  const body = {
    agent: claims.agent,
    may: [...claims.mayAsk],
    exp: claims.expiresAt,
    iat: claims.issuedAt ?? Date.now(),
    jti: claims.tokenId ?? newAgentTokenId(),
  };
  const payload = Buffer.from(JSON.stringify(body)).toString("base64url");
  return `a1.${payload}.${mac(secret, payload)}`;
}

export type AgentTokenCheck = { ok: true; principal: AgentPrincipal } | { ok: false; reason: string };

/**
 * The token as signed: its MAC, claims, expiry and issue time. Pure and synchronous; it knows nothing of
 * revocations, which live in the store: a door admits an agent by `checkAgentToken`.
 */
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
  const { agent, may, exp, iat = 0 } = claims.data;
  if (exp <= now) return { ok: false, reason: "token expired" };
  if (iat > now + MAX_CLOCK_SKEW_MS) return { ok: false, reason: "token issued in the future" };
  const tokenId =
    claims.data.jti ?? `at_${createHash("sha256").update(payload).digest("base64url").slice(0, 22)}`;
  return { ok: true, principal: { agent, mayAsk: new Set(may), expiresAt: exp, tokenId, issuedAt: iat } };
}

/** `verifyAgentToken`, then the revocations (read on every call, so a revocation holds at the next one). */
export async function checkAgentToken(
  secret: string,
  token: string,
  now: number,
  revocations: AgentTokenRevocations | undefined,
): Promise<AgentTokenCheck> {
  const check = verifyAgentToken(secret, token, now);
  if (!check.ok || !revocations) return check;
  const { tokenId, agent, issuedAt } = check.principal;
  if (await revocations.isRevoked({ tokenId, agent, issuedAt }))
    return { ok: false, reason: "token revoked" };
  return check;
}

function mac(secret: string, payload: string): string {
  return createHmac("sha256", secret).update(`a1.${payload}`).digest("base64url");
}
