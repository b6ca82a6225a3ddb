/**
 * The session page's socket: connecting with the sign-in cookie, reconnecting with backoff, subscribing (which
 * re-sends the pending asks, checked off by the pong that follows), and each frame of the hub's handed to the
 * part of the page it is about.
 */

import { fill } from "./page-text.ts";
import { cancelledText, notice, onAsk, removePanel, setCanAnswer } from "./session-asks.ts";
import { loadRun, onSnapshot } from "./session-run.ts";
import { showForbidden, signedOut } from "./session-sign-in.ts";
import { byTestId, getJson, page, send, show, T } from "./session-state.ts";
import { renderStatus } from "./session-view.ts";
import type { PageFrame } from "./wire.ts";

const RECONNECT_MIN_MS = 500;
const RECONNECT_MAX_MS = 15_000;

export function connect(): void {
  clearTimeout(page.reconnectTimer);
  if (page.stopped) return;
  const url = `${location.protocol === "https:" ? "wss:" : "ws:"}//${location.host}/ws`;
  let ws: WebSocket;
  try {
    ws = new WebSocket(url);
  } catch {
    return scheduleReconnect();
  }
  page.ws = ws;
  let opened = false;
  ws.addEventListener("open", () => {
    opened = true;
    subscribe();
  });
  ws.addEventListener("message", (event) => {
    let frame: unknown;
    try {
      frame = JSON.parse(String(event.data));
    } catch {
      return;
    }
    if (isFrame(frame)) handle(frame);
  });
  ws.addEventListener("close", () => {
    if (page.ws !== ws) return;
    page.ws = null;
    page.resync = null;
    for (const [requestId, panel] of page.panels) if (panel.busy) page.unconfirmed.add(requestId);
    if (page.stopped) return;
    byTestId("connection").hidden = false;
    // A refused upgrade looks like any other drop; if the sign-in has lapsed, say so instead of retrying.
    if (!opened) {
      getJson("/auth/me")
        .then((me) => (me.status === 401 ? signedOut() : scheduleReconnect()))
        .catch(() => scheduleReconnect());
      return;
    }
    scheduleReconnect();
  });
}

function scheduleReconnect(): void {
  if (page.stopped) return;
  const base = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** page.attempts);
  page.attempts += 1;
  clearTimeout(page.reconnectTimer);
  page.reconnectTimer = setTimeout(connect, base * (0.7 + Math.random() * 0.6));
}

addEventListener("online", () => {
  if (!page.ws && !page.stopped) connect();
});

/**
 * Subscribing re-sends every pending ask; the hub answers one connection's frames in order, so the pong to
 * the ping sent right after marks the end of that list — panels not re-sent by then were settled meanwhile.
 */
function subscribe(): void {
  page.resyncCount += 1;
  const resync = { marker: `resync-${page.resyncCount}`, seen: new Set<string>() };
  page.resync = resync;
  send({ type: "subscribe", sessionId: page.sessionId });
  send({ type: "ping", sessionId: resync.marker });
}

/** A frame of the hub's (ws/protocol.ts): an object with a type and an object of data. */
function isFrame(value: unknown): value is PageFrame {
  if (typeof value !== "object" || value === null || !("type" in value) || typeof value.type !== "string")
    return false;
  return !("data" in value) || (typeof value.data === "object" && value.data !== null);
}

function handle(frame: PageFrame): void {
  switch (frame.type) {
    case "subscribed":
      if (frame.sessionId !== page.sessionId) return;
      page.attempts = 0;
      byTestId("connection").hidden = true;
      show("session");
      page.canCancel = frame.data?.canCancel === true;
      // On an earlier run's page nothing is answerable; the snapshot that follows settles it either way.
      return setCanAnswer(frame.data?.canAnswer === true && !page.runId);
    case "session_snapshot":
      if (frame.sessionId === page.sessionId && frame.data) onSnapshot(frame.data);
      return;
    case "ask_user_questions":
      if (frame.sessionId === page.sessionId && frame.data) onAsk(frame.data);
      return;
    case "ask_user_questions_accepted":
      if (removePanel(frame.data?.requestId)) notice(T.asks.accepted);
      return;
    case "ask_user_questions_cancelled":
      if (removePanel(frame.data?.requestId)) notice(cancelledText(frame.data?.reason));
      return;
    case "cancelled":
      if (frame.sessionId === page.sessionId) notice(T.actions.taskCancelled);
      return;
    case "pong":
      if (page.resync && frame.sessionId === page.resync.marker) finishResync();
      return;
    case "error":
      return onError(frame);
    default:
      return;
  }
}

function finishResync(): void {
  if (!page.resync) return;
  const { seen } = page.resync;
  page.resync = null;
  for (const requestId of [...page.panels.keys()]) if (!seen.has(requestId)) removePanel(requestId);
  for (const requestId of page.unconfirmed) {
    const panel = page.panels.get(requestId);
    if (!panel) continue;
    panel.setBusy(false);
    panel.showError(T.asks.lostInTransit);
  }
  page.unconfirmed.clear();
  renderStatus();
}

function onError(frame: Extract<PageFrame, { type: "error" }>): void {
  const { code, message, requestId, action } = frame.data ?? {};
  // 延长 or 取消任务 refused: said where the buttons are; the page itself stays as it is.
  if (action) {
    if (code === "unavailable") return notice(T.asks.unavailable, "error");
    if (code === "forbidden") return notice(T.run.onlyOwner, "error");
    if (code === "extend_limit") return notice(T.actions.extendLimit, "error");
    return notice(T.actions.taskNotRunning, "error");
  }
  const panel = requestId ? page.panels.get(requestId) : undefined;
  if (panel) {
    if (code === "stale_request") return panel.markStale(T.asks.stale);
    panel.setBusy(false);
    if (code === "forbidden") {
      panel.setCanAnswer(false);
      return panel.showError(T.asks.onlySender);
    }
    if (code === "unavailable") return panel.showError(T.asks.unavailable);
    return panel.showError(
      code === "invalid_answers"
        ? fill(T.asks.invalid, { message: String(message) })
        : String(message ?? code),
    );
  }
  if (code !== "forbidden" || frame.sessionId !== page.sessionId || requestId) return;
  // The session is no longer this viewer's to follow (someone else's task took the chat over); a run page
  // keeps the run it loaded, which stays its sender's to see, and only stops following the chat.
  if (page.runId && page.run) {
    page.stopped = true;
    page.ws?.close();
    for (const panelId of [...page.panels.keys()]) removePanel(panelId);
    page.snapshot = null;
    void loadRun().then(renderStatus);
    return;
  }
  showForbidden();
}
