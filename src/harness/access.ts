import type { SessionRunner } from "./runner.ts";

/**
 * Who may view a session (its status, steps and questions, read-only unless they are the run's sender):
 * its owner, the sender of its current run, or the sender of a message queued in it. One rule for the
 * WebSocket hub and the session page. An unknown session is simply not viewable.
 */
export function canViewSession(
  runner: Pick<SessionRunner, "getSession" | "currentRun" | "queued">,
  userId: string,
  sessionId: string,
): boolean {
  const session = runner.getSession(sessionId);
  if (!session) return false;
  if (session.ownerId === userId) return true;
  if (runner.currentRun(sessionId)?.senderId === userId) return true;
  return runner.queued(sessionId).some((queued) => queued.senderId === userId);
}
