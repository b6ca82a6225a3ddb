import type pg from "pg";
import { isUnavailable } from "../cluster/errors.ts";
import { createClusterPool } from "../cluster/pool.ts";
import { ensureClusterSchema } from "../cluster/schema.ts";
import type { DatabaseSettings } from "../config.ts";
import { AppError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { type Db, openDatabase } from "./db.ts";
import { ensureStoreSchema, STORE_PG_TYPES } from "./pg-schema.ts";
import { postgresSql, type StoreSql, sqliteSql } from "./sql.ts";

/**
 * The store the configuration names, opened once at start (issue 27): the SQLite file in DATA_DIR, as every
 * release before opened it, or the Postgres database of DATABASE_URL with its tables made (the cluster's and
 * the store's, each under its own advisory lock, so instances starting together wait for one another).
 *
 * A Postgres that cannot be reached at start is one error naming where it was looked for, host, port and
 * database, never the password: the operator reads it in a terminal or a log that others read too.
 */

export type OpenedStore = {
  sql: StoreSql;
  /** Where the store is, for the start-up banner: `sqlite data/bot.sqlite`, `postgres db:5432/bot`. */
  describe: string;
  /** Ends the pool or closes the file; a second call waits for the first. */
  close(): Promise<void>;
} & (
  | { dialect: "sqlite"; file: Db; pool?: undefined }
  | { dialect: "postgres"; pool: pg.Pool; file?: undefined }
);

/** The configured Postgres refused or could not be reached while the store was being opened. */
export class StoreOpenError extends AppError {
  constructor(message: string, cause: unknown) {
    super("INTERNAL", message, { cause, status: 503 });
    this.name = "StoreOpenError";
  }
}

/**
 * Connections one instance's store may hold. The runner's transactions each hold one, and a statement that
 * waits longer than the pool's connect timeout (2 s) for a free one fails as an outage; 10 leaves room for a
 * burst while 3 instances stay far below Postgres's default of 100 connections.
 */
const POOL_MAX = 10;

export async function openStore(
  config: { database: DatabaseSettings },
  logger?: Logger,
): Promise<OpenedStore> {
  const { database } = config;
  if (database.kind === "sqlite") {
    const file = openDatabase(database.file);
    return {
      dialect: "sqlite",
      sql: sqliteSql(file),
      file,
      describe: describeDatabase(database),
      async close() {
        if (file.open) file.close();
      },
    };
  }
  return openPostgres(database.url, logger);
}

async function openPostgres(url: string, logger: Logger | undefined): Promise<OpenedStore> {
  const where = whereIs(url);
  const pool = createClusterPool({
    connectionString: url,
    types: STORE_PG_TYPES,
    max: POOL_MAX,
    ...(logger ? { log: logger.child({ module: "store" }) } : {}),
  });
  // One connection first, so that "cannot reach it" and "reached it, but it refused the tables" read apart.
  try {
    const client = await pool.connect();
    client.release();
  } catch (error) {
    await pool.end();
    const what = isUnavailable(error) ? "is unreachable" : "refused the connection";
    throw new StoreOpenError(`Postgres at ${where} ${what}: ${withoutPassword(reasonOf(error), url)}`, error);
  }
  try {
    await ensureClusterSchema(pool);
    await ensureStoreSchema(pool);
  } catch (error) {
    await pool.end();
    const what = isUnavailable(error)
      ? "became unreachable while the bot's tables were being made"
      : "refused the bot's tables";
    throw new StoreOpenError(`Postgres at ${where} ${what}: ${withoutPassword(reasonOf(error), url)}`, error);
  }
  let ended: Promise<void> | undefined;
  return {
    dialect: "postgres",
    sql: postgresSql(pool),
    pool,
    describe: `postgres ${where}`,
    close() {
      ended ??= pool.end();
      return ended;
    },
  };
}

/** The store's location without secrets: the SQLite file, or Postgres's host, port and database. */
export function describeDatabase(database: DatabaseSettings): string {
  return database.kind === "sqlite" ? `sqlite ${database.file}` : `postgres ${whereIs(database.url)}`;
}

/**
 * `host:port/database` of a connection URL, as pg reads it: a `host` parameter where the URL has none (a
 * Unix socket folder), 5432 and the user's own database by default.
 */
function whereIs(url: string): string {
  if (!URL.canParse(url)) return "(a DATABASE_URL that is not a URL)";
  const parsed = new URL(url);
  const host = parsed.hostname || parsed.searchParams.get("host") || "localhost";
  const port = parsed.port || parsed.searchParams.get("port") || "5432";
  const name = parsed.pathname.replace(/^\//, "");
  return `${host}:${port}/${name === "" ? "(the user's database)" : safeDecode(name)}`;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch (error) {
    if (error instanceof URIError) return text;
    throw error;
  }
}

/**
 * What went wrong, in words: a refused "localhost" is an AggregateError with an empty message (one refusal per
 * address tried), and an outage that came through a cluster primitive carries pg's own error as its cause.
 */
function reasonOf(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0)
    return [...new Set(error.errors.map(reasonOf))].join("; ");
  if (error instanceof AppError && error.cause !== undefined) return reasonOf(error.cause);
  if (error instanceof Error) {
    if (error.message !== "") return error.message;
    const code = (error as { code?: unknown }).code;
    return typeof code === "string" ? code : error.name;
  }
  return String(error);
}

/** pg's messages do not repeat the password today; this keeps it so should one ever quote the URL. */
function withoutPassword(message: string, url: string): string {
  if (!URL.canParse(url)) return message;
  const encoded = new URL(url).password;
  if (encoded === "") return message;
  return [encoded, safeDecode(encoded)].reduce((text, secret) => text.split(secret).join("***"), message);
}
