import { greatest, run, type StoreSql } from "./sql.ts";

/**
 * The people we know to be in a session's chat: everyone who sent the bot a message there or clicked one
 * of its cards there, with when we last saw them. The viewing rule (domain/access.ts) reads it. One row per
 * session and person, on either dialect; a later sighting never moves it back.
 */
export class SessionMembers {
  readonly #store: StoreSql;

  constructor(store: StoreSql) {
    this.#store = store;
  }

  /** The same members, written inside `tx` (the runner's transaction). */
  within(tx: StoreSql): SessionMembers {
    return new SessionMembers(tx);
  }

  async note(sessionId: string, userId: string, nowMs: number): Promise<void> {
    const { db } = this.#store;
    await run(this.#store, () =>
      db
        .insertInto("session_members")
        .values({ session_id: sessionId, user_id: userId, last_seen_at: nowMs })
        .onConflict((conflict) =>
          conflict.columns(["session_id", "user_id"]).doUpdateSet({
            last_seen_at: greatest(this.#store, "session_members.last_seen_at", "excluded.last_seen_at"),
          }),
        )
        .execute(),
    );
  }

  /** When `userId` last wrote or clicked in the session's chat; undefined if never. */
  async lastSeen(sessionId: string, userId: string): Promise<number | undefined> {
    const { db } = this.#store;
    const row = await run(this.#store, () =>
      db
        .selectFrom("session_members")
        .select("last_seen_at")
        .where("session_id", "=", sessionId)
        .where("user_id", "=", userId)
        .executeTakeFirst(),
    );
    return row?.last_seen_at;
  }
}
