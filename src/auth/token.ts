import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * Signed user tokens: `v1.<base64url(JSON {sub, exp})>.<base64url(HMAC-SHA256)>`.
 * `sub` is the Feishu open_id the bearer acts as; `exp` is a Unix time in milliseconds.
 */

export const DEFAULT_TOKEN_TTL_MS = 30 * 24 * 60 * 60 * 1000;

export function signToken(secret: string, userId: string, expiresAt: number): string {
  const payload = Buffer.from(JSON.stringify({ sub: userId, exp: expiresAt })).toString("base64url");
  return `v1.${payload}.${mac(secret, payload)}`;
}

export type TokenCheck = { ok: true; userId: string; expiresAt: number } | { ok: false; reason: string };

export function verifyToken(secret: string, token: string, now: number): TokenCheck {
  const parts = token.split(".");
  if (parts.length !== 3 || parts[0] !== "v1") return { ok: false, reason: "malformed token" };
  const [, payload = "", signature = ""] = parts;
  const expected = Buffer.from(mac(secret, payload));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
    return { ok: false, reason: "bad signature" };
  }
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
  } catch {
    return { ok: false, reason: "malformed token" };
  }
  if (typeof claims !== "object" || claims === null) return { ok: false, reason: "malformed token" };
  const { sub, exp } = claims as { sub?: unknown; exp?: unknown };
  if (typeof sub !== "string" || sub === "" || typeof exp !== "number")
    return { ok: false, reason: "malformed token" };
  if (exp <= now) return { ok: false, reason: "token expired" };
  return { ok: true, userId: sub, expiresAt: exp };
}

function mac(secret: string, payload: string): string {
  return createHmac("sha256", secret).update(`v1.${payload}`).digest("base64url");
}
