/**
 * What the console's JSON API and event stream carry, as the page reads them. The server's types own these
 * shapes (src/local/console/view.ts, users.ts); they cannot be imported here because those modules pull in
 * the emulator (Node). test/console-wire.test.ts checks at typecheck time that the server's types still fit
 * these, so the two cannot drift apart silently.
 */

export type TextSegment = { type: "text"; text: string } | { type: "at"; openId: string; name: string };

export interface ConsoleMessage {
  messageId: string;
  chatId: string;
  chatType: "p2p" | "group";
  msgType: string;
  sender: { type: "app" | "user"; id: string; name: string };
  createdAt: number;
  updatedAt: number;
  rev: number;
  patches: number;
  recalled: boolean;
  parentId?: string;
  rootId?: string;
  /** The topic the message is in (a topic group's, or a thread in a normal group). */
  threadId?: string;
  /** An ephemeral card: only this user sees it. */
  visibleTo?: string;
  text?: TextSegment[];
  card?: unknown;
  /** Cards a callback showed to its clicker alone (open_id → card), until the next PATCH. */
  views?: Record<string, unknown>;
  raw?: string;
}

export interface Toast {
  type: "success" | "error" | "warning" | "info";
  content: string;
}

export interface LocalUser {
  openId: string;
  name: string;
}

export interface ConsoleChat {
  chatId: string;
  type: "p2p" | "group";
  name: string;
  ownerId?: string;
  memberIds: string[];
  /** `topic`: a topic group, shown as a list of topics (topics.ts). */
  mode?: "topic";
}

interface LogBase {
  seq: number;
  at: number;
  durationMs: number;
}

export interface CallEntry extends LogBase {
  kind: "call";
  method: string;
  path: string;
  status: number;
  code?: number;
  messageId?: string;
  requestHeaders?: Record<string, string>;
  requestBody?: string;
  responseBody?: string;
}

export interface EventEntry extends LogBase {
  kind: "event";
  eventType: string;
  messageId: string;
  status?: number;
  error?: string;
}

export interface CallbackEntry extends LogBase {
  kind: "callback";
  messageId: string;
  operatorName: string;
  label?: string;
  name?: string;
  value?: Record<string, unknown>;
  formValue?: Record<string, unknown>;
  toast?: Toast;
  card: "none" | "applied" | "rejected";
  revertedUpdates?: number;
  error?: string;
}

export type LogEntry = CallEntry | EventEntry | CallbackEntry;

export type ConsoleEvent =
  | { type: "message"; change: "created" | "patched" | "recalled"; message: ConsoleMessage }
  | { type: "log"; entry: LogEntry };
