import Database from "better-sqlite3";

/** A second connection to the SQLite file, as another process would hold it: the write lock until `release()`. */
export function holdWriteLock(file: string): { release(): void } {
  const other = new Database(file);
  other.exec("BEGIN IMMEDIATE");
  return {
    release() {
      other.exec("COMMIT");
      other.close();
    },
  };
}
