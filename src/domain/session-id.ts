import path from "node:path";
import type { SessionInfo } from "./types.ts";

/**
 * Session identity: the one place that builds a session's id and workspace from what the session is, and
 * that tells what a session is from its fields (`channel`, `chatType`), never from the id's text.
 *
 * The ids and paths are stored (SQLite rows, workspaces on disk, links on cards already sent), so they must
 * stay byte-identical to what earlier versions wrote:
 * - a Feishu private chat: `feishu-{appId}-private-{openId}`, workspace `{dataDir}/workspaces/feishu-private/{openId}`
 * - a Feishu group chat:   `feishu-{appId}-group-{chatId}`,   workspace `{dataDir}/workspaces/feishu-chat/{chatId}`
 *
 * The key is a discriminated union so another kind (a group's topic: chat id + thread id) is one more
 * member here and one more case in each switch, which the compiler then asks for everywhere.
 */
export type SessionKey =
  | { kind: "feishu-private"; appId: string; openId: string }
  | { kind: "feishu-group"; appId: string; chatId: string };

export function sessionIdOf(key: SessionKey): string {
  switch (key.kind) {
    case "feishu-private":
      return `feishu-${key.appId}-private-${key.openId}`;
    case "feishu-group":
      return `feishu-${key.appId}-group-${key.chatId}`;
  }
}

/** The agent's working directory for the session (kept per chat, so it survives restarts). */
export function workspaceOf(key: SessionKey, dataDir: string): string {
  switch (key.kind) {
    case "feishu-private":
      return path.join(dataDir, "workspaces", "feishu-private", key.openId);
    case "feishu-group":
      return path.join(dataDir, "workspaces", "feishu-chat", key.chatId);
  }
}

/**
 * The session a Feishu chat's message belongs to. `chatId` is the chat the message came from (a private
 * chat has one too); `ownerId` who opened it (the private chat's user, or the group's sender now).
 */
export function feishuSession(
  key: SessionKey,
  where: { dataDir: string; chatId: string; ownerId: string; title: string },
): SessionInfo {
  return {
    id: sessionIdOf(key),
    channel: "feishu",
    chatType: chatTypeOf(key),
    chatId: where.chatId,
    workspace: workspaceOf(key, where.dataDir),
    ownerId: where.ownerId,
    title: where.title,
  };
}

function chatTypeOf(key: SessionKey): SessionInfo["chatType"] {
  switch (key.kind) {
    case "feishu-private":
      return "private";
    case "feishu-group":
      return "group";
  }
}

/** A session of a Feishu chat, private or group: decided by its channel, the field recorded for it. */
export function isFeishuSession(session: Pick<SessionInfo, "channel">): boolean {
  return session.channel === "feishu";
}

export function isWechatSession(session: Pick<SessionInfo, "channel">): boolean {
  return session.channel === "wechat";
}

/** Shorthands for the two keys the Feishu channel builds most. */
export function feishuPrivateSessionId(appId: string, openId: string): string {
  return sessionIdOf({ kind: "feishu-private", appId, openId });
}

export function feishuGroupSessionId(appId: string, chatId: string): string {
  return sessionIdOf({ kind: "feishu-group", appId, chatId });
}
