import { createHmac, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import type { TokenRevocations } from "../store/token-revocations.ts";

/**
 * Signed user tokens: `v1.<base64url(JSON {sub, exp, iat})>.<base64url(HMAC-SHA256)>`.
 * `sub` is the Feishu open_id the bearer acts as; `exp` and `iat` (issued at) are Unix times in milliseconds.
 * A token is revoked when its user was revoked after it was issued (store/token-revocations.ts); tokens from
 * before `iat` existed count as issued at 0, so any revocation ends them.
 */

/** Tokens made with `npm run token` for desktop clients and agents: revocable, so they may last a while. */
export const DEFAULT_TOKEN_TTL_MS = 30 * 24 * 60 * 60 * 1000;
/** A browser sign-in (the session page's cookie): a working day, so a forgotten browser does not stay in. */
export const DEFAULT_SIGNIN_TTL_MS = 12 * 60 * 60 * 1000;

export function signToken(secret: string, userId: string, expiresAt: number, issuedAt = Date.now()): string {
  const claims = { sub: userId, exp: expiresAt, iat: issuedAt };
  const payload = Buffer.from(JSON.stringify(claims)).toString("base64url");
  return `v1.${payload}.${mac(secret, payload)}`;
}

export type TokenCheck =
  | { ok: true; userId: string; expiresAt: number; issuedAt: number }
  | { ok: false; reason: string };

const claimsSchema = z.object({
  sub: z.string().min(1),
  exp: z.number(),
  iat: z.number().optional(),
});

export function verifyToken(
  secret: string,
  token: string,
  now: number,
  revocations?: TokenRevocations,
): TokenCheck {
  const parts = token.split(".");
  if (parts.length !== 3 || parts[0] !== "v1") return { ok: false, reason: "malformed token" };
  const [, payload = "", signature = ""] = parts;
  const expected = Buffer.from(mac(secret, payload));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
    return { ok: false, reason: "bad signature" };
  }
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  } catch {
    return { ok: false, reason: "malformed token" };
  }
  const claims = claimsSchema.safeParse(json);
  if (!claims.success) return { ok: false, reason: "malformed token" };
  const { sub, exp, iat = 0 } = claims.data;
  if (exp <= now) return { ok: false, reason: "token expired" };
  const notBefore = revocations?.notBefore(sub);
  if (notBefore !== undefined && iat < notBefore) return { ok: false, reason: "token revoked" };
  return { ok: true, userId: sub, expiresAt: exp, issuedAt: iat };
}

function mac(secret: string, payload: string): string {
  return createHmac("sha256", secret).update(`v1.${payload}`).digest("base64url");
}
