import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { DatabaseUnavailableError } from "../src/cluster/errors.ts";
import { createLogger } from "../src/logger.ts";
import { RetriedWrites } from "../src/store/write-retry.ts";

/** Refused writes (store/write-retry.ts): retried with backoff, in order, the newest per key; never thrown. */

let lines: { msg: string; key?: string }[] = [];
const log = () =>
  createLogger({ level: "info", destination: { write: (line: string) => lines.push(JSON.parse(line)) } });

/** A database that refuses writes while `locked`; `done` lists what landed, in order. */
function database() {
  const db = { locked: true, done: [] as string[] };
  const write = (what: string) => () => {
    if (db.locked) throw Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" });
    db.done.push(what);
  };
  return { db, write };
}

beforeEach(() => {
  lines = [];
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("RetriedWrites", () => {
  it("writes at once when it can", () => {
    const { db, write } = database();
    db.locked = false;
    const writes = new RetriedWrites(log());
    expect(writes.write("a", "record", write("a1"))).toBe(true);
    expect(db.done).toEqual(["a1"]);
    expect(writes.waiting).toBe(0);
  });

  it("keeps a refused write, retries it with backoff, and keeps later writes behind it in order", async () => {
    const { db, write } = database();
    const writes = new RetriedWrites(log());
    expect(writes.write("card:1", "card record", write("record"))).toBe(false);
    db.locked = false;
    // The database takes writes again, but the mark waits behind the record it depends on.
    expect(writes.write("gone:1", "gone mark", write("gone"))).toBe(false);
    expect(db.done).toEqual([]);
    await vi.advanceTimersByTimeAsync(100);
    expect(db.done).toEqual(["record", "gone"]);
    expect(writes.waiting).toBe(0);
    expect(lines.map((l) => l.msg)).toEqual([
      "card record not saved: the database refused; retrying",
      "card record saved after the database refused it",
      "gone mark saved after the database refused it",
    ]);
  });

  it("backs off while the lock lasts, and a newer write for a key replaces the waiting one", async () => {
    const { db, write } = database();
    const writes = new RetriedWrites(log());
    writes.write("k", "mark", write("old"));
    writes.write("k", "mark", write("new"));
    await vi.advanceTimersByTimeAsync(100 + 250 + 500 + 1000 + 2000 + 2000);
    expect(writes.waiting).toBe(1);
    expect(vi.getTimerCount()).toBe(1);
    db.locked = false;
    await vi.advanceTimersByTimeAsync(2000);
    expect(db.done).toEqual(["new"]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("does not retry what is not the database's refusal (a bug would fail the same way every time)", () => {
    const writes = new RetriedWrites(log());
    const written = writes.write("k", "mark", () => {
      throw new TypeError("cannot read properties of undefined");
    });
    expect(written).toBe(false);
    expect(writes.waiting).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    expect(lines.at(-1)?.msg).toBe("mark not saved");
  });

  it("on close tries once more, then drops what the database still refuses and says so", () => {
    const { db, write } = database();
    const writes = new RetriedWrites(log());
    writes.write("a", "card record", write("a"));
    writes.close();
    expect(db.done).toEqual([]);
    expect(writes.waiting).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    expect(lines.at(-1)?.msg).toBe("card record not saved before shutdown: the database still refused it");

    const again = new RetriedWrites(log());
    again.write("b", "card record", write("b"));
    db.locked = false;
    again.close();
    expect(db.done).toEqual(["b"]);
  });

  it("holds later writes behind one that is a promise, and retries a refused one (Postgres unreachable) first", async () => {
    const done: string[] = [];
    let down = true;
    const later = (what: string) => async () => {
      await Promise.resolve();
      if (down) throw new DatabaseUnavailableError(new Error("connect ECONNREFUSED"));
      done.push(what);
    };
    const writes = new RetriedWrites(log());
    expect(writes.write("card:1", "card record", later("record"))).toBe(false);
    // Queued while the first is in flight: written after it, never beside it.
    writes.write("gone:1", "gone mark", () => {
      done.push("gone");
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(done).toEqual([]);
    expect(writes.waiting).toBe(2);
    down = false;
    await vi.advanceTimersByTimeAsync(100);
    expect(done).toEqual(["record", "gone"]);
    expect(writes.waiting).toBe(0);
    expect(lines.map((l) => l.msg)).toEqual([
      "card record not saved: the database refused; retrying",
      "card record saved after the database refused it",
      "gone mark saved after the database refused it",
    ]);
  });

  it("writes in order behind a promise that lands, and close waits for the last try", async () => {
    const done: string[] = [];
    let release = () => {};
    const writes = new RetriedWrites(log());
    writes.write(
      "a",
      "first",
      () =>
        new Promise<void>((resolve) => {
          release = () => {
            done.push("a");
            resolve();
          };
        }),
    );
    writes.write("b", "second", async () => {
      done.push("b");
    });
    expect(done).toEqual([]);
    const closed = writes.close();
    release();
    await closed;
    expect(done).toEqual(["a", "b"]);
    expect(writes.waiting).toBe(0);
    expect(lines).toEqual([]);
  });
});
