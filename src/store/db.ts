import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { DatabaseUnavailableError } from "../cluster/errors.ts";

import { MIGRATIONS } from "./migrations.ts";

export type Db = Database.Database;

/**
 * How long a write waits for a lock another process holds. Every write runs on the event loop, so 5 s here
 * froze the whole server 5 s per write; a refused write is retried off the hot path instead (the runner's
 * retry, Feishu's redelivery of an event we could not record).
 */
export const BUSY_TIMEOUT_MS = 100;

export function openDatabase(file: string): Db {
  if (file !== ":memory:") fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("foreign_keys = ON");
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  migrate(db);
  return db;
}

export function migrate(db: Db): void {
  const current = db.pragma("user_version", { simple: true }) as number;
  for (let version = current; version < MIGRATIONS.length; version += 1) {
    const sql = MIGRATIONS[version] ?? "";
    db.transaction(() => {
      db.exec(sql);
      db.pragma(`user_version = ${version + 1}`);
    })();
  }
}

/**
 * The database refused: SQLite busy, locked, full, read-only or I/O, or Postgres unreachable
 * (DatabaseUnavailableError, 503). The data is fine, the write did not happen.
 */
export function isStorageError(error: unknown): boolean {
  if (error instanceof DatabaseUnavailableError) return true;
  const code = error instanceof Error ? (error as { code?: unknown }).code : undefined;
  return typeof code === "string" && code.startsWith("SQLITE_");
}
