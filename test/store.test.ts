import path from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { MIGRATIONS, openDatabase } from "../src/store/db.ts";
import { tempDir } from "./helpers/core.ts";

describe("SQLite store", () => {
  it("creates the file under DATA_DIR and records the schema version", () => {
    const file = path.join(tempDir(), "nested", "bot.sqlite");
    const db = openDatabase(file);
    expect(db.pragma("user_version", { simple: true })).toBe(MIGRATIONS.length);
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .pluck()
      .all();
    expect(tables).toEqual(expect.arrayContaining(["messages", "queued_messages", "runs", "sessions"]));
    db.close();
  });

  it("re-opens an existing file without re-running migrations and keeps its rows", () => {
    const file = path.join(tempDir(), "bot.sqlite");
    const first = openDatabase(file);
    first.prepare("INSERT INTO sessions VALUES ('s', 'web', 'none', NULL, '/w', 'u', 't', 1, 1)").run();
    first.close();
    const second = openDatabase(file);
    expect(second.prepare("SELECT COUNT(*) FROM sessions").pluck().get()).toBe(1);
    second.close();
    const raw = new Database(file);
    expect(raw.pragma("integrity_check", { simple: true })).toBe("ok");
    raw.close();
  });
});
