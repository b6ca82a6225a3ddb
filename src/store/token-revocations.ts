import { run, type StoreSql } from "./sql.ts";

/**
 * Per-user token revocation (issue 14 item 12). A token carries the time it was issued; revoking a user
 * stores a "not before" time, and every token of theirs issued earlier is refused from then on — by this
 * process and by any other on the same store (the SQLite file, or Postgres for several instances: sql.ts),
 * since the check reads the store each time.
 */
export interface Revocation {
  /** Tokens of the user issued before this time (ms) are revoked. */
  notBefore: number;
  /** How many times the user was revoked: tokens carry it when minted, and an older one is revoked. */
  generation: number;
}

export interface TokenRevocations {
  /** Where `userId`'s revocations stand; undefined when never revoked. */
  revocation(userId: string): Promise<Revocation | undefined>;
  /**
   * Spends a sign-in link (issue 24 item 15): true the first time `key` (a hash of the link's token) is
   * spent, false ever after — on this instance and any other on the same store. Kept until `expiresAt`.
   */
  spendLink(key: string, expiresAt: number, now: number): Promise<boolean>;
}

/** The revocations and spent links in the store (`token_revocations`, `spent_sign_in_links`), one statement each. */
export class StoreTokenRevocations implements TokenRevocations {
  readonly #store: StoreSql;

  constructor(store: StoreSql) {
    this.#store = store;
  }

  async revocation(userId: string): Promise<Revocation | undefined> {
    const { db } = this.#store;
    const row = await run(this.#store, () =>
      db
        .selectFrom("token_revocations")
        .select(["not_before", "generation"])
        .where("user_id", "=", userId)
        .executeTakeFirst(),
    );
    return row ? { notBefore: row.not_before, generation: row.generation } : undefined;
  }

  /** The generation a token of `userId` minted now carries (0 when never revoked). */
  async generation(userId: string): Promise<number> {
    return (await this.revocation(userId))?.generation ?? 0;
  }

  async spendLink(key: string, expiresAt: number, now: number): Promise<boolean> {
    const { db } = this.#store;
    // An expired link is refused before it gets here, so its row is no longer needed.
    await run(this.#store, () =>
      db.deleteFrom("spent_sign_in_links").where("expires_at", "<", now).execute(),
    );
    // One winner on any number of instances: the primary key decides, and a loser inserts nothing.
    const spent = await run(this.#store, () =>
      db
        .insertInto("spent_sign_in_links")
        .values({ link_hash: key, spent_at: now, expires_at: expiresAt })
        .onConflict((conflict) => conflict.column("link_hash").doNothing())
        .returning("link_hash")
        .executeTakeFirst(),
    );
    return spent !== undefined;
  }

  /** Revokes every token of `userId` issued up to `nowMs`; returns the new not-before time. */
  async revoke(userId: string, nowMs: number): Promise<number> {
    // +1: a token issued in this very millisecond, before the revocation, must not survive it.
    const notBefore = nowMs + 1;
    const { db } = this.#store;
    await run(this.#store, () =>
      db
        .insertInto("token_revocations")
        .values({ user_id: userId, not_before: notBefore, revoked_at: nowMs, generation: 1 })
        .onConflict((conflict) =>
          conflict.column("user_id").doUpdateSet((eb) => ({
            not_before: eb.ref("excluded.not_before"),
            revoked_at: eb.ref("excluded.revoked_at"),
            // Qualified: Postgres finds a bare column of the upsert's target ambiguous.
            generation: eb("token_revocations.generation", "+", 1),
          })),
        )
        .execute(),
    );
    return notBefore;
  }
}
