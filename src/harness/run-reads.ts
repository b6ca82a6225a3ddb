import { ALL_ALLOWED, type CardPlacement, type RunSession } from "../domain/run-feed.ts";
import type { SessionInfo } from "../domain/types.ts";

/**
 * The runner's side of the run feed (domain/run-feed.ts): its sessions as readers show them, and where a
 * run's card goes, read from the source record a channel stored with the message that started it.
 */

/** A bot's session allows everything its viewers may ask of a run (queue, cancel, retry). */
export function feedSession(session: SessionInfo | undefined): RunSession | undefined {
  if (!session) return undefined;
  return {
    id: session.id,
    channel: session.channel,
    chatType: session.chatType,
    title: session.title,
    ...(session.topic ? { topic: session.topic } : {}),
    allows: ALL_ALLOWED,
  };
}

/** A Feishu message's run has its card as the reply to that message; any other run has no card. */
export function placementOf(source: Record<string, unknown> | undefined): CardPlacement | undefined {
  if (source?.channel !== "feishu") return undefined;
  return { kind: "reply", chatId: String(source.chatId ?? ""), messageId: String(source.messageId ?? "") };
}
