import pg from "pg";
import type { Db } from "../cluster/pool.ts";
import { applyMigrations } from "../cluster/schema.ts";

/**
 * The store's tables on Postgres (issue 27), recorded in `store_migrations` so each runs once per database,
 * beside the cluster's own (src/cluster/schema.ts). SQLite's history (migrations.ts) is fifteen steps of a
 * released file and is never edited; a Postgres database starts at today's shape instead, so its first
 * migration is the baseline of the tables whose repositories run on both dialects, and it grows with each
 * table that moves to Kysely (src/store/sql.ts). Until `DATABASE_URL` selects Postgres for the whole store,
 * nothing here has been released and the baseline may still change; from then on, append only.
 *
 * Column types mirror SQLite's: JSON as text (the repositories parse it with zod either way), booleans as
 * 0/1 integers, times as bigint milliseconds since the epoch, read back as numbers (`STORE_PG_TYPES`).
 * Rows carry `seq` where SQLite's rowid orders ties (sql.ts: insertionOrder).
 */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE asks (
     seq             bigserial UNIQUE,
     request_id      text PRIMARY KEY,
     session_id      text NOT NULL,
     run_id          text NOT NULL,
     tool_call_id    text,
     answerer_id     text NOT NULL,
     questions       text NOT NULL,
     question_count  integer NOT NULL,
     metadata        text,
     surfaces        text NOT NULL,
     created_at      bigint NOT NULL,
     expires_at      bigint NOT NULL,
     extended_ms     bigint NOT NULL DEFAULT 0,
     status          text NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'answered', 'timeout', 'cancelled', 'superseded', 'declined')),
     answer          text,
     reason          text,
     answered_via    text,
     answered_by     text,
     settled_at      bigint,
     declinable      integer NOT NULL DEFAULT 0
   );
   CREATE INDEX asks_pending ON asks (session_id) WHERE status = 'pending';
   CREATE INDEX asks_by_session ON asks (session_id, created_at);
   CREATE INDEX asks_by_tool_call ON asks (run_id, tool_call_id);`,
  // "Always allow" (issue 30): the choices a person made on ACP permission forms, per session and scope.
  `CREATE TABLE standing_permissions (
     id           text PRIMARY KEY,
     session_id   text NOT NULL,
     tool_kind    text NOT NULL,
     tool_name    text NOT NULL,
     decision     text NOT NULL CHECK (decision IN ('allow', 'reject')),
     title        text NOT NULL,
     granted_by   text NOT NULL,
     granted_at   bigint NOT NULL,
     agent_keeps  integer NOT NULL DEFAULT 0,
     UNIQUE (session_id, granted_by, tool_kind, tool_name)
   )`,
  // The Feishu channel's rows (store/feishu.ts): seen inbound message ids, progress cards, queued-message
  // cards, @-mention reminders and pings. Each row names the app that sent it (issue 30; NULL: before apps).
  `CREATE TABLE inbound_messages (
     message_id   text PRIMARY KEY,
     received_at  bigint NOT NULL
   );
   CREATE INDEX inbound_by_time ON inbound_messages (received_at);
   CREATE TABLE progress_cards (
     seq                bigserial UNIQUE,
     run_id             text PRIMARY KEY,
     session_id         text NOT NULL,
     message_id         text NOT NULL,
     chat_id            text NOT NULL,
     sender_id          text NOT NULL,
     source_message_id  text NOT NULL,
     created_at         bigint NOT NULL,
     gone               integer NOT NULL DEFAULT 0,
     final_landed_at    bigint,
     app_id             text
   );
   CREATE INDEX cards_by_message ON progress_cards (message_id);
   CREATE INDEX cards_by_session ON progress_cards (session_id, created_at);
   CREATE INDEX cards_final_pending ON progress_cards (created_at) WHERE final_landed_at IS NULL AND gone = 0;
   CREATE TABLE queued_cards (
     queue_id           text PRIMARY KEY,
     session_id         text NOT NULL,
     message_id         text NOT NULL,
     source_message_id  text NOT NULL,
     chat_id            text NOT NULL,
     created_at         bigint NOT NULL,
     app_id             text
   );
   CREATE TABLE ask_reminders (
     run_id   text PRIMARY KEY,
     sent_at  bigint NOT NULL
   );
   CREATE TABLE ask_pings (
     seq          bigserial UNIQUE,
     message_id   text PRIMARY KEY,
     kind         text NOT NULL CHECK (kind IN ('ping', 'reminder')),
     run_id       text NOT NULL,
     request_ids  text NOT NULL,
     in_group     integer NOT NULL,
     sent_at      bigint NOT NULL,
     app_id       text
   );
   CREATE INDEX ask_pings_by_time ON ask_pings (sent_at);`,
];

/** The migrations' text, for the boundary test's table-ownership check. */
export const PG_MIGRATIONS = MIGRATIONS;

const INT8 = 20;

/** bigint columns (milliseconds, counters) as numbers: every value the store keeps is far below 2^53. */
export const STORE_PG_TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === INT8 && format !== "binary"
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig["getTypeParser"],
};

/** An arbitrary constant (the cluster schema's is 27_270_001): serialises two instances starting at once. */
const SCHEMA_LOCK = 27_270_002;

export async function ensureStoreSchema(db: Db): Promise<void> {
  await applyMigrations(db, { table: "store_migrations", lock: SCHEMA_LOCK, migrations: MIGRATIONS });
}
