import type { Db } from "./db.ts";

/**
 * The people we know to be in a session's chat: everyone who sent the bot a message there or clicked one
 * of its cards there, with when we last saw them. The viewing rule (domain/access.ts) reads it.
 */
export class SessionMembers {
  readonly #note;
  readonly #lastSeen;

  constructor(db: Db) {
    this.#note = db.prepare(
      `INSERT INTO session_members (session_id, user_id, last_seen_at) VALUES (?, ?, ?)
       ON CONFLICT (session_id, user_id) DO UPDATE SET last_seen_at = MAX(last_seen_at, excluded.last_seen_at)`,
    );
    this.#lastSeen = db.prepare<[string, string], { last_seen_at: number }>(
      "SELECT last_seen_at FROM session_members WHERE session_id = ? AND user_id = ?",
    );
  }

  note(sessionId: string, userId: string, nowMs: number): void {
    this.#note.run(sessionId, userId, nowMs);
  }

  /** When `userId` last wrote or clicked in the session's chat; undefined if never. */
  lastSeen(sessionId: string, userId: string): number | undefined {
    return this.#lastSeen.get(sessionId, userId)?.last_seen_at;
  }
}
