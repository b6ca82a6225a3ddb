import { fill } from "./page-text.ts";
import { loadPermissions } from "./session-permissions.ts";
import { loadHistory, loadRun } from "./session-run.ts";
import { showForbidden, showSignIn, showViewer, signedOut } from "./session-sign-in.ts";
import { connect } from "./session-socket.ts";
import { byTestId, getJson, page, show, showPageError, T } from "./session-state.ts";
import { renderStatus } from "./session-view.ts";

/**
 * The session page: who is looking (`/auth/me`), the session's title (`/api/sessions/:id`), then everything
 * live over `/ws` — the browser sends the HttpOnly sign-in cookie with the upgrade, so no token ever sits in
 * a URL or in this script. Subscribing re-sends the pending questions with their original requestIds, which
 * is how a refresh or a reconnect gets its panels back (seed ask-user-questions-resume §4).
 *
 * This file only boots the page; its parts: session-state.ts (the shared state and plumbing), session-socket.ts
 * (the hub's frames), session-run.ts (the run as it changes), session-view.ts (the run on screen),
 * session-asks.ts (questions and the task's buttons), session-sign-in.ts (signed out, forbidden, the viewer).
 */

async function boot(): Promise<void> {
  const sessionId = page.sessionId;
  if (!sessionId) return showPageError(T.errors.noSessionId);
  let me: Awaited<ReturnType<typeof getJson>>;
  try {
    me = await getJson("/auth/me");
  } catch {
    return showPageError(T.errors.unreachable);
  }
  if (me.status === 401) return showSignIn(me.body?.signIn);
  if (!me.ok || typeof me.body?.userId !== "string") return showPageError(T.errors.loadFailed);
  page.me = me.body.userId;
  showViewer(me.body);

  if (page.runId) {
    const loaded = await loadRun();
    if (loaded === "signed-out") return signedOut();
    if (loaded === "forbidden") return showForbidden();
    if (loaded === "error") return showPageError(T.errors.loadFailed);
    // The run's sender may always see their own task, even when the chat's session is not theirs to view.
    if (!loaded.canViewSession) {
      page.stopped = true;
      show("session");
      return renderStatus();
    }
  }

  let info: Awaited<ReturnType<typeof getJson>>;
  try {
    info = await getJson(`/api/sessions/${encodeURIComponent(sessionId)}`);
  } catch {
    return showPageError(T.errors.unreachable);
  }
  if (info.status === 401) return signedOut();
  if (info.status === 403) return showForbidden();
  if (!info.ok) return showPageError(T.errors.loadFailed);
  page.title = info.body?.title || T.page.untitledSession;
  byTestId("session-title").textContent = page.title;
  // topics (issue 19): a topic of a group is a session of its own; say so next to its title.
  byTestId("topic-badge").hidden = !info.body?.topic;
  document.title = fill(T.page.sessionTabTitle, { title: page.title });
  connect();
  void loadHistory();
  void loadPermissions();
}

boot();
