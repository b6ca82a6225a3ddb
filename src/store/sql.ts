import { type Generated, Kysely, PostgresDialect, type RawBuilder, SqliteDialect, sql } from "kysely";
import type pg from "pg";
import { asClusterError } from "../cluster/errors.ts";
import type { Db } from "./db.ts";
import type { RunTables } from "./run-tables.ts";

/**
 * The one query layer over both dialects (issue 27): Kysely on the SQLite file (better-sqlite3, the embedded
 * default) or on Postgres (`pg`, several instances). A repository written against `StoreSql` runs unchanged on
 * either; where the dialects differ in what they can say, the difference lives here, named, never in a
 * repository. The repositories move here one by one (the ask rows first, the rows every surface compare-and-sets;
 * then the standing permissions; then the Feishu channel's rows); until they all have, the others keep their
 * better-sqlite3 statements on the same file.
 *
 * On SQLite, Kysely shares the better-sqlite3 handle the synchronous repositories use. That is safe because a
 * Kysely repository here runs single statements, never a transaction across an `await` (on one connection,
 * another task's synchronous write would land inside it).
 */

export type AskStatusColumn = "pending" | "answered" | "timeout" | "cancelled" | "superseded" | "declined";

/** Times are milliseconds since the epoch (INTEGER in SQLite, bigint read back as a number in Postgres). */
export interface AsksTable {
  request_id: string;
  session_id: string;
  run_id: string;
  tool_call_id: string | null;
  answerer_id: string;
  questions: string;
  question_count: number;
  metadata: string | null;
  surfaces: string;
  created_at: number;
  expires_at: number;
  extended_ms: Generated<number>;
  status: Generated<AskStatusColumn>;
  answer: string | null;
  reason: string | null;
  answered_via: string | null;
  answered_by: string | null;
  settled_at: number | null;
  declinable: Generated<number>;
}

/** "Always allow" choices (store/permissions.ts). */
export interface StandingPermissionsTable {
  id: string;
  session_id: string;
  tool_kind: string;
  tool_name: string;
  decision: "allow" | "reject";
  title: string;
  granted_by: string;
  granted_at: number;
  agent_keeps: number;
}

/** The Feishu channel's rows (store/feishu.ts); `app_id` null: written before apps were recorded (issue 30). */
export interface ProgressCardsTable {
  run_id: string;
  session_id: string;
  message_id: string;
  chat_id: string;
  sender_id: string;
  source_message_id: string;
  created_at: number;
  gone: Generated<number>;
  final_landed_at: number | null;
  app_id: string | null;
}

export interface QueuedCardsTable {
  queue_id: string;
  session_id: string;
  message_id: string;
  source_message_id: string;
  chat_id: string;
  created_at: number;
  app_id: string | null;
}

export interface AskPingsTable {
  message_id: string;
  kind: "ping" | "reminder";
  run_id: string;
  request_ids: string;
  in_group: number;
  sent_at: number;
  app_id: string | null;
}

export interface StoreTables extends RunTables {
  asks: AsksTable;
  standing_permissions: StandingPermissionsTable;
  progress_cards: ProgressCardsTable;
  queued_cards: QueuedCardsTable;
  ask_pings: AskPingsTable;
  ask_reminders: { run_id: string; sent_at: number };
  inbound_messages: { message_id: string; received_at: number };
  bot_identities: { app_id: string; open_id: string; name: string; checked_at: number };
}

export type Dialect = "sqlite" | "postgres";

export interface StoreSql {
  readonly db: Kysely<StoreTables>;
  readonly dialect: Dialect;
  /** Set on the StoreSql a `transaction` body receives: a nested `transaction` joins it. */
  readonly inTransaction?: true;
}

const onFile = new WeakMap<Db, StoreSql>();

/**
 * Kysely on the bot's SQLite file: one per handle, whoever asks, because Kysely's SQLite driver serialises its
 * statements and transactions with a lock of its own, and two instances on one handle would each think they had
 * the connection (a statement of one landing inside the other's transaction). Never `destroy()` it: the handle
 * belongs to whoever opened the file.
 */
export function sqliteSql(db: Db): StoreSql {
  let store = onFile.get(db);
  if (!store) {
    store = {
      db: new Kysely<StoreTables>({ dialect: new SqliteDialect({ database: db }) }),
      dialect: "sqlite",
    };
    onFile.set(db, store);
  }
  return store;
}

/** Kysely on a Postgres pool (src/cluster/pool.ts makes one that cannot crash the process). */
export function postgresSql(pool: pg.Pool): StoreSql {
  return { db: new Kysely<StoreTables>({ dialect: new PostgresDialect({ pool }) }), dialect: "postgres" };
}

