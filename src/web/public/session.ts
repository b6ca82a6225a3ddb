import { type AskPanel, createAskPanel } from "./ask-panel.ts";
import { svgIcon } from "./icons.ts";
import { markdownToHtml } from "./markdown.ts";
import { fill, PAGE_STRINGS_ID, parsePageStrings } from "./page-text.ts";
import { type HistoryRun, historyItems } from "./run-history.ts";
import type { PageAsk, PageFrame, PageRun, PageSnapshot, PageStep } from "./wire.ts";

/**
 * The session page: who is looking (`/auth/me`), the session's title (`/api/sessions/:id`), then everything
 * live over `/ws` — the browser sends the HttpOnly sign-in cookie with the upgrade, so no token ever sits in
 * a URL or in this script. Subscribing re-sends the pending questions with their original requestIds, which
 * is how a refresh or a reconnect gets its panels back (seed ask-user-questions-resume §4).
 */

// The page's words in the bot's language, as the server wrote them into the page (page-text.ts).
const T = parsePageStrings(document.getElementById(PAGE_STRINGS_ID)?.textContent ?? "");
// The card's words for a run's status: the server sends the card's own, so the two cannot drift.
const STATUS_TEXT: Record<string, string> = { ...T.status, none: T.page.noRun };
const ASK_TOOL = "ask_user_questions";
const RECONNECT_MIN_MS = 500;
const RECONNECT_MAX_MS = 15_000;
const NOTICE_MS = 4_000;

/** An element of session.html by its data-testid; the page cannot work without it, so a missing one throws. */
function byTestId(id: string): HTMLElement;
function byTestId<T extends HTMLElement>(id: string, type: new () => T): T;
function byTestId(id: string, type: new () => HTMLElement = HTMLElement): HTMLElement {
  const element = document.querySelector(`[data-testid="${id}"]`);
  if (!(element instanceof type)) throw new Error(`session page: session.html has no ${id} element`);
  return element;
}
const SECTIONS = ["loading", "sign-in-prompt", "forbidden", "page-error", "session"];

interface Viewer {
  userId: string;
  name?: string;
}

interface SignIn {
  mode?: string;
  users?: { openId: string; name: string }[];
}

const route = routeFromPath(location.pathname);
const page: {
  sessionId: string | null;
  runId: string | null;
  run: PageRun | null;
  history: HistoryRun[];
  title: string;
  me: string | null;
  canAnswer: boolean;
  snapshot: PageSnapshot | null;
  panels: Map<string, AskPanel>;
  unconfirmed: Set<string>;
  resync: { marker: string; seen: Set<string> } | null;
  resyncCount: number;
  ws: WebSocket | null;
  attempts: number;
  reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  stopped: boolean;
} = {
  sessionId: route?.sessionId ?? null,
  /** On `/sessions/:id/runs/:runId` (the link on each card): the run this page is about. */
  runId: route?.runId ?? null,
  /** That run as the API last gave it; shown whenever it is not the session's live run. */
  run: null,
  /** The chat's runs, newest first (`/api/sessions/:id/runs`). */
  history: [],
  title: T.page.untitledSession,
  me: null,
  canAnswer: false,
  snapshot: null,
  /** requestId → panel, in arrival order. */
  panels: new Map(),
  /** requestIds whose answer was in flight when the socket dropped: confirmed or re-opened after resync. */
  unconfirmed: new Set(),
  /** Set between `subscribe` and the pong that follows it: the asks the hub re-sent. */
  resync: null,
  resyncCount: 0,
  ws: null,
  attempts: 0,
  reconnectTimer: undefined,
  stopped: false,
};

function routeFromPath(pathname: string): { sessionId: string; runId: string | null } | null {
  const match = /^\/sessions\/([^/]+)(?:\/runs\/([^/]+))?\/?$/.exec(pathname);
  if (!match?.[1]) return null;
  try {
    return { sessionId: decodeURIComponent(match[1]), runId: match[2] ? decodeURIComponent(match[2]) : null };
  } catch {
    return null;
  }
}

const sessionPath = () => `/sessions/${encodeURIComponent(page.sessionId ?? "")}`;
const runPath = (runId: string) => `${sessionPath()}/runs/${encodeURIComponent(runId)}`;
/** Whether the session's live run (the socket's snapshot) is the one this page shows. */
const isLive = () => !page.runId || page.snapshot?.run?.id === page.runId;

function show(name: string): void {
  for (const section of SECTIONS) byTestId(section).hidden = section !== name;
}

function showPageError(text: string): void {
  byTestId("page-error").textContent = text;
  show("page-error");
}

/** A response body of our own server (web/auth.ts, session-page.ts, runs.ts), read field by field below. */
// biome-ignore lint/suspicious/noExplicitAny: checked where each field is used
type Body = any;

