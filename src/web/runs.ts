import type express from "express";
import type { RunFeed } from "../domain/run-feed.ts";
import type { RunStatus, RunView } from "../domain/types.ts";
import { AppError } from "../errors.ts";
import { oneLine, truncate } from "../util/text.ts";
import { viewerOf } from "./auth.ts";

/**
 * Runs, one by one, for the session page. Every progress card links to its own run
 * (`/sessions/:id/runs/:runId`), so 会话详情 on an old card shows the task that card was about, not whatever
 * the chat runs now; the page lists the chat's earlier runs beside it.
 *
 * - `GET /api/sessions/:id/runs` — the history, newest first: for whoever may view the session.
 * - `GET /api/sessions/:id/runs/:runId` — one run: for whoever may view the session, and always for the
 *   run's own sender (it is their task, even after someone else's run took the chat over).
 *
 * Unknown, not-in-this-session and not-yours answer the same 403, so nobody can probe which runs exist.
 */

export const HISTORY_LIMIT = 50;
const TITLE_CHARS = 80;

export interface RunSummary {
  id: string;
  status: RunStatus;
  title: string;
  senderId: string;
  startedAt: number;
  endedAt?: number;
}

export interface RunsOptions {
  /** Every run, whoever runs it (core.runs). */
  runs: RunFeed;
  authSecret: string;
  now: () => number;
}

export function mountRunApi(app: express.Express, options: RunsOptions): void {
  const { runs: feed } = options;

  app.get("/api/sessions/:id/runs", async (req, res) => {
    res.setHeader("Cache-Control", "no-store");
    const userId = await viewerOf(req, options);
    if (!userId) throw unauthorized();
    const sessionId = req.params.id;
    if (!(await feed.canView(userId, sessionId))) throw forbidden();
    const runs = await feed.runs(sessionId, HISTORY_LIMIT);
    const active = feed.activeRun(sessionId);
    res.json({ activeRunId: active?.id ?? null, runs: runs.map(summary) });
  });

  app.get("/api/sessions/:id/runs/:runId", async (req, res) => {
    res.setHeader("Cache-Control", "no-store");
    const userId = await viewerOf(req, options);
    if (!userId) throw unauthorized();
    const { id: sessionId, runId } = req.params;
    const run = await feed.getRun(runId);
    if (!run || run.sessionId !== sessionId) throw forbidden();
    const mayViewSession = await feed.canView(userId, sessionId);
    if (run.senderId !== userId && !mayViewSession) throw forbidden();
    res.json({
      run,
      active: feed.activeRun(sessionId)?.id === run.id,
      // The run page links "back to the chat" only for those the session page will let in.
      canViewSession: mayViewSession,
    });
  });
}

function summary(run: RunView): RunSummary {
  return {
    id: run.id,
    status: run.status,
    title: truncate(oneLine(run.input), TITLE_CHARS),
    senderId: run.senderId,
    startedAt: run.startedAt,
    ...(run.endedAt !== undefined ? { endedAt: run.endedAt } : {}),
  };
}

/** Thrown to the app's error middleware, which answers `{error: {code, message}}` with its status. */
function unauthorized(): AppError {
  return new AppError("UNAUTHORIZED", "not signed in");
}

function forbidden(): AppError {
  return new AppError("FORBIDDEN", "you may not view this run");
}
