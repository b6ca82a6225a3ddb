import { type Db, transaction } from "./pool.ts";

/**
 * The cluster tables, created in order and recorded in `cluster_migrations` so each runs once per database.
 * Kept apart from the bot's own store (src/store): these rows are about instances (who holds what, who is
 * alive), not about runs and questions, and they exist only on Postgres. When the store moves to Kysely for
 * both dialects, its migrations run beside these.
 *
 * Every instance calls ensureClusterSchema at start; two starting at once are serialised by a transaction-
 * scoped advisory lock (released at commit, so it is safe behind a transaction-mode pooler).
 *
 * Times are `timestamptz` set from the database's `now()`, never from a host: instances' clocks may differ,
 * the database's is the one they share.
 */
const MIGRATIONS: readonly string[] = [
  // leases.ts: one row per lease name, kept for ever so the fence never restarts at 1.
  `CREATE TABLE cluster_leases (
     name text PRIMARY KEY,
     holder text NOT NULL,
     fence bigint NOT NULL,
     acquired_at timestamptz NOT NULL,
     expires_at timestamptz NOT NULL
   )`,
  // claims.ts: one row per delivered event id (a redelivery to any instance finds it).
  `CREATE TABLE cluster_event_claims (
     event_id text PRIMARY KEY,
     claimed_by text NOT NULL,
     claimed_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE INDEX cluster_event_claims_claimed_at ON cluster_event_claims (claimed_at)`,
  // claims.ts: queued work any instance may claim; `attempt` fences a claim against a later one.
  `CREATE TABLE cluster_work (
     id bigserial PRIMARY KEY,
     kind text NOT NULL,
     dedupe_key text UNIQUE,
     payload jsonb NOT NULL,
     available_at timestamptz NOT NULL DEFAULT now(),
     claimed_by text,
     claimed_until timestamptz,
     attempt integer NOT NULL DEFAULT 0,
     done_at timestamptz,
     created_at timestamptz NOT NULL DEFAULT now()
   )`,
  `CREATE INDEX cluster_work_ready ON cluster_work (kind, id) WHERE done_at IS NULL`,
  // budget.ts: live members of each app, each row kept alive by its heartbeat.
  `CREATE TABLE cluster_members (
     app_id text NOT NULL,
     member text NOT NULL,
     joined_at timestamptz NOT NULL DEFAULT now(),
     expires_at timestamptz NOT NULL,
     PRIMARY KEY (app_id, member)
   )`,
  // budget.ts: each member publishes, at every heartbeat, its calls in its trailing minute window and the minute
  // share it keeps to, so a newcomer can spend what is left instead of waiting a whole minute; a member that
  // goes stays a row (expired) for a minute more, its last count still in the windows. Null: not yet published.
  `ALTER TABLE cluster_members ADD COLUMN minute_calls integer, ADD COLUMN minute_share integer`,
];

/** An arbitrary constant: the advisory lock key that serialises schema changes. */
const SCHEMA_LOCK = 27_270_001;

export async function ensureClusterSchema(db: Db): Promise<void> {
  await applyMigrations(db, { table: "cluster_migrations", lock: SCHEMA_LOCK, migrations: MIGRATIONS });
}

/**
 * Runs the `migrations` not yet recorded in `table`, in order, in one transaction under the advisory lock
 * `lock` (the store's Postgres tables use it too, with their own table and lock: src/store/pg-schema.ts).
 */
export async function applyMigrations(
  db: Db,
  set: { table: string; lock: number; migrations: readonly string[] },
): Promise<void> {
  if (!/^[a-z_]+$/.test(set.table)) throw new Error(`not a migrations table name: ${set.table}`);
  await transaction(db, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock($1)", [set.lock]);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${set.table} (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const done = await client.query<{ version: number }>(`SELECT version FROM ${set.table}`);
    const applied = new Set(done.rows.map((row) => row.version));
    for (const [index, statement] of set.migrations.entries()) {
      const version = index + 1;
      if (applied.has(version)) continue;
      await client.query(statement);
      await client.query(`INSERT INTO ${set.table} (version) VALUES ($1)`, [version]);
    }
  });
}
