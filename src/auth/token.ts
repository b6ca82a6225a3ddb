import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import type { Revocation, TokenRevocations } from "../store/token-revocations.ts";

/**
 * Signed user tokens: `v1.<base64url(JSON {sub, exp, iat})>.<base64url(HMAC-SHA256)>`.
 * `sub` is the Feishu open_id the bearer acts as; `exp` and `iat` (issued at) are Unix times in milliseconds.
 * A token is revoked when its user was revoked after it was issued (store/token-revocations.ts); tokens from
 * before `iat` existed count as issued at 0, so any revocation ends them.
 *
 * A token issued "in the future" (`iat` beyond `MAX_CLOCK_SKEW_MS` from now) is refused: signed with a
 * later `iat`, it would outlive every revocation written before that time (issue 24 item 15). Once that
 * time has come it would be good again, so tokens also carry the user's revocation generation (`gen`, read
 * from the store when they are minted): a revocation moves the generation on, and a token of an earlier
 * generation is revoked whatever its clock said. Tokens without `gen` (older ones, or minted where the bot's
 * database could not be read) fall back to the `iat` rule.
 *
 * A sign-in link carries a token of its own kind (`use: "link"`, a nonce `jti`, a day at most): it is good
 * only at `/auth/link`, and there only once (web/auth.ts); everywhere else it is refused.
 */

/** How far ahead of this clock a token's `iat` may be: the clocks of the CLI's machine and the bot's. */
export const MAX_CLOCK_SKEW_MS = 2 * 60 * 1000;
/** A personal sign-in link opens once, within a day (the cookie it sets is the browser's sign-in). */
export const SIGN_IN_LINK_TTL_MS = 24 * 60 * 60 * 1000;

/** Tokens made with `npm run token` for desktop clients and agents: revocable, so they may last a while. */
export const DEFAULT_TOKEN_TTL_MS = 30 * 24 * 60 * 60 * 1000;
/** A browser sign-in (the session page's cookie): a working day, so a forgotten browser does not stay in. */
export const DEFAULT_SIGNIN_TTL_MS = 12 * 60 * 60 * 1000;

export function signToken(
  secret: string,
  userId: string,
  expiresAt: number,
  issuedAt = Date.now(),
  generation?: number,
): string {
  const claims = {
    sub: userId,
    exp: expiresAt,
    iat: issuedAt,
    ...(generation !== undefined ? { gen: generation } : {}),
  };
  const payload = Buffer.from(JSON.stringify(claims)).toString("base64url");
  return `v1.${payload}.${mac(secret, payload)}`;
}

/** A sign-in link's token: `use: "link"` and a random `jti`, so no two links are the same text. */
export function signLinkToken(
  secret: string,
  userId: string,
  expiresAt: number,
  issuedAt: number,
  generation?: number,
): string {
  const claims = {
    sub: userId,
    exp: expiresAt,
    iat: issuedAt,
    ...(generation !== undefined ? { gen: generation } : {}),
    use: "link",
    jti: randomBytes(12).toString("base64url"),
  };
  const payload = Buffer.from(JSON.stringify(claims)).toString("base64url");
  return `v1.${payload}.${mac(secret, payload)}`;
}

export type TokenCheck =
  | { ok: true; userId: string; expiresAt: number; issuedAt: number; generation?: number; link: boolean }
  | { ok: false; reason: string };

const claimsSchema = z.object({
  sub: z.string().min(1),
  exp: z.number(),
  iat: z.number().optional(),
  gen: z.number().int().min(0).optional(),
  use: z.literal("link").optional(),
});

/**
 * The token as signed: signature, claims, expiry, the issuer's clock. Whether its user was revoked since is the
 * store's to say: `checkToken`, which every door that admits a person goes through.
 */
export function verifyToken(
  secret: string,
  token: string,
  now: number,
  options: { allowLink?: boolean } = {},
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
  const { sub, exp, iat = 0, gen, use } = claims.data;
  if (use === "link" && !options.allowLink) return { ok: false, reason: "a sign-in link is not a token" };
  if (exp <= now) return { ok: false, reason: "token expired" };
  if (iat > now + MAX_CLOCK_SKEW_MS) return { ok: false, reason: "token issued in the future" };
  return {
    ok: true,
    userId: sub,
    issuedAt: iat,
    ...(gen !== undefined ? { generation: gen } : {}),
    expiresAt: exp,
    link: use === "link",
  };
}

/**
 * `verifyToken`, then the user's revocation as the store has it now (one read; on Postgres, whichever instance
 * revoked them). A store that cannot be read rejects (DatabaseUnavailableError on Postgres): never a pass.
 */
export async function checkToken(
  secret: string,
  token: string,
  now: number,
  revocations: TokenRevocations | undefined,
  options: { allowLink?: boolean } = {},
): Promise<TokenCheck> {
  const check = verifyToken(secret, token, now, options);
  if (!check.ok || !revocations) return check;
  if (isRevoked(check, await revocations.revocation(check.userId)))
    return { ok: false, reason: "token revoked" };
  return check;
}

/** The one revocation rule, for a token being checked and for a socket it opened (ws/hub.ts heartbeat). */
export function isRevoked(
  token: { issuedAt: number; generation?: number },
  revocation: Revocation | undefined,
): boolean {
  if (!revocation) return false;
  if (token.generation !== undefined) return token.generation < revocation.generation;
  return token.issuedAt < revocation.notBefore;
}

/** The generation a token minted now carries: undefined without a store (then the `iat` rule holds). */
export async function generationOf(
  revocations: TokenRevocations | undefined,
  userId: string,
): Promise<number | undefined> {
  if (!revocations) return undefined;
  return (await revocations.revocation(userId))?.generation ?? 0;
}

function mac(secret: string, payload: string): string {
  return createHmac("sha256", secret).update(`v1.${payload}`).digest("base64url");
}
