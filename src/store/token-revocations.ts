import type { Db } from "./db.ts";

/**
 * Per-user token revocation (issue 14 item 12). A token carries the time it was issued; revoking a user
 * stores a "not before" time, and every token of theirs issued earlier is refused from then on — by this
 * process and by any other on the same DATA_DIR, since the check reads SQLite each time.
 */
export interface TokenRevocations {
  /** Tokens of `userId` issued before this time (ms) are revoked; undefined when never revoked. */
  notBefore(userId: string): number | undefined;
}

export class SqliteTokenRevocations implements TokenRevocations {
  readonly #get;
  readonly #put;

  constructor(db: Db) {
    this.#get = db.prepare<[string], { not_before: number }>(
      "SELECT not_before FROM token_revocations WHERE user_id = ?",
    );
    this.#put = db.prepare(
      `INSERT INTO token_revocations (user_id, not_before, revoked_at) VALUES (?, ?, ?)
       ON CONFLICT (user_id) DO UPDATE SET not_before = excluded.not_before, revoked_at = excluded.revoked_at`,
    );
  }

  notBefore(userId: string): number | undefined {
    return this.#get.get(userId)?.not_before;
  }

  /** Revokes every token of `userId` issued up to `nowMs`; returns the new not-before time. */
  revoke(userId: string, nowMs: number): number {
    // +1: a token issued in this very millisecond, before the revocation, must not survive it.
    const notBefore = nowMs + 1;
    this.#put.run(userId, notBefore, nowMs);
    return notBefore;
  }
}