async function getJson(url: string): Promise<{ status: number; ok: boolean; body: Body }> {
  const response = await fetch(url, { credentials: "same-origin", cache: "no-store" });
  let body: Body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  return { status: response.status, ok: response.ok, body };
}

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
}

/** Fetches this page's run; renders it unless the live snapshot shows it already. */
async function loadRun(): Promise<"signed-out" | "forbidden" | "error" | { canViewSession: boolean }> {
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

async function loadHistory(): Promise<void> {
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

// ---------------------------------------------------------------------------------------------------------
// Signed out, forbidden, signed in

async function signedOut(): Promise<void> {
  page.stopped = true;
  page.ws?.close();
  try {
    const me = await getJson("/auth/me");
    showSignIn(me.body?.signIn);
  } catch {
    showSignIn(undefined);
  }
}

function showSignIn(signIn: SignIn | undefined): void {
  page.stopped = true;
  byTestId("viewer").hidden = true;
  const list = byTestId("sign-in-local");
  list.replaceChildren();
  const users = signIn?.mode === "local" && Array.isArray(signIn.users) ? signIn.users : undefined;
  const local = users !== undefined;
  if (users) {
    const next = location.pathname;
    for (const user of users) {
      const link = document.createElement("a");
      link.href = `/auth/local?user=${encodeURIComponent(user.openId)}&next=${encodeURIComponent(next)}`;
      link.textContent = fill(T.page.signInAs, { name: user.name });
      link.dataset.testid = "sign-in-local-user";
      link.dataset.user = user.openId;
      const item = document.createElement("li");
      item.append(link);
      list.append(item);
    }
  }
  list.hidden = !local;
  byTestId("sign-in-feishu").hidden = local;
  show("sign-in-prompt");
}

function showForbidden(): void {
  page.stopped = true;
  clearTimeout(page.reconnectTimer);
  page.ws?.close();
  show("forbidden");
}

function showViewer(me: Viewer): void {
  byTestId("viewer-name").textContent = me.name ? `${me.name} (${me.userId})` : me.userId;
  byTestId("viewer").hidden = false;
}

byTestId("sign-out").addEventListener("click", async () => {
  try {
    await fetch("/auth/logout", { method: "POST", credentials: "same-origin" });
  } finally {
    location.reload();
  }
});

// ---------------------------------------------------------------------------------------------------------
// The socket

function connect(): void {
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

function send(frame: Record<string, unknown>): boolean {
  if (!page.ws || page.ws.readyState !== WebSocket.OPEN) return false;
  page.ws.send(JSON.stringify(frame));
  return true;
}

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
  const { code, message, requestId } = frame.data ?? {};
  const panel = requestId ? page.panels.get(requestId) : undefined;
  if (panel) {
    if (code === "stale_request") return panel.markStale(T.asks.stale);
    panel.setBusy(false);
    if (code === "forbidden") {
      panel.setCanAnswer(false);
      return panel.showError(T.asks.onlySender);
    }
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

// ---------------------------------------------------------------------------------------------------------
// Asks

function onAsk(ask: PageAsk): void {
  if (typeof ask.requestId !== "string" || !Array.isArray(ask.questions)) return;
  // The questions of the session's live run belong on its own page, not on an earlier run's.
  if (!isLive()) return;
  page.resync?.seen.add(ask.requestId);
  // A re-sent ask keeps its panel, and with it whatever the viewer has already filled in.
  if (page.panels.has(ask.requestId)) return;
  const panel = createAskPanel(document, ask, {
    text: T.panel,
    canAnswer: page.canAnswer,
    onSubmit: (answers) => {
      panel.showError(null);
      const sent = send({
        type: "ask_user_questions_result",
        sessionId: page.sessionId,
        data: { requestId: ask.requestId, answers },
      });
      if (!sent) return panel.showError(T.asks.offline);
      panel.setBusy(true);
    },
  });
  page.panels.set(ask.requestId, panel);
  byTestId("asks").append(panel.element);
  relabel();
}

function removePanel(requestId: string | undefined): boolean {
  const panel = requestId === undefined ? undefined : page.panels.get(requestId);
  if (!panel) return false;
  panel.element.remove();
  page.panels.delete(panel.requestId);
  page.unconfirmed.delete(panel.requestId);
  relabel();
  return true;
}

function relabel(): void {
  const total = page.panels.size;
  let index = 0;
  for (const panel of page.panels.values()) panel.setHeading(++index, total);
  renderStatus();
}

function setCanAnswer(value: boolean): void {
  page.canAnswer = value;
  for (const panel of page.panels.values()) panel.setCanAnswer(value);
}

function cancelledText(reason: unknown): string {
  if (typeof reason === "string" && reason.startsWith("answered")) return T.asks.answeredElsewhere;
  if (reason === "timeout") return T.asks.timedOut;
  return T.asks.cancelled;
}

function notice(text: string): void {
  const note = document.createElement("p");
  note.className = "ask-notice";
  note.dataset.testid = "ask-notice";
  note.textContent = text;
  byTestId("asks").before(note);
  setTimeout(() => note.remove(), NOTICE_MS);
}

// ---------------------------------------------------------------------------------------------------------
// The run

function onSnapshot(snapshot: PageSnapshot): void {
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
  if (run && !page.history.some((entry) => entry.id === run.id && entry.status === run.status))
    void loadHistory();
  renderQueue(Array.isArray(snapshot.queued) ? snapshot.queued : [], snapshot.queuedCount);
  renderStatus();
}

function statusKey(snapshot: PageSnapshot | null): string {
  const run = isLive() ? snapshot?.run : page.run;
  if (!run) return "none";
  if (run.status !== "running") return run.status;
  const asking = (run.steps ?? []).some((step) => step.tool === ASK_TOOL && step.status === "running");
  return page.panels.size > 0 || asking ? "waiting" : "running";
}

function renderStatus(): void {
  const key = statusKey(page.snapshot);
  const status = byTestId("status");
  status.textContent = STATUS_TEXT[key] ?? key;
  status.dataset.status = key;
  byTestId("waiting-for-sender").hidden = !(key === "waiting" && page.panels.size === 0);
  document.title = fill(T.page.statusTabTitle, { status: STATUS_TEXT[key] ?? key, title: page.title });
}

function renderRun(run: PageRun | null): void {
  byTestId("task-title").textContent = run ? oneLine(run.input, 120) : T.page.noTask;
  const steps = Array.isArray(run?.steps) ? run.steps : [];
  const list = byTestId("steps");
  list.replaceChildren(...steps.map(stepItem));
  const empty = byTestId("no-steps");
  empty.hidden = !run || steps.length > 0;
  empty.textContent =
    run?.status === "running" || run?.status === "recovering" ? T.page.preparing : T.page.noSteps;

  const text = typeof run?.text === "string" ? run.text : "";
  byTestId("result").hidden = text === "";
  // The agent writes card markdown; markdownToHtml escapes every piece of text and builds only its own tags
  // (http(s) links only), so this is the one innerHTML on the page.
  byTestId("result-text").innerHTML = markdownToHtml(text);
  const error = run?.status === "failed" ? String(run.error ?? "") : "";
  byTestId("run-error").hidden = error === "";
  byTestId("run-error-text").textContent = error;
}

function stepItem(step: PageStep): HTMLLIElement {
  const item = document.createElement("li");
  item.className = `step step-${step.status}`;
  item.dataset.testid = "step";
  item.dataset.status = step.status;
  const icon = document.createElement("span");
  icon.className = "step-icon";
  const name = stepIcon(step.status);
  icon.append(svgIcon(name, { label: T.icons[name] }));
  const title = document.createElement("span");
  title.className = "step-title";
  title.textContent = oneLine(step.title ?? step.tool ?? "", 120);
  item.append(icon, title);
  if (step.summary) {
    const summary = document.createElement("span");
    summary.className = "step-summary";
    summary.textContent = oneLine(step.summary, 200);
    item.append(summary);
  }
  return item;
}

function renderOlderRun(live: boolean): void {
  const note = byTestId("older-run");
  note.hidden = live || !page.runId;
  if (note.hidden || document.querySelector('[data-testid="latest-run-link"]')) return;
  const link = document.createElement("a");
  link.dataset.testid = "latest-run-link";
  link.href = sessionPath();
  link.textContent = T.page.latestRunLink;
  note.append(link);
}

function renderHistory(): void {
  byTestId("history").hidden = page.history.length === 0;
  byTestId("run-list").replaceChildren(
    ...historyItems(document, page.history, {
      shownId: page.runId ?? page.snapshot?.run?.id ?? null,
      href: runPath,
      statusText: (status) => STATUS_TEXT[status] ?? status,
      untitled: T.page.untitledRun,
      locale: T.lang,
    }),
  );
}

function renderQueue(queued: readonly { text?: string }[], total: unknown): void {
  byTestId("queue").hidden = queued.length === 0;
  const items = queued.map((message) => {
    const item = document.createElement("li");
    item.dataset.testid = "queued-message";
    item.textContent = oneLine(message.text ?? "", 120);
    return item;
  });
  // The snapshot lists the first few queued messages only (ws/snapshot.ts); say how many more wait.
  const more = typeof total === "number" ? total - queued.length : 0;
  if (more > 0) {
    const item = document.createElement("li");
    item.dataset.testid = "queued-more";
    item.textContent = fill(T.page.queuedMore, { count: more });
    items.push(item);
  }
  byTestId("queue-list").replaceChildren(...items);
}

/** A step's status as its icon: the statuses the icons draw, anything else as running. */
function stepIcon(status: string): "done" | "failed" | "pending" | "running" {
  return status === "done" || status === "failed" || status === "pending" ? status : "running";
}

function oneLine(text: unknown, max: number): string {
  const flat = String(text).replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

boot();
