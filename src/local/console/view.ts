import { parseJson } from "../../util/json.ts";
import type { FrameRecord, MessageView, RecordedCall } from "../emulator/index.ts";
import type { MentionRef } from "./compose.ts";
import { redactHeaders, showBody } from "./redact.ts";

/** What the console's JSON API and event stream carry. */

export type TextSegment = { type: "text"; text: string } | { type: "at"; openId: string; name: string };

export interface ConsoleMessage {
  messageId: string;
  chatId: string;
  chatType: "p2p" | "group";
  msgType: string;
  sender: { type: "app" | "user"; id: string; name: string };
  createdAt: number;
  updatedAt: number;
  /** Bumped on every change the console saw (update, callback card, recall): the newest copy wins. */
  rev: number;
  patches: number;
  recalled: boolean;
  parentId?: string;
  rootId?: string;
  /** The topic the message is in (a topic group's, or a thread in a normal group). */
  threadId?: string;
  /** An ephemeral card: only this user sees it. */
  visibleTo?: string;
  /** Text messages: the text with mentions resolved. */
  text?: TextSegment[];
  /** Cards: the card JSON every member sees. */
  card?: unknown;
  /** Cards a callback showed to its clicker alone (open_id → card JSON), until the next PATCH. */
  views?: Record<string, unknown>;
  /** Anything else: the content string as stored. */
  raw?: string;
}

export interface Toast {
  type: "success" | "error" | "warning" | "info";
  content: string;
}

interface LogBase {
  seq: number;
  /** Emulator clock, ms. */
  at: number;
  durationMs: number;
}

/** An Open API call the bot made. */
export interface CallEntry extends LogBase {
  kind: "call";
  method: string;
  path: string;
  query: Record<string, string>;
  status: number;
  code?: number;
  messageId?: string;
  /** Shown folded under the line, secrets redacted (redact.ts). */
  requestHeaders?: Record<string, string>;
  requestBody?: string;
  responseBody?: string;
}

/** An event the console delivered to the bot's webhook. */
export interface EventEntry extends LogBase {
  kind: "event";
  eventType: string;
  chatId: string;
  messageId: string;
  senderId: string;
  status?: number;
  error?: string;
}

/** A card callback: who clicked what, what the bot answered and how long it took. */
export interface CallbackEntry extends LogBase {
  kind: "callback";
  messageId: string;
  chatId: string;
  operatorId: string;
  operatorName: string;
  /** The clicked component's text when found on the card, else its name. */
  label?: string;
  name?: string;
  value?: Record<string, unknown>;
  formValue?: Record<string, unknown>;
  status?: number;
  toast?: Toast;
  /** What became of the card in the response (`applied`: shown to the clicker alone). */
  card: "none" | "applied" | "rejected";
  /** Updates that landed while the callback was answered: reverted, as Feishu reverts them. */
  revertedUpdates?: number;
  error?: string;
}

export type LogEntry = CallEntry | EventEntry | CallbackEntry;
export type NewLogEntry = DistributiveOmit<LogEntry, "seq">;
type DistributiveOmit<T, K extends keyof T> = T extends unknown ? Omit<T, K> : never;

export type ConsoleEvent =
  | {
      type: "message";
      change: "created" | "patched" | "recalled";
      via?: "patch" | "card_update" | "callback" | "revert" | "edit" | "cardkit" | "stream";
      message: ConsoleMessage;
    }
  | { type: "log"; entry: LogEntry };

export function callEntry(call: RecordedCall): NewLogEntry {
  return {
    kind: "call",
    at: call.at,
    method: call.method,
    path: call.path,
    query: call.query,
    status: call.status,
    ...(call.code !== undefined ? { code: call.code } : {}),
    ...(call.messageId ? { messageId: call.messageId } : {}),
    durationMs: Math.round(call.durationMs * 10) / 10,
    ...(call.requestHeaders ? { requestHeaders: redactHeaders(call.requestHeaders) } : {}),
    ...(call.requestBody !== undefined ? { requestBody: showBody(call.requestBody) } : {}),
    ...(call.responseBody !== undefined ? { responseBody: showBody(call.responseBody) } : {}),
  };
}

/**
 * A long-connection frame as an API-log line: method `WS`, what travelled in the path, and a status that reads
 * like HTTP (an ack's code; 400 for a malformed frame, 408 for an ack after the 3 s deadline).
 */
