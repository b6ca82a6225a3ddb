import { fileURLToPath } from "node:url";
import type express from "express";
import type { Request, Response } from "express";
import { MARKDOWN_IT_FILE, markdownItBundle } from "../../web/vendor.ts";

/** The page and its assets: files in ./public, nothing from a CDN, nothing fetched from anywhere else. */
const PUBLIC_DIR = fileURLToPath(new URL("./public/", import.meta.url));
const ASSET = /^[a-z][a-z0-9-]*\.(js|css|svg)$/;
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

  app.get("/console/assets/:file", (req: Request<{ file: string }>, res, next) => {
    const extension = ASSET.exec(req.params.file)?.[1];
    const type = extension === undefined ? undefined : TYPES[extension];
    if (type === undefined) {
      res.status(404).type("text/plain").send("Not found");
      return;
    }
    res.set({ "Content-Type": type, "Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff" });
    // The file on disk re-exports the npm package for Node; a browser gets the package bundled (web/vendor.ts).
    if (req.params.file === MARKDOWN_IT_FILE) {
      res.send(markdownItBundle());
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
