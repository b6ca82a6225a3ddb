import { fileURLToPath } from "node:url";
import type express from "express";
import type { Request, Response } from "express";
import { browserBundle } from "../../web/bundle.ts";

/** The page and its assets: files in ./public, nothing from a CDN, nothing fetched from anywhere else. */
const PUBLIC_DIR = fileURLToPath(new URL("./public/", import.meta.url));
const ASSET = /^[a-z][a-z0-9-]*\.(js|css|svg)$/;

/**
 * The page's scripts (index.html loads both): each public/*.ts entry bundled with what it imports (see
 * web/bundle.ts). The other .ts files under public/ are inside these bundles and not served on their own.
 */
const SCRIPTS: Record<string, URL> = {
  "console.js": new URL("./public/console.ts", import.meta.url),
  "agent-panel.js": new URL("./public/agent-panel.ts", import.meta.url),
};
const TYPES: Record<string, string> = {
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
};

/** Only our own origin; no inline script or style, so text from a card can never run. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

export function mountStatic(app: express.Express): void {
  app.get("/", (_req, res) => {
    res.redirect(302, "/console");
  });

  app.get("/console", (_req, res, next) => {
    res.set({ "Content-Security-Policy": CONTENT_SECURITY_POLICY, "Cache-Control": "no-cache" });
    res.type("html");
    send(res, "index.html", next);
  });

  app.get("/console/assets/:file", async (req: Request<{ file: string }>, res, next) => {
    const extension = ASSET.exec(req.params.file)?.[1];
    const type = extension === undefined ? undefined : TYPES[extension];
    if (type === undefined) {
      res.status(404).type("text/plain").send("Not found");
      return;
    }
    res.set({ "Content-Type": type, "Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff" });
    if (extension === "js") {
      const script = Object.hasOwn(SCRIPTS, req.params.file) ? SCRIPTS[req.params.file] : undefined;
      if (script) res.send(await browserBundle(script));
      else res.status(404).type("text/plain").send("Not found");
      return;
    }
    send(res, req.params.file, next);
  });
}

function send(res: Response, file: string, next: (error?: unknown) => void): void {
  res.sendFile(file, { root: PUBLIC_DIR, dotfiles: "deny" }, (error?: Error & { status?: number }) => {
    if (!error) return;
    if (error.status === 404 && !res.headersSent) {
      res.status(404).type("text/plain").send("Not found");
      return;
    }
    if (!res.headersSent) next(error);
  });
}