export function frameEntry(frame: FrameRecord): NewLogEntry | undefined {
  if (frame.kind === "ping" || frame.kind === "pong") return undefined;
  const arrow = frame.direction === "out" ? "→" : "←";
  const part = frame.sum !== undefined && frame.sum > 1 ? ` [${(frame.seq ?? 0) + 1}/${frame.sum}]` : "";
  const retry = frame.attempt !== undefined && frame.attempt > 1 ? `（第 ${frame.attempt} 次投递）` : "";
  const what =
    frame.kind === "ack"
      ? `ack ${frame.code ?? ""}${frame.late ? " 超时后到达" : ""}`
      : `${frame.kind}${frame.eventType ? ` ${frame.eventType}` : ""}${part}${retry}`;
  const status =
    frame.kind === "malformed" ? 400 : frame.late ? 408 : frame.kind === "ack" ? (frame.code ?? 200) : 200;
  return {
    kind: "call",
    at: frame.at,
    method: "WS",
    path: `/ws/v2 ${arrow} ${what}${frame.detail ? `: ${frame.detail}` : ""}`,
    query: { connection: frame.connectionId, ...(frame.frameId ? { message_id: frame.frameId } : {}) },
    status,
    durationMs: frame.durationMs ?? 0,
  };
}

export interface Directory {
  /** A display name for an open_id (or the bot's app id); undefined when unknown. */
  nameOf(id: string): string | undefined;
  botName: string;
}

export function toConsoleMessage(
  view: MessageView,
  extra: { rev: number; mentions?: readonly MentionRef[] },
  directory: Directory,
): ConsoleMessage {
  const message: ConsoleMessage = {
    messageId: view.messageId,
    chatId: view.chatId,
    chatType: view.chatType,
    msgType: view.msgType,
    sender: {
      type: view.senderType,
      id: view.senderId,
      name:
        view.senderType === "app" ? directory.botName : (directory.nameOf(view.senderId) ?? view.senderId),
    },
    createdAt: view.createdAt,
    updatedAt: view.updatedAt,
    rev: extra.rev,
    patches: view.patches,
    recalled: view.recalled,
    ...(view.parentId ? { parentId: view.parentId } : {}),
    ...(view.rootId ? { rootId: view.rootId } : {}),
    ...(view.threadId ? { threadId: view.threadId } : {}),
    ...(view.visibleTo ? { visibleTo: view.visibleTo } : {}),
  };
  if (view.recalled) return message;
  // Content that is not JSON is shown raw.
  const parsed = parseJson(view.content);
  if (view.msgType === "interactive" && isObject(parsed)) {
    message.card = parsed;
    const views = Object.entries(view.views ?? {}).flatMap(([openId, content]) => {
      const card = parseJson(content);
      return isObject(card) ? [[openId, card] as const] : [];
    });
    if (views.length > 0) message.views = Object.fromEntries(views);
  } else if (view.msgType === "text" && isObject(parsed) && typeof parsed.text === "string")
    message.text = textSegments(parsed.text, extra.mentions ?? [], directory);
  else message.raw = view.content;
  return message;
}

/**
 * Splits a text message into text and mentions: the `@_user_N` placeholders of a user's message, and the
 * `<at user_id="…">…</at>` tags a bot writes (`user_id="all"` is everyone).
 */
export function textSegments(
  text: string,
  mentions: readonly MentionRef[],
  directory: Directory,
): TextSegment[] {
  const segments: TextSegment[] = [];
  const pattern = /@_user_\d+|<at\s+(?:user_id|id)=["']?([^"'>\s]*)["']?\s*>([^<]*)<\/at>/g;
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    const start = match.index ?? 0;
    const mention = match[1] === undefined ? mentions.find((m) => m.key === match[0]) : undefined;
    const at: TextSegment | undefined =
      match[1] !== undefined
        ? {
            type: "at",
            openId: match[1],
            name: match[1] === "all" ? "所有人" : directory.nameOf(match[1]) || match[2] || match[1],
          }
        : mention
          ? { type: "at", openId: mention.openId, name: mention.name }
          : undefined;
    if (!at) continue;
    if (start > last) segments.push({ type: "text", text: text.slice(last, start) });
    segments.push(at);
    last = start + match[0].length;
  }
  if (last < text.length) segments.push({ type: "text", text: text.slice(last) });
  return segments;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
