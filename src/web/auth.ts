import { createHash } from "node:crypto";
import type express from "express";
import type { Request, Response } from "express";
import { checkToken, DEFAULT_SIGNIN_TTL_MS, generationOf, signToken } from "../auth/token.ts";
import { AppError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import type { TokenRevocations } from "../store/token-revocations.ts";
import { strings } from "../strings/index.ts";
import { readCookie, SESSION_COOKIE, sameOrigin, sessionCookie } from "./cookie.ts";

/**
 * Sign-in for browser viewers (DESIGN §7). A link on a shared card never carries a token, so a viewer signs in
 * once — with a personal link the bot sends in a private chat (`/auth/link`), or in local mode as one of the
 * emulator's users (`/auth/local`) — and from then on the browser sends the `fpb_session` cookie: with page
 * requests and with the WebSocket upgrade. The cookie holds a signed user token (auth/token.ts).
 */

export interface LocalUser {
  openId: string;
  name: string;
}

export interface AuthOptions {
  authSecret: string;
  now: () => number;
  logger: Logger;
  /** Present only in local mode: the users one may sign in as without Feishu. */
  localUsers?: LocalUser[];
  /** Tokens issued before a user's revocation are refused (store/token-revocations.ts). */
  revocations?: TokenRevocations;
  /** How long a browser sign-in lasts (SIGNIN_TTL_HOURS); DEFAULT_SIGNIN_TTL_MS when absent. */
  signInTtlMs?: number;
}

/** How a signed-out page can sign in: the local users to pick from, or "use the bot's personal link". */
export type SignInOptions = { mode: "local"; users: LocalUser[] } | { mode: "feishu" };

const MAX_NEXT_CHARS = 2000;

export function mountAuth(app: express.Express, options: AuthOptions): void {
  const log = options.logger.child({ module: "web-auth" });
  const signInTtlMs = options.signInTtlMs ?? DEFAULT_SIGNIN_TTL_MS;
  const spendLink = linkSpender(options.revocations);

  app.get("/auth/link", async (req, res) => {
    const token = queryParam(req, "token");
    const check = token
      ? await checkToken(options.authSecret, token, options.now(), options.revocations, { allowLink: true })
      : { ok: false as const, reason: "no token" };
    // A link opens once (issue 24 item 15): whoever finds it in a chat log or a browser history later gets
    // nothing. Older links carrying a plain user token are spent the same way.
    const spent = check.ok && token && !(await spendLink(linkKey(token), check.expiresAt, options.now()));
    if (!check.ok || spent) {
      const reason = check.ok ? "link already used" : check.reason;
      log.debug({ reason }, "sign-in link refused");
      const title =
        reason === "token expired"
          ? strings.signIn.linkExpired
          : spent
            ? strings.signIn.linkUsed
            : strings.signIn.linkInvalid;
      return sendMessagePage(res, 401, { title, body: strings.signIn.linkHelp });
    }
    log.debug({ userId: check.userId }, "signed in with a personal link");
    // The cookie gets a token of its own, for a browser's lifetime: the link's may last far longer.
    const expiresAt = Math.min(check.expiresAt, options.now() + signInTtlMs);
    const cookieToken = signToken(
      options.authSecret,
      check.userId,
      expiresAt,
      options.now(),
      await generationOf(options.revocations, check.userId),
    );
    signIn(req, res, cookieToken, expiresAt - options.now());
  });

  if (options.localUsers) {
    const users = options.localUsers;
    app.get("/auth/local", async (req, res) => {
      const user = findLocalUser(users, queryParam(req, "user"));
      if (!user) {
        return sendMessagePage(res, 400, {
          title: strings.signIn.noSuchUser,
          body: strings.signIn.localUsers(
            users
              .map((candidate) => strings.signIn.localUser(candidate.name, candidate.openId))
              .join(strings.signIn.listSeparator) || strings.signIn.noLocalUsers,
          ),
        });
      }
      log.debug({ userId: user.openId }, "signed in as a local user");
      const token = signToken(
        options.authSecret,
        user.openId,
        options.now() + signInTtlMs,
        options.now(),
        await generationOf(options.revocations, user.openId),
      );
      signIn(req, res, token, signInTtlMs);
    });
  }

  app.post("/auth/logout", (req, res) => {
    // SameSite=Lax already keeps the cookie off cross-site POSTs; this also stops a foreign page signing you out.
    if (!sameOrigin(req.headers.origin, req.headers.host))
      throw new AppError("FORBIDDEN", "cross-site sign-out refused");
    res.setHeader("Set-Cookie", clearCookie(req));
    res.setHeader("Cache-Control", "no-store");
    res.status(204).end();
  });

  app.get("/auth/me", async (req, res) => {
    res.setHeader("Cache-Control", "no-store");
    const userId = await viewerOf(req, options);
    if (!userId) {
      // A stale or forged cookie is dropped so the browser stops sending it.
      if (readCookie(req.headers.cookie)) res.setHeader("Set-Cookie", clearCookie(req));
      res.status(401).json({
        error: { code: "UNAUTHORIZED", message: "not signed in" },
        signIn: signInOptions(options),
      });
      return;
    }
    const name = options.localUsers?.find((user) => user.openId === userId)?.name;
    res.json({ userId, ...(name ? { name } : {}) });
  });
}

/** Where spent links are kept: the revocations' table, or (no store, unit tests) this process's memory. */
function linkSpender(revocations: TokenRevocations | undefined) {
  if (revocations) return revocations.spendLink.bind(revocations);
  const spent = new Map<string, number>();
  return async (key: string, expiresAt: number, now: number): Promise<boolean> => {
    for (const [old, until] of spent) if (until < now) spent.delete(old);
    if (spent.has(key)) return false;
    spent.set(key, expiresAt);
    return true;
  };
}

/** Links are kept by hash: the table never holds a token that could be replayed. */
function linkKey(token: string): string {
  return createHash("sha256").update(token).digest("base64url");
}

/**
 * The local user a `?user=` names: the open_id, or the name the 400 page lists (`Alice`, `alice`), so the
 * README's `/auth/local?user=Alice` and a copy of the error's own list both work.
 */
export function findLocalUser(users: readonly LocalUser[], given: string | undefined): LocalUser | undefined {
  const wanted = given?.trim();
  if (!wanted) return undefined;
  const folded = wanted.toLowerCase();
  return (
    users.find((user) => user.openId === wanted) ??
    users.find((user) => user.name.toLowerCase() === folded || user.openId.toLowerCase() === folded)
  );
}

/** The signed-in user of a request (from the `fpb_session` cookie), or undefined. */
export async function viewerOf(
  req: Request,
  options: Pick<AuthOptions, "authSecret" | "now" | "revocations">,
): Promise<string | undefined> {
  const token = readCookie(req.headers.cookie, SESSION_COOKIE);
  if (!token) return undefined;
  const check = await checkToken(options.authSecret, token, options.now(), options.revocations);
  return check.ok ? check.userId : undefined;
}

export function signInOptions(options: Pick<AuthOptions, "localUsers">): SignInOptions {
  return options.localUsers ? { mode: "local", users: options.localUsers } : { mode: "feishu" };
}

/**
 * Where to go after signing in: a path on this site only. Anything else — absolute URLs, protocol-relative
 * `//host`, `/\host` (which browsers read as `//host`), control characters — goes to `/` (open redirects).
 */
export function safeNext(next: string | undefined): string {
  if (!next || next.length > MAX_NEXT_CHARS) return "/";
  if (!next.startsWith("/") || next.startsWith("//")) return "/";
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this rejects
  if (/[\\\u0000-\u001f\u007f]/.test(next)) return "/";
  const base = "http://next.invalid";
  try {
    const url = new URL(next, base);
    return url.origin === base ? next : "/";
  } catch {
    return "/";
  }
}

function signIn(req: Request, res: Response, token: string, ttlMs: number): void {
  res.setHeader(
    "Set-Cookie",
    sessionCookie(token, { maxAgeSeconds: Math.ceil(ttlMs / 1000), secure: isHttps(req) }),
  );
  // The link carried a token: keep it out of caches and out of the Referer of the next request.
  res.setHeader("Cache-Control", "no-store");
  res.setHeader("Referrer-Policy", "no-referrer");
  res.redirect(303, safeNext(queryParam(req, "next")));
}

function clearCookie(req: Request): string {
  return sessionCookie("", { maxAgeSeconds: 0, secure: isHttps(req) });
}

/**
 * Secure when the browser talks https to us, directly or through a proxy that says so. Trusting the header
 * here is harmless: a wrong "https" only makes the browser keep the cookie off plain http.
 */
function isHttps(req: Request): boolean {
  const forwarded = req.headers["x-forwarded-proto"];
  const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(",")[0]?.trim().toLowerCase();
  return req.secure || first === "https";
}

function queryParam(req: Request, name: string): string | undefined {
  const value: unknown = req.query[name];
  return typeof value === "string" && value !== "" ? value : undefined;
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

/** A small self-contained page for sign-in outcomes (no scripts, the page's own stylesheet), in the bot's language. */
function sendMessagePage(res: Response, status: number, page: { title: string; body: string }): void {
  res.status(status);
  res.setHeader("Cache-Control", "no-store");
  res.setHeader("Referrer-Policy", "no-referrer");
  res.setHeader("Content-Security-Policy", "default-src 'none'; style-src 'self'; frame-ancestors 'none'");
  res
    .type("html")
    .send(
      [
        "<!doctype html>",
        `<html lang="${escapeHtml(strings.web.lang)}"><head><meta charset="utf-8">`,
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        `<title>${escapeHtml(page.title)}</title>`,
        '<link rel="stylesheet" href="/web/session.css"></head>',
        '<body><main class="page"><section class="notice" data-testid="auth-message">',
        `<h1>${escapeHtml(page.title)}</h1><p>${escapeHtml(page.body)}</p>`,
        "</section></main></body></html>",
      ].join(""),
    );
}
