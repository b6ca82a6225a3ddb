import { parentGroupSessionId } from "./session-id.ts";
import type { RunView, SessionInfo } from "./types.ts";

/**
 * The viewing rule: who may see a session's runs (status, steps, questions read-only, results) on the
 * session page and over the WebSocket. One rule, here, for both (issue 14 item 11).
 *
 * - A private chat or a web session: its owner, plus whoever sent its current run or a queued message.
 * - A group chat: its members, as far as the bot knows them — everyone who sent the bot a message in that
 *   chat or clicked one of its cards there within the last VIEW_MEMBERSHIP_MS — may view every run of the
 *   chat, whoever started it.
 *
 * Why members and not only those who took part in a run: the progress card of every run is posted in the
 * group for everyone in it to read, so the page that the card's 会话详情 link opens shows a member nothing
 * the chat does not already show them. Refusing a teammate the page of a card on their own screen is what
 * users would not expect. Why not "the first person who ever mentioned the bot" (the old rule): that
 * person is not special, and others were locked out of their own chat's runs. Why "as far as we know":
 * we cannot list a chat's members without an extra permission; a message or click is proof that the
 * person was in the chat. Why the window: someone who left the chat stops being seen there, and loses
 * access once the window passes (the bot is not told when people leave).
 *
 * An unknown session is simply not viewable; callers answer it like a forbidden one.
 */
export const VIEW_MEMBERSHIP_MS = 30 * 24 * 60 * 60 * 1000;

/** What the rule reads of the bot's sessions (harness/run-reads.ts). */
export interface ViewFacts {
  getSession(sessionId: string): Promise<SessionInfo | undefined>;
  currentRun(sessionId: string): Promise<RunView | undefined>;
  hasQueuedFrom(sessionId: string, userId: string): Promise<boolean>;
  lastSeenInChat(sessionId: string, userId: string): Promise<number | undefined>;
  now(): number;
}

export async function canViewSession(runner: ViewFacts, userId: string, sessionId: string): Promise<boolean> {
  const session = await runner.getSession(sessionId);
  if (!session) return false;
  if (session.chatType === "group") {
    // A topic's card is in its group for every member to open: the group's members may view it too.
    const group = parentGroupSessionId(session);
    for (const chat of group === undefined ? [sessionId] : [sessionId, group]) {
      const lastSeen = await runner.lastSeenInChat(chat, userId);
      if (lastSeen !== undefined && runner.now() - lastSeen <= VIEW_MEMBERSHIP_MS) return true;
    }
  } else if (session.ownerId === userId) {
    return true;
  }
  if ((await runner.currentRun(sessionId))?.senderId === userId) return true;
  return runner.hasQueuedFrom(sessionId, userId);
}
