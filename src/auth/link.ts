import { DEFAULT_TOKEN_TTL_MS, signToken } from "./token.ts";

/**
 * A personal sign-in link for the session pages: `<PUBLIC_URL>/auth/link?token=…`, which sets the sign-in
 * cookie (web/auth.ts) and carries on to `/`. One owner of the link's shape, for `npm run token` and for the
 * bot's reply to /login in a private chat. Pure.
 */
export interface PersonalLink {
  url: string;
  token: string;
  expiresAt: number;
}

export function personalLink(options: {
  publicUrl: string;
  authSecret: string;
  userId: string;
  now: number;
  ttlMs?: number;
}): PersonalLink {
  const expiresAt = options.now + (options.ttlMs ?? DEFAULT_TOKEN_TTL_MS);
  const token = signToken(options.authSecret, options.userId, expiresAt);
  const base = options.publicUrl.replace(/\/+$/, "");
  return { url: `${base}/auth/link?token=${encodeURIComponent(token)}`, token, expiresAt };
}
