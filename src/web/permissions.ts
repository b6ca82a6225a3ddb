import type express from "express";
import type { Response } from "express";
import type { RunFeed } from "../domain/run-feed.ts";
import {
  type StandingPermission,
  type StandingPermissions,
  shownTool,
} from "../domain/standing-permissions.ts";
import type { TokenRevocations } from "../store/token-revocations.ts";
import { strings } from "../strings/index.ts";
import { viewerOf } from "./auth.ts";
import { sameOrigin } from "./cookie.ts";

/**
 * A session's standing permissions on its page (issue 30, "always allow"): what its ACP permission forms
 * were told to allow or refuse from now on, and 撤销 for the person who chose it (the task's sender then).
 *
 * - `GET /api/sessions/:id/permissions` — the list, for whoever may view the session (the page's viewing rule).
 * - `POST /api/sessions/:id/permissions/:permissionId/revoke` — forgets one: the next request of its kind
 *   shows the form again. Same-origin only (as `/auth/logout`), for its chooser only; others get 403.
 *
 * Unknown sessions and not-yours answer the same 403, as every session route does.
 */

export interface PermissionsApiOptions {
  runs: RunFeed;
  standing: StandingPermissions;
  authSecret: string;
  now: () => number;
  revocations?: TokenRevocations;
}

export interface ShownPermission {
  id: string;
  decision: StandingPermission["decision"];
  /** What it covers, in the bot's words (编辑（Edit）), as the card said it. */
  scope: string;
  /** The call it was chosen on. */
  title: string;
  grantedAt: number;
  /** The viewer chose it, so may revoke it. */
  canRevoke: boolean;
  /** The agent keeps it itself as well (it offered no "once" option): revoking here cannot reach that. */
  agentKeeps: boolean;
}

export function mountPermissionsApi(app: express.Express, options: PermissionsApiOptions): void {
  const { runs, standing } = options;

  app.get("/api/sessions/:id/permissions", async (req, res) => {
    res.setHeader("Cache-Control", "no-store");
    const userId = await viewerOf(req, options);
    if (!userId) return unauthorized(res);
    const sessionId = req.params.id;
    if (!(await runs.canView(userId, sessionId))) return forbidden(res, "you may not view this session");
    res.json({ permissions: (await standing.list(sessionId)).map((entry) => shown(entry, userId)) });
  });

  app.post("/api/sessions/:id/permissions/:permissionId/revoke", async (req, res) => {
    res.setHeader("Cache-Control", "no-store");
    if (!sameOrigin(req.headers.origin, req.headers.host))
      return forbidden(res, "cross-site request refused");
    const userId = await viewerOf(req, options);
    if (!userId) return unauthorized(res);
    const { id: sessionId, permissionId } = req.params;
    if (!(await runs.canView(userId, sessionId))) return forbidden(res, "you may not view this session");
    const entry = (await standing.list(sessionId)).find((one) => one.id === permissionId);
    if (!entry) {
      res.status(404).json({ error: { code: "NOT_FOUND", message: "no such permission in this session" } });
      return;
    }
    // The choice was the task's sender's to make; so is taking it back (the page's words: run.onlyOwner).
    if (entry.grantedBy !== userId)
      return forbidden(res, "only the person who started the task may revoke this permission");
    await standing.revoke(sessionId, permissionId);
    res.json({ revoked: permissionId });
  });
}

function shown(entry: StandingPermission, viewer: string): ShownPermission {
  const kinds: Record<string, string> = strings.acp.toolKinds;
  return {
    id: entry.id,
    decision: entry.decision,
    scope: strings.acp.standingScope(kinds[entry.kind] ?? entry.kind, shownTool(entry.tool)),
    title: entry.title,
    grantedAt: entry.grantedAt,
    canRevoke: entry.grantedBy === viewer,
    agentKeeps: entry.agentKeeps === true,
  };
}

function unauthorized(res: Response): void {
  res.status(401).json({ error: { code: "UNAUTHORIZED", message: "not signed in" } });
}

function forbidden(res: Response, message: string): void {
  res.status(403).json({ error: { code: "FORBIDDEN", message } });
}
