import { parentGroupSessionId, parseFeishuTopicSessionId } from "./session-id.ts";

/**
 * What clients are told about a topic session (issue 19), the same on the session page (`/api/sessions/:id`)
 * and over the WebSocket (`subscribed`): which group it is in and which message it hangs under, so a client
 * can show it as a topic of that group. Undefined for every other session.
 */
export interface TopicInfo {
  chatId: string;
  rootMessageId: string;
  /** The group's own session id (it may have no session: a topic group's chat often has none). */
  groupSessionId: string;
}

export function topicInfo(sessionId: string): TopicInfo | undefined {
  const topic = parseFeishuTopicSessionId(sessionId);
  const groupSessionId = parentGroupSessionId(sessionId);
  if (!topic || groupSessionId === undefined) return undefined;
  return { chatId: topic.chatId, rootMessageId: topic.rootMessageId, groupSessionId };
}
