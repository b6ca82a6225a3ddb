import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MIGRATIONS } from "../src/store/migrations.ts";
import { describeDatabase, type OpenedStore, openStore, StoreOpenError } from "../src/store/open.ts";
import { PG_MIGRATIONS } from "../src/store/pg-schema.ts";
import { StoreTokenRevocations } from "../src/store/token-revocations.ts";
import { freePort } from "./helpers/embedded-postgres.ts";
import { usePostgres } from "./helpers/postgres.ts";

/**
 * openStore (issue 27): the store DATABASE_URL names, or the SQLite file in DATA_DIR. Both against the real
 * thing: a file in a temp folder, and a Postgres server (usePostgres) whose tables it makes and which two
 * instances opened at once share. Where it cannot open, the error names host, port and database and never the
 * password.
 */

const pg = usePostgres();
const opened: OpenedStore[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

async function open(database: Parameters<typeof openStore>[0]["database"]): Promise<OpenedStore> {
  const store = await openStore({ database });
  opened.push(store);
  return store;
}

/** `url` with its password, port or database replaced. */
function changed(url: string, change: { password?: string; port?: number; database?: string }): string {
  const parsed = new URL(url);
  if (change.password !== undefined) parsed.password = change.password;
  if (change.port !== undefined) parsed.port = String(change.port);
  if (change.database !== undefined) parsed.pathname = `/${change.database}`;
  return parsed.toString();
}

async function openError(url: string): Promise<StoreOpenError> {
  const error = await openStore({ database: { kind: "postgres", leaseMs: 10_000, url } }).then(
    (store) => {
      opened.push(store);
      throw new Error("expected the store not to open");
    },
    (failure: unknown) => failure,
  );
  expect(error).toBeInstanceOf(StoreOpenError);
  return error as StoreOpenError;
}

describe("openStore on SQLite", () => {
  it("opens DATA_DIR/bot.sqlite as the bot always has: folder made, migrations run, a second handle sees the rows", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-store-open-"));
    dirs.push(dir);
    const file = path.join(dir, "data", "bot.sqlite");
    const store = await open({ kind: "sqlite", file });
    expect(store.dialect).toBe("sqlite");
    expect(store.pool).toBeUndefined();
    expect(store.describe).toBe(`sqlite ${file}`);
    expect(store.file?.pragma("user_version", { simple: true })).toBe(MIGRATIONS.length);
    expect(store.file?.pragma("journal_mode", { simple: true })).toBe("wal");
    await new StoreTokenRevocations(store.sql).revoke("ou_a", 1_000);

    const again = await open({ kind: "sqlite", file });
    expect(await new StoreTokenRevocations(again.sql).revocation("ou_a")).toEqual({
      notBefore: 1_001,
      generation: 1,
    });
    await store.close();
    await store.close();
    expect(store.file?.open).toBe(false);
  });
});

describe("openStore on Postgres", () => {
  it("makes the cluster's and the store's tables, and two instances opened at once share one database", async () => {
    const { url } = pg();
    const [first, second] = await Promise.all([
      open({ kind: "postgres", leaseMs: 10_000, url }),
      open({ kind: "postgres", leaseMs: 10_000, url }),
    ]);
    if (!first || !second) throw new Error("two stores expected");
    expect(first.dialect).toBe("postgres");
    expect(first.file).toBeUndefined();
    const migrated = await first.pool?.query<{ n: number }>("SELECT count(*) AS n FROM store_migrations");
    expect(migrated?.rows[0]?.n).toBe(PG_MIGRATIONS.length);
    const leases = await first.pool?.query("SELECT * FROM cluster_leases");
    expect(leases?.rows).toEqual([]);

    await new StoreTokenRevocations(first.sql).revoke("ou_a", 1_000);
    // bigint milliseconds come back as numbers (the store's types are on the pool).
    expect(await new StoreTokenRevocations(second.sql).revocation("ou_a")).toEqual({
      notBefore: 1_001,
      generation: 1,
    });
    // A third start finds the tables made and leaves them as they are.
    const third = await open({ kind: "postgres", leaseMs: 10_000, url });
    expect(await new StoreTokenRevocations(third.sql).generation("ou_a")).toBe(1);
  });

  it("names host, port and database for the banner, never the password", async () => {
    const url = changed(pg().url, { password: "hunter2-very-secret" });
    const store = await open({ kind: "postgres", leaseMs: 10_000, url: pg().url });
    const { hostname, port, pathname } = new URL(pg().url);
    expect(store.describe).toBe(`postgres ${hostname}:${port || "5432"}${pathname}`);
    expect(describeDatabase({ kind: "postgres", leaseMs: 10_000, url })).not.toContain("hunter2");
    expect(
      describeDatabase({ kind: "postgres", leaseMs: 10_000, url: "postgresql://bot:pw@db.internal/bot" }),
    ).toBe("postgres db.internal:5432/bot");
    expect(
      describeDatabase({
        kind: "postgres",
        leaseMs: 10_000,
        url: "postgres:///bot?host=/var/run/postgresql",
      }),
    ).toBe("postgres /var/run/postgresql:5432/bot");
    expect(describeDatabase({ kind: "sqlite", file: "data/bot.sqlite" })).toBe("sqlite data/bot.sqlite");
  });

  it("says at once that Postgres is unreachable when nothing listens, with where it looked and no password", async () => {
    const port = await freePort();
    const url = `postgres://bot:hunter2-very-secret@127.0.0.1:${port}/bot`;
    const startedAt = Date.now();
    const error = await openError(url);
    expect(Date.now() - startedAt).toBeLessThan(2_000);
    expect(error.message).toMatch(new RegExp(`^Postgres at 127\\.0\\.0\\.1:${port}/bot is unreachable: `));
    expect(error.message).toContain("ECONNREFUSED");
    expect(error.message).not.toContain("hunter2");
    expect(error.status).toBe(503);
  });

  it("says the server refused when it answers but has no such database, without the password", async () => {
    const url = changed(pg().url, { database: "no_such_database" });
    const error = await openError(url);
    const { hostname, port, password } = new URL(url);
    expect(error.message).toContain(
      `Postgres at ${hostname}:${port}/no_such_database refused the connection: `,
    );
    expect(error.message).toContain('database "no_such_database" does not exist');
    if (password !== "") expect(error.message).not.toContain(password);
  });

  it("refuses a database where another application already has a table of the store's name", async () => {
    const { url } = pg();
    // Someone else's `asks`: the baseline would build on a table it did not make, so the start stops instead.
    await pg().pool().query("CREATE TABLE asks (id integer PRIMARY KEY)");
    const error = await openError(url);
    expect(error.message).toMatch(/^Postgres at \S+ refused the bot's tables: /);
    expect(error.message).toContain('relation "asks" already exists');
    // Nothing half-made stays behind: the migration's transaction rolled back.
    const left = await pg()
      .pool()
      .query("SELECT to_regclass('store_migrations') AS migrations, to_regclass('sessions') AS sessions");
    expect(left.rows[0]).toEqual({ migrations: null, sessions: null });
  });

  it("closes its pool once however often close is called", async () => {
    const store = await open({ kind: "postgres", leaseMs: 10_000, url: pg().url });
    await Promise.all([store.close(), store.close()]);
    await store.close();
    await expect(store.pool?.query("SELECT 1")).rejects.toThrow(/after calling end/);
  });
});
