import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { ConfigError } from "../errors.ts";

/**
 * One process per DATA_DIR. Two would both resume the same runs and answer each other's users with 问题已失效.
 *
 * The lock is an OS lock, not a pid file: SQLite's file lock on `DATA_DIR/bot.lock`, held in exclusive
 * locking mode for the life of the process. The kernel drops it when the process dies however it dies
 * (SIGKILL, OOM), so a crash never blocks the restart, and a recycled pid cannot fake a holder. The pid
 * in `bot.pid` is only there to name the holder in the refusal.
 */
export interface DataDirLock {
  release(): void;
}

export class DataDirLockedError extends ConfigError {
  readonly holderPid: number | undefined;

  constructor(dataDir: string, holderPid: number | undefined) {
    const who = holderPid === undefined ? "another process" : `process ${holderPid}`;
    super(`DATA_DIR ${dataDir} is in use by ${who}; stop it first, or give this instance its own DATA_DIR`);
    this.name = "DataDirLockedError";
    this.holderPid = holderPid;
  }
}

export function lockDataDir(dataDir: string, pid: number = process.pid): DataDirLock {
  fs.mkdirSync(dataDir, { recursive: true });
  const pidFile = path.join(dataDir, "bot.pid");
  // timeout 0: a held lock answers SQLITE_BUSY at once instead of after better-sqlite3's default 5 s.
  const db = new Database(path.join(dataDir, "bot.lock"), { timeout: 0 });
  try {
    db.pragma("locking_mode = EXCLUSIVE");
    // The first write takes the EXCLUSIVE lock; in this locking mode it is kept after COMMIT until close().
    db.exec("CREATE TABLE IF NOT EXISTS holder (pid INTEGER NOT NULL)");
    db.exec("BEGIN EXCLUSIVE; DELETE FROM holder; COMMIT");
  } catch (error) {
    db.close();
    if (isBusy(error)) throw new DataDirLockedError(dataDir, readPid(pidFile));
    throw error;
  }
  fs.writeFileSync(pidFile, `${pid}\n`);
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      if (readPid(pidFile) === pid) fs.rmSync(pidFile, { force: true });
      db.close();
    },
  };
}

function isBusy(error: unknown): boolean {
  const code = error instanceof Error ? (error as { code?: unknown }).code : undefined;
  return code === "SQLITE_BUSY" || code === "SQLITE_LOCKED";
}

function readPid(file: string): number | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, "utf8").trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  return /^\d+$/.test(text) ? Number(text) : undefined;
}
