import type { SessionInfo, SessionTopic } from "./types.ts";

/**
 * What clients are told about a topic session (issue 19), the same on the session page (`/api/sessions/:id`)
 * and over the WebSocket (`subscribed`): which group it is in and which message it hangs under, so a client
 * can show it as a topic of that group. Read from the topic recorded on the session; undefined for every
 * other session (and for one the runner does not know).
 */
export type TopicInfo = SessionTopic;

export function topicInfo(session: Pick<SessionInfo, "topic"> | undefined): TopicInfo | undefined {
  const topic = session?.topic;
  if (!topic) return undefined;
  return { chatId: topic.chatId, rootMessageId: topic.rootMessageId, groupSessionId: topic.groupSessionId };
}
