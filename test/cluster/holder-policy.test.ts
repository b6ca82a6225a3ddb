import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { DatabaseUnavailableError } from "../../src/cluster/errors.ts";
import { createHolderElection, type Demotion } from "../../src/cluster/holder.ts";
import type { Lease, Leases } from "../../src/cluster/leases.ts";

/**
 * The election's timing on fake time, over a Leases port whose answers the test holds back: what a real
 * Postgres cannot be made to do on cue (answer a renewal only after the holder's deadline). The real
 * database's behaviour is in holder.test.ts and outage.test.ts.
 */
interface Pending {
  kind: "acquire" | "renew";
  resolve: (lease: Lease | undefined) => void;
  reject: (error: unknown) => void;
}

function heldBack() {
  const pending: Pending[] = [];
  const call = (kind: Pending["kind"]) =>
    new Promise<Lease | undefined>((resolve, reject) => pending.push({ kind, resolve, reject }));
  const leases: Leases = {
    acquire: () => call("acquire"),
    renew: () => call("renew"),
    release: async () => true,
    current: async () => undefined,
    fenced: () => Promise.reject(new Error("not used")),
  };
  const next = (kind: Pending["kind"]) => {
    const found = pending.shift();
    if (found?.kind !== kind) throw new Error(`expected a pending ${kind}, got ${found?.kind ?? "nothing"}`);
    return found;
  };
  return { leases, next, pending };
}

const lease = (fence: number): Lease => ({
  name: "long-connection:a",
  holder: "me",
  fence,
  expiresAt: new Date(),
});

describe("holder election timing", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function elect() {
    const fake = heldBack();
    const events: string[] = [];
    const election = createHolderElection({
      leases: fake.leases,
      name: "long-connection:a",
      instance: "me",
      now: () => Date.now(),
      onElected: (won) => {
        events.push(`elected ${won.fence}`);
      },
      onDemoted: (reason: Demotion) => {
        events.push(`demoted ${reason}`);
      },
    });
    election.start();
    return { ...fake, events, election };
  }

  it("steps down 8 s after the last renewal was sent when the database stops answering", async () => {
    const { next, events, election } = elect();
    next("acquire").resolve(lease(1));
    await vi.advanceTimersByTimeAsync(0);
    expect(events).toEqual(["elected 1"]);
    for (let i = 0; i < 3; i++) {
      await vi.advanceTimersByTimeAsync(2_000);
      next("renew").reject(new DatabaseUnavailableError(new Error("ECONNREFUSED")));
    }
    await vi.advanceTimersByTimeAsync(1_999);
    expect(election.isHolder()).toBe(true);
    await vi.advanceTimersByTimeAsync(1);
    expect(events).toEqual(["elected 1", "demoted unreachable"]);
    expect(election.isHolder()).toBe(false);
  });

  it("does not become holder again from a renewal that answers after its deadline", async () => {
    const { next, events, election } = elect();
    next("acquire").resolve(lease(1));
    await vi.advanceTimersByTimeAsync(2_000);
    const slow = next("renew");
    await vi.advanceTimersByTimeAsync(6_000);
    expect(events).toEqual(["elected 1", "demoted unreachable"]);
    slow.resolve(lease(1));
    await vi.advanceTimersByTimeAsync(0);
    expect(election.isHolder()).toBe(false);
    // The next round acquires afresh, and only then is it holder again, through onElected.
    await vi.advanceTimersByTimeAsync(2_000);
    next("acquire").resolve(lease(2));
    await vi.advanceTimersByTimeAsync(0);
    expect(events).toEqual(["elected 1", "demoted unreachable", "elected 2"]);
    expect(election.lease()?.fence).toBe(2);
  });

  it("steps down at once when a renewal finds the lease taken", async () => {
    const { next, events } = elect();
    next("acquire").resolve(lease(1));
    await vi.advanceTimersByTimeAsync(2_000);
    next("renew").resolve(undefined);
    await vi.advanceTimersByTimeAsync(0);
    expect(events).toEqual(["elected 1", "demoted lost"]);
  });

  it("refuses numbers that leave no room for two renewals inside the TTL", () => {
    const { leases } = heldBack();
    const options = { leases, name: "x", instance: "me", onElected: () => {}, onDemoted: () => {} };
    expect(() => createHolderElection({ ...options, ttlMs: 5_000, renewEveryMs: 2_000 })).toThrow(RangeError);
  });
});
