import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
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
  it("writes at once when it can", async () => {
    const { db, write } = database();
    db.locked = false;
    const writes = new RetriedWrites(log());
    expect(await writes.write("a", "record", write("a1"))).toBe(true);
    expect(db.done).toEqual(["a1"]);
    expect(writes.waiting).toBe(0);
  });

  it("keeps a refused write, retries it with backoff, and keeps later writes behind it in order", async () => {
    const { db, write } = database();
    const writes = new RetriedWrites(log());
    const record = writes.write("card:1", "card record", write("record"));
    await writes.flushed();
    db.locked = false;
    // The database takes writes again, but the mark waits behind the record it depends on.
    const mark = writes.write("gone:1", "gone mark", write("gone"));
    await writes.flushed();
    expect(db.done).toEqual([]);
    await vi.advanceTimersByTimeAsync(100);
    expect(db.done).toEqual(["record", "gone"]);
    expect(writes.waiting).toBe(0);
    expect([await record, await mark]).toEqual([false, false]);
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

  it("does not retry what is not the database's refusal (a bug would fail the same way every time)", async () => {
    const writes = new RetriedWrites(log());
    const written = await writes.write("k", "mark", () => {
      throw new TypeError("cannot read properties of undefined");
    });
    expect(written).toBe(false);
    expect(writes.waiting).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    expect(lines.at(-1)?.msg).toBe("mark not saved");
  });

  it("on close tries once more, then drops what the database still refuses and says so", async () => {
    const { db, write } = database();
    const writes = new RetriedWrites(log());
    const dropped = writes.write("a", "card record", write("a"));
    await writes.close();
    expect(await dropped).toBe(false);
    expect(db.done).toEqual([]);
    expect(writes.waiting).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    expect(lines.at(-1)?.msg).toBe("card record not saved before shutdown: the database still refused it");

    const again = new RetriedWrites(log());
    again.write("b", "card record", write("b"));
    await again.flushed();
    db.locked = false;
    await again.close();
    expect(db.done).toEqual(["b"]);
  });

  it("writes one at a time in the order given, so a slow write is never overtaken (a pool has many connections)", async () => {
    vi.useRealTimers();
    const landed: string[] = [];
    const slow = (what: string, ms: number) => () =>
      new Promise<void>((resolve) =>
        setTimeout(() => {
          landed.push(what);
          resolve();
        }, ms),
      );
    const writes = new RetriedWrites(log());
    writes.write("run:1", "run state", slow("first state", 30));
    writes.write("run:2", "run state", slow("other run", 1));
    // The first state is being written: the newer ones follow it in run:1's place, the last replacing the
    // one before it, and never land before it.
    writes.write("run:1", "run state", slow("second state", 1));
    writes.write("run:1", "run state", slow("third state", 1));
    await writes.flushed();
    expect(landed).toEqual(["first state", "third state", "other run"]);
  });
});
