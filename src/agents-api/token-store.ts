import {
  type IssuedAgentTokensTable,
  insertionOrder,
  run,
  type StoreSql,
  transaction,
} from "../store/sql.ts";
import type { AgentTokenRevocations } from "./token.ts";

/**
 * Agent tokens in the store (issue 24 item 8): each minted token is recorded (`npm run token -- --agent`), so a
 * revocation can say what it revoked — by token id, or by agent name (every token of that name issued until
 * now, recorded or not). The server reads the revocations on every request, so a revocation written by the
 * CLI into the running bot's DATA_DIR (or, on Postgres, by any instance) holds at the next call. The rows run
 * on either dialect (store/sql.ts): tables from src/store/migrations.ts (SQLite) and src/store/pg-schema.ts.
 */

export interface RecordedAgentToken {
  tokenId: string;
  agent: string;
  mayAsk: string[];
  issuedAt: number;
  expiresAt: number;
  revokedAt: number | undefined;
}

type TokenRow = IssuedAgentTokensTable;

/** The agent tokens' rows on either dialect (store/sql.ts). */
export class AgentTokenStore implements AgentTokenRevocations {
  readonly #store: StoreSql;

  constructor(store: StoreSql) {
    this.#store = store;
  }

  /** Records a minted token once (its id is random: a second record of it changes nothing). */
  async record(token: {
    tokenId: string;
    agent: string;
    mayAsk: readonly string[];
    issuedAt: number;
    expiresAt: number;
  }): Promise<void> {
    const { db } = this.#store;
    await run(this.#store, () =>
      db
        .insertInto("issued_agent_tokens")
        .values({
          token_id: token.tokenId,
          agent: token.agent,
          may_json: JSON.stringify(token.mayAsk),
          issued_at: token.issuedAt,
          expires_at: token.expiresAt,
        })
        .onConflict((conflict) => conflict.column("token_id").doNothing())
        .execute(),
    );
  }

  /** One read per request: the token's own row and its name's not-before, by primary key each. */
  async isRevoked(token: { tokenId: string; agent: string; issuedAt: number }): Promise<boolean> {
    const { db } = this.#store;
    const row = await run(this.#store, () =>
      db
        .selectNoFrom((eb) => [
          eb
            .selectFrom("issued_agent_tokens")
            .select("revoked_at")
            .where("token_id", "=", token.tokenId)
            .as("revoked_at"),
          eb
            .selectFrom("revoked_agent_names")
            .select("not_before")
            .where("agent", "=", token.agent)
            .as("not_before"),
        ])
        .executeTakeFirst(),
    );
    if (row?.revoked_at != null) return true;
    return row?.not_before != null && token.issuedAt < row.not_before;
  }

  async token(tokenId: string): Promise<RecordedAgentToken | undefined> {
    const { db } = this.#store;
    const row = await run(this.#store, () =>
      db.selectFrom("issued_agent_tokens").selectAll().where("token_id", "=", tokenId).executeTakeFirst(),
    );
    return row ? toToken(row) : undefined;
  }

  /** The tokens recorded under `agent`, oldest first (ties on the clock in the order they were recorded). */
  async tokensOf(agent: string): Promise<RecordedAgentToken[]> {
    const { db } = this.#store;
    const rows = await run(this.#store, () =>
      db
        .selectFrom("issued_agent_tokens")
        .selectAll()
        .where("agent", "=", agent)
        .orderBy("issued_at")
        .orderBy(insertionOrder(this.#store))
        .execute(),
    );
    return rows.map(toToken);
  }

  /**
   * The names tokens were recorded under (for a message when a name matches none), sorted here by code unit:
   * the dialects' collations would order them differently.
   */
  async agents(): Promise<string[]> {
    const { db } = this.#store;
    const rows = await run(this.#store, () =>
      db.selectFrom("issued_agent_tokens").select("agent").distinct().execute(),
    );
    return rows.map((row) => row.agent).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  /** Revokes one token; false when it is unknown or was already revoked (of writers at once, one wins). */
  async revokeToken(tokenId: string, nowMs: number): Promise<boolean> {
    const { db } = this.#store;
    const result = await run(this.#store, () =>
      db
        .updateTable("issued_agent_tokens")
        .set({ revoked_at: nowMs })
        .where("token_id", "=", tokenId)
        .where("revoked_at", "is", null)
        .executeTakeFirst(),
    );
    return result.numUpdatedRows === 1n;
  }

  /**
   * Revokes every token named `agent` issued up to `nowMs`: the recorded live ones (returned: those this call
   * revoked, so of two revocations at once each token is reported by one), and by a not-before on the name any
   * token of it that was never recorded (minted by the console, or before tokens were recorded). One
   * transaction, so a reader sees all of it or none. The not-before only moves forward: a revocation with an
   * older clock (another machine's CLI) never lets back in a token a newer one refused.
   */
  async revokeAgent(agent: string, nowMs: number): Promise<RecordedAgentToken[]> {
    return transaction(this.#store, async (tx) => {
      const revoked = await tx.db
        .updateTable("issued_agent_tokens")
        .set({ revoked_at: nowMs })
        .where("agent", "=", agent)
        .where("revoked_at", "is", null)
        .where("expires_at", ">", nowMs)
        .returningAll()
        .returning(insertionOrder(tx).as("recorded"))
        .execute();
      // +1: a token issued in this very millisecond, before the revocation, must not survive it.
      await tx.db
        .insertInto("revoked_agent_names")
        .values({ agent, not_before: nowMs + 1, revoked_at: nowMs })
        .onConflict((conflict) =>
          conflict
            .column("agent")
            .doUpdateSet((eb) => ({
              not_before: eb.ref("excluded.not_before"),
              revoked_at: eb.ref("excluded.revoked_at"),
            }))
            .where("revoked_agent_names.not_before", "<", (eb) => eb.ref("excluded.not_before")),
        )
        .execute();
      return revoked.sort((a, b) => a.issued_at - b.issued_at || a.recorded - b.recorded).map(toToken);
    });
  }
}

function toToken(row: TokenRow): RecordedAgentToken {
  let mayAsk: string[] = [];
  try {
    const parsed: unknown = JSON.parse(row.may_json);
    if (Array.isArray(parsed)) mayAsk = parsed.filter((id): id is string => typeof id === "string");
  } catch (error) {
    mayAsk = [`(unreadable: ${error instanceof Error ? error.name : "json"})`];
  }
  return {
    tokenId: row.token_id,
    agent: row.agent,
    mayAsk,
    issuedAt: row.issued_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at ?? undefined,
  };
}
