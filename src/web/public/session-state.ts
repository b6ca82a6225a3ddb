/**
 * The session page's shared state and plumbing: the page's words (T), the one `page` record every part of the
 * page reads and writes, its route, its elements by data-testid, which section shows, and the two ways it
 * talks to the server (`getJson` for the HTTP API, `send` for a frame on the open socket). No rendering here.
 */

import type { AskPanel } from "./ask-panel.ts";
import { PAGE_STRINGS_ID, parsePageStrings } from "./page-text.ts";
import type { HistoryRun } from "./run-history.ts";
import type { PageRun, PageSnapshot } from "./wire.ts";

// The page's words in the bot's language, as the server wrote them into the page (page-text.ts).
export const T = parsePageStrings(document.getElementById(PAGE_STRINGS_ID)?.textContent ?? "");
// The card's words for a run's status: the server sends the card's own, so the two cannot drift.
export const STATUS_TEXT: Record<string, string> = { ...T.status, none: T.page.noRun };

/** An element of session.html by its data-testid; the page cannot work without it, so a missing one throws. */
export function byTestId(id: string): HTMLElement;
export function byTestId<T extends HTMLElement>(id: string, type: new () => T): T;
export function byTestId(id: string, type: new () => HTMLElement = HTMLElement): HTMLElement {
  const element = document.querySelector(`[data-testid="${id}"]`);
  if (!(element instanceof type)) throw new Error(`session page: session.html has no ${id} element`);
  return element;
}
const SECTIONS = ["loading", "sign-in-prompt", "forbidden", "page-error", "session"];

const route = routeFromPath(location.pathname);
export const page: {
  sessionId: string | null;
  runId: string | null;
  run: PageRun | null;
  history: HistoryRun[];
  title: string;
  me: string | null;
  canAnswer: boolean;
  canCancel: boolean;
  snapshot: PageSnapshot | null;
  panels: Map<string, AskPanel>;
  deadlines: Map<string, { expiresAt: number; canExtend: boolean }>;
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
  /** The session's runs may be cancelled from a page (an outside agent's task is ended by its agent). */
  canCancel: false,
  snapshot: null,
  /** requestId → panel, in arrival order. */
  panels: new Map(),
  /** requestId → its deadline and whether one more 延长 fits, as the hub last sent them. */
  deadlines: new Map(),
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

export const sessionPath = () => `/sessions/${encodeURIComponent(page.sessionId ?? "")}`;
export const runPath = (runId: string) => `${sessionPath()}/runs/${encodeURIComponent(runId)}`;
/** Whether the session's live run (the socket's snapshot) is the one this page shows. */
export const isLive = () => !page.runId || page.snapshot?.run?.id === page.runId;

export function show(name: string): void {
  for (const section of SECTIONS) byTestId(section).hidden = section !== name;
}

export function showPageError(text: string): void {
  byTestId("page-error").textContent = text;
  show("page-error");
}

/** A response body of our own server (web/auth.ts, session-page.ts, runs.ts), read field by field below. */
// biome-ignore lint/suspicious/noExplicitAny: checked where each field is used
export type Body = any;

export async function getJson(url: string): Promise<{ status: number; ok: boolean; body: Body }> {
  const response = await fetch(url, { credentials: "same-origin", cache: "no-store" });
  let body: Body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  return { status: response.status, ok: response.ok, body };
}

export function send(frame: Record<string, unknown>): boolean {
  if (!page.ws || page.ws.readyState !== WebSocket.OPEN) return false;
  page.ws.send(JSON.stringify(frame));
  return true;
}
