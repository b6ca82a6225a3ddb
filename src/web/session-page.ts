import fs from "node:fs";
import type express from "express";
import type { Response } from "express";
import type { RunFeed } from "../domain/run-feed.ts";
import type { StandingPermissions } from "../domain/standing-permissions.ts";
import { topicInfo } from "../domain/topic-view.ts";
import { AppError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import type { TokenRevocations } from "../store/token-revocations.ts";
import { catalogues, currentLocale, type Locale, strings } from "../strings/index.ts";
import { type LocalUser, mountAuth, viewerOf } from "./auth.ts";
import { browserBundle } from "./bundle.ts";
import { renderPage } from "./page-strings.ts";
import { mountPermissionsApi } from "./permissions.ts";
import { mountRunApi } from "./runs.ts";

/**
 * The session page (`GET /sessions/:id`, the 会话详情 link on every progress card) and its assets.
 * The HTML is the same for every session and every viewer (public/session.html in the bot's language, see
 * page-strings.ts): it holds no session content, so a signed-out viewer (or one who may not view the
 * session) learns nothing from it. The content arrives over
 * the WebSocket, which checks who may see what; `/api/sessions/:id` adds the title under the same rule.
 */

export interface SessionPageOptions {
  /** Every run, whoever runs it (core.runs): the bot's own and outside agents' tasks alike. */
  runs: RunFeed;
  authSecret: string;
  now: () => number;
  logger: Logger;
  /** Present only in local mode: the users one may sign in as without Feishu. */
  localUsers?: LocalUser[];
  revocations?: TokenRevocations;
  signInTtlMs?: number;
  /** The sessions' "always allow" choices (store/permissions.ts): listed on the page, revoked from it. */
  standing?: StandingPermissions;
}

interface Asset {
  body: Buffer;
  type: string;
}

const JS = "text/javascript; charset=utf-8";

/** Files under `/web/` read from public/ as they are; nothing else is served but the scripts below. */
const ASSETS: Record<string, { type: string }> = {
  "session.css": { type: "text/css; charset=utf-8" },
};

/**
 * The page's script: public/session.ts bundled with what it imports (the question panel, the answer rule,
 * the console's markdown renderer and status icons, markdown-it), see bundle.ts.
 */
const SCRIPTS: Record<string, URL> = {
  "session.js": new URL("./public/session.ts", import.meta.url),
};

/**
 * Scripts and styles from this origin only; the socket goes back to this origin (CSP3 `'self'` covers
 * ws:/wss: on the same host); no framing (clickjacking an answer form).
 */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

export function mountSessionPages(app: express.Express, options: SessionPageOptions): void {
  mountAuth(app, options);
  const publicDir = new URL("./public/", import.meta.url);
  const read = (source: URL, type: string): Asset => ({ body: fs.readFileSync(source), type });
  const template = fs.readFileSync(new URL("session.html", publicDir), "utf8");
  // The bot's locale is chosen once at start-up; rendered on first use and kept, per locale.
  const pages = new Map<Locale, Asset>();
  const page = (): Asset => {
    const locale = currentLocale();
    let rendered = pages.get(locale);
    if (!rendered) {
      const body = Buffer.from(renderPage(template, catalogues[locale]), "utf8");
      rendered = { body, type: "text/html; charset=utf-8" };
      pages.set(locale, rendered);
    }
    return rendered;
  };
  // Once now, so a template naming a string the catalogue lacks stops the start, not a viewer's request.
  page();
  const assets = new Map(
    Object.entries(ASSETS).map(([file, { type }]) => [file, read(new URL(file, publicDir), type)]),
  );

  // One page for a chat's session and for each of its runs (the link on each card, see runs.ts).
  app.get(["/sessions/:id", "/sessions/:id/runs/:runId"], (_req, res) => {
    res.setHeader("Content-Security-Policy", PAGE_CSP);
    res.setHeader("Referrer-Policy", "no-referrer");
    sendAsset(res, page());
  });

  app.get("/web/:file", async (req, res, next) => {
    const script = Object.hasOwn(SCRIPTS, req.params.file) ? SCRIPTS[req.params.file] : undefined;
    if (script) {
      sendAsset(res, { body: await browserBundle(script), type: JS });
      return;
    }
    const asset = assets.get(req.params.file);
    if (!asset) return next();
    sendAsset(res, asset);
  });

  mountRunApi(app, options);
  if (options.standing) mountPermissionsApi(app, { ...options, standing: options.standing });

  app.get("/api/sessions/:id", async (req, res) => {
    res.setHeader("Cache-Control", "no-store");
    const userId = await viewerOf(req, options);
    if (!userId) throw new AppError("UNAUTHORIZED", "not signed in");
    const sessionId = req.params.id;
    const session = await options.runs.session(sessionId);
    // Unknown and not-yours answer alike, so nobody can probe which sessions exist (as the hub does).
    if (!session || !(await options.runs.canView(userId, sessionId)))
      throw new AppError("FORBIDDEN", "you may not view this session");
    const topic = topicInfo(session);
    res.json({
      id: session.id,
      title: shownTitle(session.title),
      channel: session.channel,
      chatType: session.chatType,
      // topics (issue 19): a topic session says which group and message it belongs to.
      ...(topic ? { topic } : {}),
    });
  });
}

/**
 * A chat's title is stored when its session is made (feishu/topics.ts); one of the catalogue's own chat
 * titles, in any language, is shown in the bot's current one, so a session made before BOT_LOCALE changed
 * does not keep the old language. Any other title (a topic's first words, an agent's task) is shown as stored.
 */
function shownTitle(stored: string): string {
  for (const table of Object.values(catalogues)) {
    if (stored === table.sessions.privateTitle) return strings.sessions.privateTitle;
    if (stored === table.sessions.groupTitle) return strings.sessions.groupTitle;
  }
  return stored;
}

function sendAsset(res: Response, asset: Asset): void {
  res.setHeader("X-Content-Type-Options", "nosniff");
  // Small files: revalidate every time (express adds an ETag), so an upgrade never mixes old and new scripts.
  res.setHeader("Cache-Control", "no-cache");
  res.type(asset.type).send(asset.body);
}
