/**
 * The session page's run as it changes: this page's run and the chat's runs fetched from the API, and each
 * live snapshot from the hub applied (who may answer, which panels go, what is drawn).
 */
import { removePanel, renderActions, setCanAnswer } from "./session-asks.ts";
import { loadPermissions } from "./session-permissions.ts";
import { getJson, isLive, page, runPath, sessionPath } from "./session-state.ts";
import { renderHistory, renderOlderRun, renderQueue, renderRun, renderStatus } from "./session-view.ts";
import type { PageSnapshot } from "./wire.ts";

/** Fetches this page's run; renders it unless the live snapshot shows it already. */
export async function loadRun(): Promise<"signed-out" | "forbidden" | "error" | { canViewSession: boolean }> {
  if (!page.runId) return "error";
  let result: Awaited<ReturnType<typeof getJson>>;
  try {
    result = await getJson(runPath(page.runId).replace("/sessions/", "/api/sessions/"));
  } catch {
    return "error";
  }
  if (result.status === 401) return "signed-out";
  if (result.status === 403) return "forbidden";
  if (!result.ok || typeof result.body?.run !== "object" || result.body.run === null) return "error";
  page.run = result.body.run;
  if (!isLive()) renderRun(page.run);
  return { canViewSession: result.body.canViewSession === true };
}

export async function loadHistory(): Promise<void> {
  let result: Awaited<ReturnType<typeof getJson>>;
  try {
    result = await getJson(`/api${sessionPath()}/runs`);
  } catch {
    return;
  }
  if (!result.ok || !Array.isArray(result.body?.runs)) return;
  page.history = result.body.runs;
  renderHistory();
}

export function onSnapshot(snapshot: PageSnapshot): void {
  const wasLive = page.snapshot !== null && isLive();
  page.snapshot = snapshot;
  const run = snapshot.run;
  const live = isLive();
  // Only the active run's sender may answer; this follows a new run started by someone else.
  setCanAnswer(Boolean(live && snapshot.active && run && run.senderId === page.me));
  // No ask outlives its run; the cancelled frames follow, this just does not wait for them.
  if (!snapshot.active || !live) for (const requestId of [...page.panels.keys()]) removePanel(requestId);
  if (live) {
    if (page.runId) page.run = run;
    renderRun(run);
  } else {
    // This page's run has just been followed by another: fetch its final state once.
    if (wasLive) void loadRun().then(renderStatus);
    renderRun(page.run);
  }
  renderOlderRun(live);
  if (run && !page.history.some((entry) => entry.id === run.id && entry.status === run.status)) {
    void loadHistory();
    // A run that started or ended may have made (or used) a standing permission.
    void loadPermissions();
  }
  renderQueue(Array.isArray(snapshot.queued) ? snapshot.queued : [], snapshot.queuedCount);
  renderStatus();
  renderActions();
}
