import path from "node:path";
import type { SessionInfo } from "./types.ts";

/**
 * Session identity: the one place that builds a session's id and workspace from what the session is, and
 * that tells what a session is from its fields (`channel`, `chatType`, `topic`), never from the id's text.
 *
 * The ids and paths are stored (SQLite rows, workspaces on disk, links on cards already sent), so they must
 * stay byte-identical to what earlier versions wrote:
 * - a Feishu private chat: `feishu-{appId}-private-{openId}`, workspace `{workspaces}/feishu-private/{openId}`
 * - a Feishu group chat:   `feishu-{appId}-group-{chatId}`,   workspace `{workspaces}/feishu-chat/{chatId}`
 * - a topic of a group (issue 19): `feishu-{appId}-group-{chatId}-topic-{rootMessageId}`, workspace
 *   `{workspaces}/feishu-chat/{chatId}/topics/{rootMessageId}` — under its group's id and workspace.
 *   Keyed by the topic's root message, not its thread id: with FEISHU_REPLY_IN_THREAD the task starts before
 *   the thread exists (feishu/topics.ts).
 *
 * The id is a name, never read back: what a session is (private, group, a topic of which group under which
 * message) is recorded on the session itself (`chatType`, `topic`) when it is made here, and stored with it
 * (the sessions table's `topic_root_id` / `topic_group_id`). Ids cannot collide either: events.ts refuses
 * platform ids with anything but letters, digits and `_`, so no chat id can contain `-group-` or `-topic-`.
 *
 * The key is a discriminated union so another kind is one more member here and one more case in each
 * switch, which the compiler then asks for everywhere.
 */
export type SessionKey =
  | { kind: "feishu-private"; appId: string; openId: string }
  | { kind: "feishu-group"; appId: string; chatId: string }
  | { kind: "feishu-topic"; appId: string; chatId: string; rootMessageId: string };

export function sessionIdOf(key: SessionKey): string {
  switch (key.kind) {
    case "feishu-private":
      return `feishu-${key.appId}-private-${key.openId}`;
    case "feishu-group":
      return `feishu-${key.appId}-group-${key.chatId}`;
    case "feishu-topic":
      return `feishu-${key.appId}-group-${key.chatId}-topic-${key.rootMessageId}`;
  }
}

/**
 * The agent's working directory for the session (kept per chat, so it survives restarts). `workspaces` is
 * WORKSPACES_DIR: `DATA_DIR/workspaces` unless the operator moved it out (README, "What an agent can reach").
 */
export function workspaceOf(key: SessionKey, workspaces: string): string {
  switch (key.kind) {
    case "feishu-private":
      return path.join(workspaces, "feishu-private", key.openId);
    case "feishu-group":
      return path.join(workspaces, "feishu-chat", key.chatId);
    case "feishu-topic":
      return path.join(workspaces, "feishu-chat", key.chatId, "topics", key.rootMessageId);
  }
}

/**
 * The session a Feishu chat's message belongs to. `chatId` is the chat the message came from (a private
 * chat has one too); `ownerId` who opened it (the private chat's user, or the group's sender now).
 */
export function feishuSession(
  key: SessionKey,
  where: { workspacesDir: string; chatId: string; ownerId: string; title: string },
): SessionInfo {
  return {
    id: sessionIdOf(key),
    channel: "feishu",
    chatType: chatTypeOf(key),
    chatId: where.chatId,
    workspace: workspaceOf(key, where.workspacesDir),
    ownerId: where.ownerId,
    title: where.title,
    ...(key.kind === "feishu-topic"
      ? {
          topic: {
            chatId: key.chatId,
            rootMessageId: key.rootMessageId,
            groupSessionId: feishuGroupSessionId(key.appId, key.chatId),
          },
        }
      : {}),
  };
}

function chatTypeOf(key: SessionKey): SessionInfo["chatType"] {
  switch (key.kind) {
    case "feishu-private":
      return "private";
    case "feishu-group":
    // A topic is part of its group: group rules apply (who may answer, @-reminders, who may view).
    case "feishu-topic":
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

export function feishuTopicSessionId(appId: string, chatId: string, rootMessageId: string): string {
  return sessionIdOf({ kind: "feishu-topic", appId, chatId, rootMessageId });
}

/** The group a topic session belongs to, as recorded on it: its members may view the topic's runs (access.ts). */
export function parentGroupSessionId(session: Pick<SessionInfo, "topic">): string | undefined {
  return session.topic?.groupSessionId;
}