/**
 * The order rows were inserted in, for ties on a time column (fake clocks and fast machines give equal
 * milliseconds): SQLite's rowid, Postgres's `seq` column (a bigserial the Postgres schema adds;
 * `inserted` where the table has a `seq` of its own).
 */
export function insertionOrder(store: StoreSql, postgresColumn = "seq"): RawBuilder<number> {
  return store.dialect === "sqlite" ? sql<number>`rowid` : sql<number>`${sql.ref(postgresColumn)}`;
}

/** The larger of two columns: SQLite's two-argument MAX, Postgres's GREATEST. */
export function greatest(store: StoreSql, a: string, b: string): RawBuilder<number> {
  return store.dialect === "sqlite"
    ? sql<number>`MAX(${sql.ref(a)}, ${sql.ref(b)})`
    : sql<number>`GREATEST(${sql.ref(a)}, ${sql.ref(b)})`;
}

/**
 * Runs one statement. On Postgres, an outage surfaces as DatabaseUnavailableError (503, "Postgres is
 * unreachable"), as every cluster primitive's does; SQLite's errors pass through (isStorageError knows them).
 */
export async function run<T>(store: StoreSql, statement: () => Promise<T>): Promise<T> {
  if (store.dialect === "sqlite") return statement();
  try {
    return await statement();
  } catch (error) {
    throw asClusterError(error);
  }
}

/**
 * Runs `body` in one transaction: all of its writes or none. The body gets a StoreSql bound to the
 * transaction; repositories built on it (or handed it) write inside it. A `transaction` inside the body joins
 * the outer one. The body must do database work only: on SQLite the transaction holds the file's one
 * connection (every other statement waits for it), on Postgres a pooled connection and its row locks.
 */
export async function transaction<T>(store: StoreSql, body: (tx: StoreSql) => Promise<T>): Promise<T> {
  if (store.inTransaction) return body(store);
  return run(store, () =>
    store.db.transaction().execute((trx) => body({ db: trx, dialect: store.dialect, inTransaction: true })),
  );
}

// Issue 27's small repositories (sign-in, the audit, CardKit entities): their tables, merged into StoreTables
// above (one interface, declared twice, so that each area's tables sit in one block of their own).

/** Per-user revocations (store/token-revocations.ts). */
export interface TokenRevocationsTable {
  user_id: string;
  not_before: number;
  revoked_at: number;
  generation: Generated<number>;
}

/** Sign-in links spent at /auth/link, by hash, kept until they would have expired. */
export interface SpentSignInLinksTable {
  link_hash: string;
  spent_at: number;
  expires_at: number;
}

/** A view of the ask rows (store/audit.ts): asked, then how it ended; never written. */
export interface AskAuditView {
  request_id: string;
  session_id: string;
  run_id: string;
  answerer_id: string;
  questions: number;
  surfaces: string;
  asked_at: number;
  outcome: string | null;
  answered_by: string | null;
  answered_via: string | null;
  settled_at: number | null;
  seq: number;
}

/** CardKit card entities (store/cardkit.ts); 0/1 integers for the flags. */
export interface CardkitEntitiesTable {
  key: string;
  card_id: string;
  message_id: string | null;
  reserved: Generated<number>;
  streaming_since: number | null;
  fallback: Generated<number>;
  static: Generated<number>;
  static_message_id: string | null;
}

export interface StoreTables {
  token_revocations: TokenRevocationsTable;
  spent_sign_in_links: SpentSignInLinksTable;
  ask_audit: AskAuditView;
  cardkit_entities: CardkitEntitiesTable;
}

// Outside agents' rows (agents-api/store.ts, agents-api/token-store.ts). Declared apart from the interface
// above (TypeScript merges the two) so each area's tables stay one block of this file.

export interface AgentTasksTable {
  id: string;
  agent: string;
  target: string;
  chat_type: string;
  implicit: number;
  run_json: string;
  status: string;
  updated_at: number;
  token_id: string | null;
}

export interface AgentAsksTable {
  ask_id: string;
  agent: string;
  task_id: string;
  answerer_id: string;
  created_at: number;
  expires_at: number;
  outcome_json: string | null;
  settled_at: number | null;
  token_id: string | null;
}

export interface IssuedAgentTokensTable {
  token_id: string;
  agent: string;
  may_json: string;
  issued_at: number;
  expires_at: number;
  revoked_at: number | null;
}

export interface RevokedAgentNamesTable {
  agent: string;
  not_before: number;
  revoked_at: number;
}

export interface StoreTables {
  agent_tasks: AgentTasksTable;
  agent_asks: AgentAsksTable;
  issued_agent_tokens: IssuedAgentTokensTable;
  revoked_agent_names: RevokedAgentNamesTable;
}
