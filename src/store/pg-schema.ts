import pg from "pg";
import type { Db } from "../cluster/pool.ts";
import { applyMigrations } from "../cluster/schema.ts";

/**
 * The store's tables on Postgres (issue 27), recorded in `store_migrations` so each runs once per database,
 * beside the cluster's own (src/cluster/schema.ts). SQLite's history (migrations.ts) is fifteen steps of a
 * released file and is never edited; a Postgres database starts at today's shape instead, so its first
 * migration is the baseline of the tables whose repositories run on both dialects. `DATABASE_URL` selects it
 * (issue 27), so operators hold such databases: append only, never edit a migration here.
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
  // The bot's sessions, runs, history, queues, pending turns and members (store/repos.ts, queue-rows.ts,
  // turns.ts, members.ts).
  `CREATE TABLE sessions (
     id              text PRIMARY KEY,
     channel         text NOT NULL,
     chat_type       text NOT NULL,
     chat_id         text,
     workspace       text NOT NULL,
     owner_id        text NOT NULL,
     title           text NOT NULL,
     topic_root_id   text,
     topic_group_id  text,
     created_at      bigint NOT NULL,
     updated_at      bigint NOT NULL
   );
   CREATE TABLE runs (
     seq               bigserial UNIQUE,
     id                text PRIMARY KEY,
     session_id        text NOT NULL REFERENCES sessions(id),
     sender_id         text NOT NULL,
     input             text NOT NULL,
     status            text NOT NULL,
     steps_json        text NOT NULL DEFAULT '[]',
     final_text        text,
     error             text,
     error_words_json  text,
     input_tokens      integer,
     output_tokens     integer,
     cached_tokens     integer,
     model             text,
     started_at        bigint NOT NULL,
     ended_at          bigint,
     source_json       text
   );
   CREATE INDEX runs_by_session ON runs (session_id, started_at);
   CREATE INDEX runs_unfinished ON runs (started_at) WHERE status IN ('running', 'recovering');
   CREATE TABLE messages (
     id            bigserial PRIMARY KEY,
     session_id    text NOT NULL REFERENCES sessions(id),
     run_id        text,
     role          text NOT NULL,
     content       text NOT NULL,
     tool_calls    text,
     tool_call_id  text,
     tool_name     text,
     summary       text,
     created_at    bigint NOT NULL
   );
   CREATE INDEX messages_by_session ON messages (session_id, id);
   CREATE TABLE queued_messages (
     inserted      bigserial UNIQUE,
     id            text PRIMARY KEY,
     session_id    text NOT NULL REFERENCES sessions(id),
     sender_id     text NOT NULL,
     text          text NOT NULL,
     source_json   text,
     seq           double precision NOT NULL,
     created_at    bigint NOT NULL
   );
   CREATE INDEX queue_by_session ON queued_messages (session_id, seq);
   CREATE TABLE pending_turns (
     seq         bigserial UNIQUE,
     turn_id     text PRIMARY KEY,
     run_id      text NOT NULL,
     session_id  text NOT NULL,
     text        text NOT NULL,
     calls       text NOT NULL,
     created_at  bigint NOT NULL
   );
   CREATE INDEX pending_turns_by_run ON pending_turns (run_id, created_at);
   CREATE TABLE session_members (
     session_id    text NOT NULL,
     user_id       text NOT NULL,
     last_seen_at  bigint NOT NULL,
     PRIMARY KEY (session_id, user_id)
   );`,
  // Issue 27's small repositories, in one step: sign-in to the session pages (store/token-revocations.ts:
  // per-user revocations, the sign-in links spent), the data-loss audit (store/audit.ts: a view of the ask
  // rows, as on SQLite) and CardKit card entities (store/cardkit.ts: FEISHU_CARD_TRANSPORT=cardkit).
  `CREATE TABLE token_revocations (
     user_id     text PRIMARY KEY,
     not_before  bigint NOT NULL,
     revoked_at  bigint NOT NULL,
     generation  integer NOT NULL DEFAULT 0
   );
   CREATE TABLE spent_sign_in_links (
     link_hash   text PRIMARY KEY,
     spent_at    bigint NOT NULL,
     expires_at  bigint NOT NULL
   );
   CREATE INDEX spent_sign_in_links_by_expiry ON spent_sign_in_links (expires_at);
   CREATE VIEW ask_audit AS
     SELECT request_id, session_id, run_id, answerer_id, question_count AS questions, surfaces,
            created_at AS asked_at, CASE status WHEN 'pending' THEN NULL ELSE status END AS outcome,
            answered_by, answered_via, settled_at, seq
     FROM asks;
   CREATE TABLE cardkit_entities (
     key                text PRIMARY KEY,
     card_id            text NOT NULL,
     message_id         text,
     reserved           bigint NOT NULL DEFAULT 0,
     streaming_since    bigint,
     fallback           integer NOT NULL DEFAULT 0,
     static             integer NOT NULL DEFAULT 0,
     static_message_id  text
   );
   CREATE INDEX cardkit_entities_message ON cardkit_entities (message_id);`,
  // Outside agents (agents-api/store.ts, token-store.ts): their tasks and asks, kept across restarts, and the
  // agent tokens minted and revoked (by id, or every token of a name issued before `not_before`).
  `CREATE TABLE agent_tasks (
     seq         bigserial UNIQUE,
     id          text PRIMARY KEY,
     agent       text NOT NULL,
     target      text NOT NULL,
     chat_type   text NOT NULL,
     implicit    integer NOT NULL,
     run_json    text NOT NULL,
     status      text NOT NULL,
     updated_at  bigint NOT NULL,
     token_id    text
   );
   CREATE INDEX agent_tasks_by_status ON agent_tasks (status, updated_at);
   CREATE TABLE agent_asks (
     ask_id        text PRIMARY KEY,
     agent         text NOT NULL,
     task_id       text NOT NULL,
     answerer_id   text NOT NULL,
     created_at    bigint NOT NULL,
     expires_at    bigint NOT NULL,
     outcome_json  text,
     settled_at    bigint,
     token_id      text
   );
   CREATE TABLE issued_agent_tokens (
     seq         bigserial UNIQUE,
     token_id    text PRIMARY KEY,
     agent       text NOT NULL,
     may_json    text NOT NULL,
     issued_at   bigint NOT NULL,
     expires_at  bigint NOT NULL,
     revoked_at  bigint
   );
   CREATE INDEX issued_agent_tokens_by_agent ON issued_agent_tokens (agent, issued_at);
   CREATE TABLE revoked_agent_names (
     agent       text PRIMARY KEY,
     not_before  bigint NOT NULL,
     revoked_at  bigint NOT NULL
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
  // The app's bot as bot/v3/info last said: a start listens without that call (feishu/bot-identity.ts).
  `CREATE TABLE bot_identities (
     app_id      text PRIMARY KEY,
     open_id     text NOT NULL,
     name        text NOT NULL,
     checked_at  bigint NOT NULL
   );`,
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
