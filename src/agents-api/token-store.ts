import type { Db } from "../store/db.ts";
import type { AgentTokenRevocations } from "./token.ts";

/**
 * Agent tokens in SQLite (issue 24 item 8): each minted token is recorded (`npm run token -- --agent`), so a
 * revocation can say what it revoked — by token id, or by agent name (every token of that name issued until
 * now, recorded or not). The server reads the revocations on every request, so a revocation written by the
 * CLI into the running bot's DATA_DIR holds at the next call. The tables come from src/store/migrations.ts MIGRATIONS.
 */

export interface RecordedAgentToken {
  tokenId: string;
  agent: string;
  mayAsk: string[];
  issuedAt: number;
  expiresAt: number;
  revokedAt: number | undefined;
}

interface TokenRow {
  token_id: string;
  agent: string;
  may_json: string;
  issued_at: number;
  expires_at: number;
  revoked_at: number | null;
}

export class AgentTokenStore implements AgentTokenRevocations {
  readonly #sql;

  constructor(db: Db) {
    this.#sql = {
      record: db.prepare(
        `INSERT OR IGNORE INTO issued_agent_tokens (token_id, agent, may_json, issued_at, expires_at)
         VALUES (?, ?, ?, ?, ?)`,
      ),
      // One read per request: the token's own row and its name's not-before, by primary key each.
      check: db.prepare<[string, string], { revoked_at: number | null; not_before: number | null }>(
        `SELECT (SELECT revoked_at FROM issued_agent_tokens WHERE token_id = ?) AS revoked_at,
                (SELECT not_before FROM revoked_agent_names WHERE agent = ?) AS not_before`,
      ),
      token: db.prepare<[string], TokenRow>("SELECT * FROM issued_agent_tokens WHERE token_id = ?"),
      ofAgent: db.prepare<[string], TokenRow>(
        "SELECT * FROM issued_agent_tokens WHERE agent = ? ORDER BY issued_at",
      ),
      agents: db.prepare<[], { agent: string }>(
        "SELECT DISTINCT agent FROM issued_agent_tokens ORDER BY agent",
      ),
      revokeToken: db.prepare(
        "UPDATE issued_agent_tokens SET revoked_at = ? WHERE token_id = ? AND revoked_at IS NULL",
      ),
      revokeLive: db.prepare(
        "UPDATE issued_agent_tokens SET revoked_at = ? WHERE agent = ? AND revoked_at IS NULL AND expires_at > ?",
      ),
      notBefore: db.prepare(
        `INSERT INTO revoked_agent_names (agent, not_before, revoked_at) VALUES (?, ?, ?)
         ON CONFLICT (agent) DO UPDATE SET not_before = excluded.not_before, revoked_at = excluded.revoked_at`,
      ),
    };
    this.#db = db;
  }

  readonly #db: Db;

  record(token: {
    tokenId: string;
    agent: string;
    mayAsk: readonly string[];
    issuedAt: number;
    expiresAt: number;
  }) {
    this.#sql.record.run(
      token.tokenId,
      token.agent,
      JSON.stringify(token.mayAsk),
      token.issuedAt,
      token.expiresAt,
    );
  }

  isRevoked(token: { tokenId: string; agent: string; issuedAt: number }): boolean {
    const row = this.#sql.check.get(token.tokenId, token.agent);
    if (row?.revoked_at != null) return true;
    return row?.not_before != null && token.issuedAt < row.not_before;
  }

  token(tokenId: string): RecordedAgentToken | undefined {
    const row = this.#sql.token.get(tokenId);
    return row ? toToken(row) : undefined;
  }

  tokensOf(agent: string): RecordedAgentToken[] {
    return this.#sql.ofAgent.all(agent).map(toToken);
  }

  /** The names tokens were recorded under (for a message when a name matches none). */
  agents(): string[] {
    return this.#sql.agents.all().map((row) => row.agent);
  }

  /** Revokes one token; false when it is unknown or was already revoked. */
  revokeToken(tokenId: string, nowMs: number): boolean {
    return this.#sql.revokeToken.run(nowMs, tokenId).changes === 1;
  }

  /**
   * Revokes every token named `agent` issued up to `nowMs`: the recorded live ones (returned), and by a
   * not-before on the name any token of it that was never recorded (minted by the console, or before tokens
   * were recorded). One transaction, so a reader sees all of it or none.
   */
  revokeAgent(agent: string, nowMs: number): RecordedAgentToken[] {
    return this.#db.transaction(() => {
      const live = this.tokensOf(agent).filter((t) => t.revokedAt === undefined && t.expiresAt > nowMs);
      this.#sql.revokeLive.run(nowMs, agent, nowMs);
      // +1: a token issued in this very millisecond, before the revocation, must not survive it.
      this.#sql.notBefore.run(agent, nowMs + 1, nowMs);
      return live;
    })();
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
