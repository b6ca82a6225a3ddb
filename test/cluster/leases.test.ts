import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { StaleFenceError } from "../../src/cluster/errors.ts";
import { createLeases } from "../../src/cluster/leases.ts";
import { ensureClusterSchema } from "../../src/cluster/schema.ts";
import { usePostgres } from "../helpers/postgres.ts";

/**
 * Leases on a real Postgres. Expiry is on the database's clock, so these tests wait in real time; the TTLs
 * are a few hundred milliseconds to keep that short.
 */
const pg = usePostgres();

async function setup() {
  const db = pg().pool();
  await ensureClusterSchema(db);
  await db.query("CREATE TABLE notes (fence bigint NOT NULL, holder text NOT NULL, body text NOT NULL)");
  return { db, leases: createLeases(db) };
}

describe("leases", () => {
  it("gives a free lease to its first taker and refuses a second while it is live", async () => {
    const { leases } = await setup();
    const a = await leases.acquire("sweeper", "a", 5_000);
    expect(a).toMatchObject({ name: "sweeper", holder: "a", fence: 1 });
    expect(await leases.acquire("sweeper", "b", 5_000)).toBeUndefined();
    expect(await leases.current("sweeper")).toMatchObject({ holder: "a", fence: 1 });
  });

  it("lets another instance take over once the lease expires, with a higher fence", async () => {
    const { leases } = await setup();
    await leases.acquire("sweeper", "a", 200);
    expect(await leases.acquire("sweeper", "b", 5_000)).toBeUndefined();
    await sleep(300);
    expect(await leases.current("sweeper")).toBeUndefined();
    expect(await leases.acquire("sweeper", "b", 5_000)).toMatchObject({ holder: "b", fence: 2 });
  });

  it("keeps the fence when the holder renews, and extends the expiry on the database clock", async () => {
    const { db, leases } = await setup();
    const first = await leases.acquire("run:1", "a", 400);
    if (!first) throw new Error("not acquired");
    for (let i = 0; i < 4; i++) {
      await sleep(200);
      const renewed = await leases.renew(first, 400);
      expect(renewed?.fence).toBe(1);
    }
    // 800 ms after the first acquire with a 400 ms TTL: alive only because of the renewals.
    expect(await leases.acquire("run:1", "b", 400)).toBeUndefined();
    const row = await db.query<{ left_ms: number }>(
      "SELECT extract(epoch FROM expires_at - now()) * 1000 AS left_ms FROM cluster_leases",
    );
    expect(Number(row.rows[0]?.left_ms)).toBeGreaterThan(100);
    // Acquiring again while holding it is a renewal too, not a new term.
    expect(await leases.acquire("run:1", "a", 400)).toMatchObject({ fence: 1 });
  });

  it("does not renew a lapsed lease: coming back after expiry is a new term with a new fence", async () => {
    const { leases } = await setup();
    const first = await leases.acquire("run:1", "a", 150);
    if (!first) throw new Error("not acquired");
    await sleep(250);
    expect(await leases.renew(first, 1_000)).toBeUndefined();
    expect(await leases.acquire("run:1", "a", 1_000)).toMatchObject({ holder: "a", fence: 2 });
  });

  it("hands the lease on at once on release, and the fence keeps growing", async () => {
    const { leases } = await setup();
    const a = await leases.acquire("holder", "a", 60_000);
    if (!a) throw new Error("not acquired");
    expect(await leases.release(a)).toBe(true);
    expect(await leases.release(a)).toBe(false);
    const b = await leases.acquire("holder", "b", 60_000);
    expect(b?.fence).toBe(2);
  });

  it("gives a contested free lease to exactly one of many instances on two pools", async () => {
    const { leases } = await setup();
    const other = createLeases(pg().pool());
    const attempts = Array.from({ length: 12 }, (_, i) =>
      (i % 2 === 0 ? leases : other).acquire("holder", `i${i}`, 10_000),
    );
    const won = (await Promise.all(attempts)).filter((lease) => lease !== undefined);
    expect(won).toHaveLength(1);
    expect(won[0]?.fence).toBe(1);
  });
});

describe("fenced writes", () => {
  it("refuse a split brain: a holder paused past its lease cannot write when it resumes", async () => {
    const { db, leases } = await setup();
    const other = createLeases(pg().pool());
    const a = await leases.acquire("run:7", "a", 200);
    if (!a) throw new Error("not acquired");
    await leases.fenced(a, (client) =>
      client.query("INSERT INTO notes VALUES ($1, 'a', 'before the pause')", [a.fence]),
    );
    // "a" is paused (no renewals) past its TTL; "b" takes over.
    await sleep(300);
    const b = await other.acquire("run:7", "b", 10_000);
    if (!b) throw new Error("takeover failed");
    await other.fenced(b, (client) => client.query("INSERT INTO notes VALUES ($1, 'b', 'after')", [b.fence]));
    // "a" resumes and writes as if nothing happened.
    let ran = false;
    const stale = leases.fenced(a, async (client) => {
      ran = true;
      await client.query("INSERT INTO notes VALUES ($1, 'a', 'stale')", [a.fence]);
    });
    await expect(stale).rejects.toBeInstanceOf(StaleFenceError);
    await expect(stale).rejects.toMatchObject({ code: "CONFLICT", lease: "run:7", fence: 1 });
    expect(ran).toBe(false);
    const notes = await db.query("SELECT holder, body FROM notes ORDER BY fence, body");
    expect(notes.rows).toEqual([
      { holder: "a", body: "before the pause" },
      { holder: "b", body: "after" },
    ]);
  });

  it("refuse a write after expiry even when nobody took the lease over", async () => {
    const { leases } = await setup();
    const a = await leases.acquire("run:8", "a", 150);
    if (!a) throw new Error("not acquired");
    await sleep(250);
    await expect(leases.fenced(a, async () => "written")).rejects.toBeInstanceOf(StaleFenceError);
  });

  it("hold a takeover back until the write in progress commits, so none interleaves with it", async () => {
    const { leases } = await setup();
    const other = createLeases(pg().pool());
    const a = await leases.acquire("run:9", "a", 300);
    if (!a) throw new Error("not acquired");
    const order: string[] = [];
    const writing = leases.fenced(a, async (client) => {
      await sleep(500); // the lease expires while the checked write is still open
      await client.query("SELECT 1");
      order.push("a committed");
    });
    await sleep(350);
    const takeover = other.acquire("run:9", "b", 5_000).then((lease) => {
      order.push(`b acquired ${lease?.fence}`);
    });
    await Promise.all([writing, takeover]);
    expect(order).toEqual(["a committed", "b acquired 2"]);
  });

  it("reject a bad TTL before touching the database", async () => {
    const { leases } = await setup();
    await expect(leases.acquire("x", "a", 0)).rejects.toBeInstanceOf(RangeError);
    await expect(leases.acquire("x", "a", Number.NaN)).rejects.toBeInstanceOf(RangeError);
  });
});

describe("cluster schema", () => {
  it("is created once when several instances start at the same moment", async () => {
    const pools = [pg().pool(), pg().pool(), pg().pool()];
    await Promise.all(pools.map((db) => ensureClusterSchema(db)));
    await Promise.all(pools.map((db) => ensureClusterSchema(db)));
    const versions = await pools[0]?.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM cluster_migrations",
    );
    expect(versions?.rows[0]?.n).toBeGreaterThanOrEqual(5);
    const leases = createLeases(pools[1] as NonNullable<(typeof pools)[1]>);
    expect(await leases.acquire("x", "a", 1_000)).toMatchObject({ fence: 1 });
  });
});
