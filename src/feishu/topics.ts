import path from "node:path";
import { feishuSession, feishuTopicSessionId, type SessionKey } from "../domain/session-id.ts";
import type { SessionInfo } from "../domain/types.ts";
import { strings } from "../strings/index.ts";
import { oneLine, truncate } from "../util/text.ts";
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
 * - A reply with `root_id` but no `thread_id` is a plain quote reply (the docs give every topic message its
 *   `thread_id`), unless its root already has a topic session: in topic groups the field sees replies without
 *   `thread_id` (larksuite/openclaw-lark, feishu-platform §5.1), and such a reply belongs to its root's topic.
 */

export type ChatSessionKind = "private" | "group" | "topic";

export interface InboundRoute {
  /** A topic's session carries its `topic`: where its replies go follows from it (`threadReply`). */
  session: SessionInfo;
  kind: ChatSessionKind;
}

export interface TopicRouteOptions {
  appId: string;
  dataDir: string;
  /** WORKSPACES_DIR, where chats' workspaces go (default `DATA_DIR/workspaces`). */
  workspacesDir?: string;
  /** FEISHU_REPLY_IN_THREAD: a task from a plain group message answers in a new thread under it. */
  replyInThread: boolean;
  /** Whether the topic rooted at this message of the chat already has a session (none known when omitted). */
  knownTopic?: (rootMessageId: string) => boolean;
}

/** Characters of the first message kept in a topic session's title. */
export const TOPIC_TITLE_CHARS = 24;

export function routeInbound(
  message: InboundMessage,
  text: string,
  options: TopicRouteOptions,
): InboundRoute {
  const { appId, dataDir } = options;
  const workspacesDir = options.workspacesDir ?? path.join(dataDir, "workspaces");
  const where = { workspacesDir, chatId: message.chatId, ownerId: message.senderOpenId };
  const at = (key: SessionKey, title: string, kind: ChatSessionKind): InboundRoute => ({
    kind,
    session: feishuSession(key, { ...where, title }),
  });
  if (message.chatType === "p2p")
    return at(
      { kind: "feishu-private", appId, openId: message.senderOpenId },
      strings.sessions.privateTitle,
      "private",
    );
  const rootMessageId = topicRootOf(message, options);
  if (rootMessageId === undefined)
    return at({ kind: "feishu-group", appId, chatId: message.chatId }, strings.sessions.groupTitle, "group");
  return at(
    { kind: "feishu-topic", appId, chatId: message.chatId, rootMessageId },
    strings.topics.sessionTitle(truncate(oneLine(text), TOPIC_TITLE_CHARS)),
    "topic",
  );
}

/** The root message of the topic the message belongs to, or undefined when it is a plain group message. */
function topicRootOf(message: InboundMessage, options: TopicRouteOptions): string | undefined {
  if (message.threadId !== undefined) return message.rootId ?? message.messageId;
  // root_id without thread_id: a plain quote reply stays in the main flow, as today; a reply in a topic that
  // arrived without its thread_id goes to the topic.
  if (message.rootId !== undefined)
    return options.knownTopic?.(message.rootId) === true ? message.rootId : undefined;
  return options.replyInThread ? message.messageId : undefined;
}

/**
 * The one rule for where the bot answers a session: inside its topic (`reply_in_thread`) when the session is
 * a topic, as recorded on it; a plain reply everywhere else. Every reply path asks it — the progress card,
 * queue cards, the @-ping and deadline reminders, texts and /login (from the message's route, before any
 * session exists), and the gone notice.
 */
export function threadReply(session: Pick<SessionInfo, "topic"> | undefined): { inThread?: true } {
  return session?.topic ? { inThread: true } : {};
}

/** `knownTopic` over a runner's sessions: the chat's topic rooted at a message has a session. */
export async function knownTopicIn(
  runner: { getSession(sessionId: string): Promise<unknown> },
  appId: string,
  message: Pick<InboundMessage, "chatId" | "rootId" | "threadId">,
): Promise<(rootMessageId: string) => boolean> {
  // Only a reply without its thread_id asks (topicRootOf): the one read is made before routing.
  const root = message.threadId === undefined ? message.rootId : undefined;
  const known =
    root !== undefined &&
    (await runner.getSession(feishuTopicSessionId(appId, message.chatId, root))) !== undefined;
  return (asked) => known && asked === root;
}
