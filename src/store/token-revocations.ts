import type { Db } from "./db.ts";

/**
 * Per-user token revocation (issue 14 item 12). A token carries the time it was issued; revoking a user
 * stores a "not before" time, and every token of theirs issued earlier is refused from then on — by this
 * process and by any other on the same DATA_DIR, since the check reads SQLite each time.
 */
export interface TokenRevocations {
  /** Tokens of `userId` issued before this time (ms) are revoked; undefined when never revoked. */
  notBefore(userId: string): number | undefined;
  /** How many times `userId` was revoked: tokens carry it when minted, and an older one is revoked. */
  generation?(userId: string): number;
  /**
   * Spends a sign-in link (issue 24 item 15): true the first time `key` (a hash of the link's token) is
   * spent, false ever after — in this process and any other on the same DATA_DIR. Kept until `expiresAt`.
   */
  spendLink?(key: string, expiresAt: number, now: number): boolean;
}

export class SqliteTokenRevocations implements TokenRevocations {
  readonly #get;
  readonly #put;
  readonly #spend;
  readonly #forget;

  constructor(db: Db) {
    this.#get = db.prepare<[string], { not_before: number; generation: number }>(
      "SELECT not_before, generation FROM token_revocations WHERE user_id = ?",
    );
    this.#put = db.prepare(
      `INSERT INTO token_revocations (user_id, not_before, revoked_at, generation) VALUES (?, ?, ?, 1)
       ON CONFLICT (user_id) DO UPDATE SET not_before = excluded.not_before, revoked_at = excluded.revoked_at,
         generation = generation + 1`,
    );
    this.#spend = db.prepare(
      "INSERT OR IGNORE INTO spent_sign_in_links (link_hash, spent_at, expires_at) VALUES (?, ?, ?)",
    );
    this.#forget = db.prepare("DELETE FROM spent_sign_in_links WHERE expires_at < ?");
  }

  spendLink(key: string, expiresAt: number, now: number): boolean {
    // An expired link is refused before it gets here, so its row is no longer needed.
    this.#forget.run(now);
    return this.#spend.run(key, now, expiresAt).changes === 1;
  }

  notBefore(userId: string): number | undefined {
    return this.#get.get(userId)?.not_before;
  }

  generation(userId: string): number {
    return this.#get.get(userId)?.generation ?? 0;
  }

  /** Revokes every token of `userId` issued up to `nowMs`; returns the new not-before time. */
  revoke(userId: string, nowMs: number): number {
    // +1: a token issued in this very millisecond, before the revocation, must not survive it.
    const notBefore = nowMs + 1;
    this.#put.run(userId, notBefore, nowMs);
    return notBefore;
  }
}
