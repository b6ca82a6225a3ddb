import path from "node:path";
import { oneLine, truncate } from "../cards/text.ts";
import { feishuPrivateSessionId } from "../harness/tools.ts";
import type { SessionInfo } from "../harness/types.ts";
import { strings } from "../strings.ts";
import type { InboundMessage } from "./events.ts";

/**
 * Topics and threads are sessions of their own (issue 19, feishu-platform §5.1): from an inbound message to
 * the session it belongs to and how the bot answers there. Pure.
 *
 * - A private chat, and a plain message in a group, go to the chat's session exactly as before.
 * - A message inside a topic (`thread_id` set: a topic group's topic, or a thread under a message in a
 *   normal group) goes to the topic's session, keyed by the topic's root message; every reply there is
 *   sent with `reply_in_thread`, so nothing lands in the group's main flow.
 * - With `replyInThread` (FEISHU_REPLY_IN_THREAD=on), a plain group message starts a topic rooted at itself:
 *   the card opens a thread under it, and follow-ups in that thread (root_id = the message) reach the same
 *   session. Keying by the root message, not by `thread_id`, is what makes both cases one rule: the thread
 *   id does not exist yet when the task starts.
 */

export type ChatSessionKind = "private" | "group" | "topic";

export interface InboundRoute {
  session: SessionInfo;
  kind: ChatSessionKind;
  /** Replies (card, texts) go into the topic: `reply_in_thread: true`. */
  inThread: boolean;
}

export interface TopicRouteOptions {
  appId: string;
  dataDir: string;
  /** FEISHU_REPLY_IN_THREAD: a task from a plain group message answers in a new thread under it. */
  replyInThread: boolean;
}

/** Characters of the first message kept in a topic session's title. */
export const TOPIC_TITLE_CHARS = 24;

export function routeInbound(
  message: InboundMessage,
  text: string,
  options: TopicRouteOptions,
): InboundRoute {
  const { appId, dataDir } = options;
  if (message.chatType === "p2p") {
    return {
      kind: "private",
      inThread: false,
      session: {
        id: feishuPrivateSessionId(appId, message.senderOpenId),
        channel: "feishu",
        chatType: "private",
        chatId: message.chatId,
        workspace: path.join(dataDir, "workspaces", "feishu-private", message.senderOpenId),
        ownerId: message.senderOpenId,
        title: "飞书私聊",
      },
    };
  }
  const rootId = topicRootOf(message, options.replyInThread);
  if (rootId === undefined) {
    return {
      kind: "group",
      inThread: false,
      session: {
        id: groupSessionId(appId, message.chatId),
        channel: "feishu",
        chatType: "group",
        chatId: message.chatId,
        // Group sessions are recognised by this path (filterToolsForSession): keep "/feishu-chat/".
        workspace: path.join(dataDir, "workspaces", "feishu-chat", message.chatId),
        ownerId: message.senderOpenId,
        title: "飞书群聊",
      },
    };
  }
  return {
    kind: "topic",
    inThread: true,
    session: {
      id: topicSessionId(appId, message.chatId, rootId),
      channel: "feishu",
      // A topic is part of its group: group rules apply (who may answer, @-reminders, who may view).
      chatType: "group",
      chatId: message.chatId,
      // Under the group's workspace, so it is still a Feishu group session ("/feishu-chat/").
      workspace: path.join(dataDir, "workspaces", "feishu-chat", message.chatId, "topics", rootId),
      ownerId: message.senderOpenId,
      title: strings.topics.sessionTitle(truncate(oneLine(text), TOPIC_TITLE_CHARS)),
    },
  };
}

/** The root message of the topic the message belongs to, or undefined when it is a plain group message. */
function topicRootOf(message: InboundMessage, replyInThread: boolean): string | undefined {
  if (message.threadId !== undefined) return message.rootId ?? message.messageId;
  // A plain quote reply (root_id without thread_id) stays in the main flow, as today.
  if (replyInThread && message.rootId === undefined) return message.messageId;
  return undefined;
}

/** `feishu-{appId}-group-{chatId}`: a group chat's session (unchanged since the first release). */
export function groupSessionId(appId: string, chatId: string): string {
  return `feishu-${appId}-group-${chatId}`;
}

/** `feishu-{appId}-group-{chatId}-topic-{rootMessageId}`: a topic's session, under its group's id. */
export function topicSessionId(appId: string, chatId: string, rootMessageId: string): string {
  return `${groupSessionId(appId, chatId)}-topic-${rootMessageId}`;
}

const TOPIC_ID = /^feishu-([^-]+)-group-([^-]+)-topic-(.+)$/;

/** Reads a topic session's id back; undefined for every other session. */
export function parseTopicSessionId(
  sessionId: string,
): { appId: string; chatId: string; rootMessageId: string } | undefined {
  const match = TOPIC_ID.exec(sessionId);
  if (!match) return undefined;
  const [, appId = "", chatId = "", rootMessageId = ""] = match;
  return { appId, chatId, rootMessageId };
}

/** Replies in a topic session go into the topic (`reply_in_thread`); everywhere else they are plain replies. */
export function threadReply(sessionId: string): { inThread?: true } {
  return parseTopicSessionId(sessionId) ? { inThread: true } : {};
}
