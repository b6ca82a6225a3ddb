import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { createBudgetShare } from "../../src/cluster/budget.ts";
import { createClaims } from "../../src/cluster/claims.ts";
import { DatabaseUnavailableError } from "../../src/cluster/errors.ts";
import { createHolderElection, type Demotion } from "../../src/cluster/holder.ts";
import { createLeases } from "../../src/cluster/leases.ts";
import { ensureClusterSchema } from "../../src/cluster/schema.ts";
import { createWakeups, notify, type Wake } from "../../src/cluster/wakeups.ts";
import { usePostgres } from "../helpers/postgres.ts";
import { until } from "../helpers/wait.ts";

/**
 * Postgres goes away for 10 s (the embedded server stopped, so connections are refused) and comes back on
 * the same port and data. Meanwhile every primitive answers callers with DatabaseUnavailableError (503)
 * instead of hanging or crashing; the long-connection holder steps down before its lease could pass to
 * anyone; afterwards everything works again in the same process, with no restart.
 */
const pg = usePostgres({ own: true });

describe("a Postgres outage", () => {
  it("gives callers a clear 503 error for 10 s and recovers without a restart", async () => {
    const server = pg().server;
    if (!server) throw new Error("needs its own server");
    const db = pg().pool({ connectTimeoutMs: 1_000 });
    await ensureClusterSchema(db);
    const leases = createLeases(db);
    const claims = createClaims(db);
    const budget = createBudgetShare({
      db,
      appId: "cli_a",
      member: "m1",
      calls: () => 0,
      heartbeatEveryMs: 500,
      ttlMs: 20_000,
    });
    const wakes: Wake[] = [];
    const wakeups = createWakeups({
      connectionString: pg().url,
      channel: pg().schema,
      pollIntervalMs: 500,
      initialBackoffMs: 100,
      maxBackoffMs: 1_000,
      connectTimeoutMs: 1_000,
    });
    wakeups.subscribe("ask", (wake) => {
      wakes.push(wake);
    });
    const demotions: Demotion[] = [];
    const fences: number[] = [];
    const holder = createHolderElection({
      leases,
      name: "long-connection:cli_a",
      instance: "m1",
      ttlMs: 3_000,
      renewEveryMs: 500,
      marginMs: 1_000,
      onElected: (lease) => {
        fences.push(lease.fence);
      },
      onDemoted: (reason) => {
        demotions.push(reason);
      },
    });
    try {
      wakeups.start();
      holder.start();
      await until(() => wakeups.listening() && holder.isHolder(), "listening and holding");
      expect(await budget.beat()).toMatchObject({ perSecond: 50, members: 1 });

      await server.stop();
      const downAt = Date.now();
      // Each caller learns at once that the database is away, with an error it can turn into a 503.
      for (const call of [
        () => leases.acquire("sweeper", "m1", 5_000),
        () => claims.claimEvent("ev_1", "m1"),
        () => claims.claimWork("m1", { kinds: ["event"], claimMs: 1_000 }),
        () => budget.beat(),
      ]) {
        const started = Date.now();
        const error = await call().then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
        expect(error).toBeInstanceOf(DatabaseUnavailableError);
        expect(error).toMatchObject({
          status: 503,
          message: expect.stringContaining("Postgres is unreachable"),
        });
        expect(Date.now() - started).toBeLessThan(1_500);
      }
      // The last share stays: the instance keeps sending what it can.
      expect(budget.share()).toMatchObject({ perSecond: 50 });
      await until(() => !wakeups.listening(), "the listener to notice");
      // The holder steps down within its TTL less the margin (2 s) of its last good renewal.
      await until(() => demotions.includes("unreachable"), "the holder to step down", 3_000);
      expect(holder.isHolder()).toBe(false);
      await sleep(Math.max(0, 10_000 - (Date.now() - downAt)));

      await server.start();
      await until(() => wakeups.listening(), "the listener to reconnect", 5_000, 50);
      await until(() => wakes.some((wake) => wake.reason === "reconnect"), "the catch-up wake-up");
      await until(() => holder.isHolder(), "the holder to hold again", 5_000, 50);
      // The lease ran out during the outage: holding again is a new term.
      expect(fences).toEqual([1, 2]);
      expect(await leases.acquire("sweeper", "m1", 5_000)).toMatchObject({ fence: 1 });
      expect(await claims.claimEvent("ev_1", "m1")).toEqual({ claimed: true });
      expect(await budget.beat()).toMatchObject({ perSecond: 50 });
      await notify(db, pg().schema, "ask", "9");
      await until(() => wakes.some((wake) => wake.reason === "notify" && wake.id === "9"), "a wake-up after");
    } finally {
      await holder.stop();
      await wakeups.close();
    }
  }, 60_000);
});
