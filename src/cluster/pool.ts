import pg from "pg";
import type { Logger } from "../logger.ts";
import { asClusterError } from "./errors.ts";

/**
 * The one way the cluster area talks to Postgres: a `pg.Pool` that cannot crash the process and whose
 * outages surface as DatabaseUnavailableError.
 *
 * Why each setting: an idle client whose server went away emits `error` on the pool, and an unhandled
 * `error` event kills Node, so the pool always has a listener (it logs; the next query reconnects). A
 * refused or hung connect fails after `connectTimeoutMs` instead of queueing callers for ever, so a caller
 * learns of an outage within that time and can say 503.
 */
export type Db = pg.Pool;
export type Queryable = Pick<pg.Pool | pg.PoolClient | pg.Client, "query">;

export interface ClusterPoolOptions {
  connectionString: string;
  /** Most connections this pool opens (default 5: the primitives hold none for long). */
  max?: number;
  connectTimeoutMs?: number;
  /** Each statement's limit on the server (default 5 s): a lock wait never hangs a caller. */
  statementTimeoutMs?: number;
  log?: Logger;
  /** Name shown in pg_stat_activity (default feishu-progress-bot). */
  applicationName?: string;
  /** How column values are parsed (the store reads bigint milliseconds as numbers: src/store/pg-schema.ts). */
  types?: pg.CustomTypesConfig;
}

export function createClusterPool(options: ClusterPoolOptions): Db {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 5,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 2_000,
    statement_timeout: options.statementTimeoutMs ?? 5_000,
    idleTimeoutMillis: 30_000,
    application_name: options.applicationName ?? "feishu-progress-bot",
    ...(options.types ? { types: options.types } : {}),
  });
  pool.on("error", (error) => {
    options.log?.warn({ err: error.message }, "postgres idle connection lost");
  });
  // A connection checked out between two statements (a transaction awaiting its next one) has no pool listener:
  // the server going away (57P01 on a restart) would be an unhandled `error` event. Its statement fails instead.
  pool.on("connect", (client) => {
    client.on("error", (error) => {
      options.log?.warn({ err: error.message }, "postgres connection lost while in use");
    });
  });
  return pool;
}

/** One statement, with outages translated. */
export async function query<R extends pg.QueryResultRow>(
  db: Queryable,
  text: string,
  values: unknown[] = [],
): Promise<pg.QueryResult<R>> {
  try {
    return await db.query<R>(text, values);
  } catch (error) {
    throw asClusterError(error);
  }
}

/**
 * `fn` inside one transaction on one connection: committed when it returns, rolled back when it throws.
 * A connection that broke mid-transaction is destroyed rather than returned to the pool.
 */
export async function transaction<T>(db: Db, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await db.connect();
  } catch (error) {
    throw asClusterError(error);
  }
  let broken: unknown;
  try {
    await client.query("BEGIN");
    const result = await fn(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    try {
      await client.query("ROLLBACK");
    } catch (rollbackError) {
      broken = rollbackError;
    }
    throw asClusterError(error);
  } finally {
    client.release(broken instanceof Error ? broken : undefined);
  }
}
