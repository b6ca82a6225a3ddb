import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach } from "vitest";
import { type Db, openDatabase } from "../../src/store/db.ts";
import { ensureStoreSchema, STORE_PG_TYPES } from "../../src/store/pg-schema.ts";
import { postgresSql, type StoreSql, sqliteSql } from "../../src/store/sql.ts";
import { usePostgres } from "./postgres.ts";

export type Dialect = "sqlite" | "postgres";

/**
 * For the store's dual-dialect suites: `handles(dialect, count)` opens `count` handles on one fresh database of
 * that dialect — several connections to one SQLite file, several pools on one Postgres schema (the schema
 * applied) — as several instances would hold them; `files(count)` the raw SQLite connections. Everything is
 * closed and deleted after each test.
 */
export function useStoreHandles(): {
  handles(dialect: Dialect, count?: number): Promise<StoreSql[]>;
  files(count: number): Db[];
} {
  const pg = usePostgres();
  const dirs: string[] = [];
  const closers: (() => void)[] = [];
  afterEach(() => {
    for (const close of closers.splice(0)) close();
    for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });
  const files = (count: number): Db[] => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-store-rows-"));
    dirs.push(dir);
    return Array.from({ length: count }, () => {
      const db = openDatabase(path.join(dir, "bot.sqlite"));
      closers.push(() => db.close());
      return db;
    });
  };
  return {
    files,
    async handles(dialect, count = 1) {
      if (dialect === "sqlite") return files(count).map((db) => sqliteSql(db));
      const first = pg().pool({ types: STORE_PG_TYPES });
      await ensureStoreSchema(first);
      return [
        postgresSql(first),
        ...Array.from({ length: count - 1 }, () => postgresSql(pg().pool({ types: STORE_PG_TYPES }))),
      ];
    },
  };
}
