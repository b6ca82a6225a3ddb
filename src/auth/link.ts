import { SIGN_IN_LINK_TTL_MS, signLinkToken } from "./token.ts";

/**
 * A personal sign-in link for the session pages: `<PUBLIC_URL>/auth/link?token=…`, which sets the sign-in
 * cookie (web/auth.ts) and carries on to `/`. One owner of the link's shape, for `npm run token` and for the
 * bot's reply to /login in a private chat. Pure.
 *
 * The link's token is a link token (auth/token.ts): it opens once, within `SIGN_IN_LINK_TTL_MS` (or the
 * shorter `ttlMs`), and is no bearer token anywhere else — a desktop client gets a token of its own.
 */
export interface PersonalLink {
  url: string;
  expiresAt: number;
}

export function personalLink(options: {
  publicUrl: string;
  authSecret: string;
  userId: string;
  now: number;
  ttlMs?: number;
  /** The user's revocation generation (store/token-revocations.ts), when the store can be read. */
  generation?: number;
}): PersonalLink {
  const expiresAt = options.now + Math.min(options.ttlMs ?? SIGN_IN_LINK_TTL_MS, SIGN_IN_LINK_TTL_MS);
  const token = signLinkToken(options.authSecret, options.userId, expiresAt, options.now, options.generation);
  const base = options.publicUrl.replace(/\/+$/, "");
  return { url: `${base}/auth/link?token=${encodeURIComponent(token)}`, expiresAt };
}
