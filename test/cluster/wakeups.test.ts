import { afterEach, describe, expect, it } from "vitest";
import { query } from "../../src/cluster/pool.ts";
import { createWakeups, notify, type Wake, type Wakeups } from "../../src/cluster/wakeups.ts";
import { usePostgres } from "../helpers/postgres.ts";
import { until } from "../helpers/wait.ts";

/**
 * Wake-ups on a real Postgres: a notification from another instance's pool reaches the listener, the
 * receiver re-reads the row, and a listener whose connection the server kills reconnects by itself and
 * catches up on what it missed.
 */
const pg = usePostgres();
const opened: Wakeups[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((wakeups) => wakeups.close()));
});

async function setup(pollIntervalMs = 60_000, initialBackoffMs = 50) {
  const db = pg().pool();
  await db.query("CREATE TABLE asks (id int PRIMARY KEY, state text NOT NULL)");
  const channel = pg().schema;
  const wakeups = createWakeups({ connectionString: pg().url, channel, pollIntervalMs, initialBackoffMs });
  opened.push(wakeups);
  const seen: Wake[] = [];
  /** What the receiver read back from the rows, as a receiver should (ids only on the wire). */
  const states: string[] = [];
  wakeups.subscribe("ask", async (wake) => {
    seen.push(wake);
    const rows =
      wake.reason === "notify"
        ? await query<{ state: string }>(db, "SELECT state FROM asks WHERE id = $1", [Number(wake.id)])
        : await query<{ state: string }>(db, "SELECT state FROM asks WHERE state = 'settled' ORDER BY id");
    states.push(...rows.rows.map((row) => row.state));
  });
  wakeups.start();
  await until(() => wakeups.listening(), "the listener to connect");
  return { db, channel, wakeups, seen, states };
}

describe("wake-ups", () => {
  it("wake the waiting instance with the id, after the notifying transaction committed", async () => {
    const { channel, seen, states } = await setup();
    const other = pg().pool();
    const client = await other.connect();
    await client.query("BEGIN");
    await client.query("INSERT INTO asks VALUES (42, 'settled')");
    await notify(client, channel, "ask", "42");
    await client.query("COMMIT");
    client.release();
    await until(() => states.length > 0, "the wake-up");
    expect(seen).toEqual([{ reason: "notify", id: "42" }]);
    expect(states).toEqual(["settled"]);
  });

  it("send nothing for a transaction that rolled back", async () => {
    const { channel, seen } = await setup();
    const client = await pg().pool().connect();
    await client.query("BEGIN");
    await notify(client, channel, "ask", "7");
    await client.query("ROLLBACK");
    await notify(client, channel, "ask", "8");
    client.release();
    await until(() => seen.length > 0, "the second wake-up");
    expect(seen).toEqual([{ reason: "notify", id: "8" }]);
  });

  it("still see a change that sent no notification within one poll interval", async () => {
    const { db, seen, states } = await setup(300);
    await db.query("INSERT INTO asks VALUES (1, 'settled')");
    const started = Date.now();
    await until(() => states.includes("settled"), "the poll to find the row", 2_000);
    expect(Date.now() - started).toBeLessThan(800);
    expect(seen.some((wake) => wake.reason === "poll")).toBe(true);
  });

  it("reconnect after the server drops the listening connection, and catch up on what was missed", async () => {
    const { db, channel, wakeups, seen, states } = await setup(60_000, 300);
    const pid = wakeups.backendPid();
    expect(pid).toBeTypeOf("number");
    await db.query("SELECT pg_terminate_backend($1)", [pid]);
    await until(() => !wakeups.listening(), "the listener to notice");
    // Written while nobody listens: the notification is lost, the reconnect wake-up finds the row.
    await db.query("INSERT INTO asks VALUES (5, 'settled')");
    await notify(db, channel, "ask", "5");
    await until(() => wakeups.listening(), "the listener to reconnect", 5_000);
    expect(wakeups.backendPid()).not.toBe(pid);
    await until(() => seen.some((wake) => wake.reason === "reconnect"), "the reconnect wake-up");
    await until(() => states.includes("settled"), "the missed row");
    await notify(db, channel, "ask", "5");
    await until(
      () => seen.some((wake) => wake.reason === "notify" && wake.id === "5"),
      "a wake-up after recovery",
    );
  });

  it("ignore foreign payloads on the channel and keep going after a handler throws", async () => {
    const { db, channel, wakeups, seen } = await setup();
    let thrown = 0;
    wakeups.subscribe("ask", () => {
      thrown += 1;
      throw new Error("handler bug");
    });
    await db.query("SELECT pg_notify($1, 'no colon'), pg_notify($1, ':1'), pg_notify($1, 'BAD TOPIC:1')", [
      channel,
    ]);
    await notify(db, channel, "ask", "1");
    await notify(db, channel, "ask", "2");
    await until(() => seen.length === 2, "both wake-ups");
    expect(seen).toEqual([
      { reason: "notify", id: "1" },
      { reason: "notify", id: "2" },
    ]);
    expect(thrown).toBe(2);
  });

  it("refuse a bad channel, topic or id before any query", async () => {
    const db = pg().pool();
    expect(() => createWakeups({ connectionString: pg().url, channel: "x; DROP TABLE asks" })).toThrow(
      RangeError,
    );
    await expect(notify(db, "ok", "Ask", "1")).rejects.toBeInstanceOf(RangeError);
    await expect(notify(db, "ok", "ask", "a\nb")).rejects.toBeInstanceOf(RangeError);
    await expect(notify(db, "ok", "ask", "x".repeat(513))).rejects.toBeInstanceOf(RangeError);
  });
});
