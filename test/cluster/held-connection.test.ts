import { performance } from "node:perf_hooks";
import { describe, expect, it } from "vitest";
import { createLeases } from "../../src/cluster/leases.ts";
import type { Db } from "../../src/cluster/pool.ts";
import { ensureClusterSchema } from "../../src/cluster/schema.ts";
import type { FeishuCluster } from "../../src/feishu/cluster-options.ts";
import { leaseName } from "../../src/feishu/held-connection.ts";
import type { Emulator } from "../../src/local/emulator/index.ts";
import { cardReplyingTo, type FeishuRig, startFeishuRig } from "../helpers/feishu.ts";
import { ALICE, longConnectionFixtures, waitFor } from "../helpers/long-connection.ts";
import { usePostgres } from "../helpers/postgres.ts";
import { until } from "../helpers/wait.ts";

/**
 * One long-connection holder per app (issue 27), end to end: two bots (each its own SQLite store, as the
 * store is not on Postgres yet) on one real Postgres, the real WSClient against the emulator's long-connection
 * server. The lease is short (TTL 1 s, renewed every 200 ms) so a takeover fits a test; the budget's windows
 * too (a newcomer's minute share waits out a whole "minute" of 3 s: cluster-budget.ts).
 */
const pg = usePostgres();
const { emulator, cleanup } = longConnectionFixtures();
const HOLDER = { ttlMs: 1_000, renewEveryMs: 200, marginMs: 200 };
const BUDGET = { heartbeatEveryMs: 100, ttlMs: 400, windows: { secondMs: 1_000, minuteMs: 3_000 } };

async function instance(emu: Emulator, name: string, db: Db = pg().pool()) {
  const cluster: FeishuCluster = { db, instance: name, holder: HOLDER, budget: BUDGET };
  const rig = await startFeishuRig({ emulator: emu, transport: "ws", cluster });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await rig.stop();
  };
  cleanup.push(stop);
  return { name, rig, stop };
}

/** The most long connections the emulator had open at once, from its open and close records. */
function mostOpenAtOnce(emu: Emulator): number {
  let open = 0;
  let most = 0;
  for (const frame of emu.longConnection.frames) {
    if (frame.kind === "open") open += 1;
    // An error is recorded as a close too, then the close itself: count each connection once.
    else if (frame.kind === "close" && frame.detail === undefined) open -= 1;
    most = Math.max(most, open);
  }
  return most;
}

/** Cards the bot replied to a message with: one per event handled, whichever instance handled it. */
function cardsFor(emu: Emulator, userMessageId: string): number {
  return emu.messages
    .listMessages()
    .filter((m) => m.parentId === userMessageId && m.msgType === "interactive" && m.senderType === "app")
    .length;
}

async function holderOf(emu: Emulator): Promise<string | undefined> {
  return (await createLeases(pg().pool()).current(leaseName(emu.appId)))?.holder;
}

async function handled(rig: FeishuRig, text: string) {
  const userMessageId = await rig.send({ chatType: "p2p", senderOpenId: ALICE, text });
  await rig.progressCard(userMessageId);
  return userMessageId;
}

describe("one long-connection holder per app", () => {
  it("opens one connection for two instances, and the standby takes over when the holder stops", async () => {
    await ensureClusterSchema(pg().pool());
    const emu = await emulator();
    const both = [await instance(emu, "a"), await instance(emu, "b")];
    await waitFor(() => emu.longConnection.online === 1);
    const holderName = await holderOf(emu);
    const holder = both.find((one) => one.name === holderName);
    const standby = both.find((one) => one.name !== holderName);
    if (!holder || !standby) throw new Error(`no holder among a and b: ${holderName}`);

    const before = await Promise.all([1, 2, 3].map((n) => handled(holder.rig, `第 ${n} 条`)));
    // The standby stays off while the holder holds, renewal after renewal.
    await new Promise((resolve) => setTimeout(resolve, HOLDER.ttlMs * 2));
    expect(emu.longConnection.online).toBe(1);
    expect(await holderOf(emu)).toBe(holder.name);

    // A deploy stops the holder: it closes, then releases, and the standby opens at its next try.
    const stoppedAt = performance.now();
    await holder.stop();
    await waitFor(() => emu.longConnection.online === 1);
    const tookOverMs = performance.now() - stoppedAt;
    expect(await holderOf(emu)).toBe(standby.name);
    expect(tookOverMs).toBeLessThan(HOLDER.renewEveryMs + 2_000);

    const after = await Promise.all([4, 5, 6].map((n) => handled(standby.rig, `第 ${n} 条`)));
    // Exactly one handler ran per event: one card each, none twice, and never two connections at once.
    for (const id of [...before, ...after]) expect(cardsFor(emu, id)).toBe(1);
    expect(mostOpenAtOnce(emu)).toBe(1);
    expect(cardReplyingTo(emu, after[0] ?? "")).toMatch(/^om_/);
  }, 40_000);

  it("a holder cut off from Postgres closes its connection before the standby opens its own", async () => {
    await ensureClusterSchema(pg().pool());
    const emu = await emulator();
    // The first instance is the holder: the second starts once it holds.
    const ownDb = pg().pool();
    const first = await instance(emu, "a", ownDb);
    await waitFor(() => emu.longConnection.online === 1);
    const second = await instance(emu, "b");
    expect(await holderOf(emu)).toBe("a");

    // The holder can no longer renew (its pool is gone): it steps down on its own clock (TTL − margin
    // after its last renewal), and the standby takes the lease once it expires.
    const cutAt = performance.now();
    await ownDb.end();
    await waitFor(() => emu.longConnection.frames.some((f) => f.kind === "close"), 5_000);
    await until(async () => (await holderOf(emu)) === "b", "b holds the lease", 5_000);
    await waitFor(() => emu.longConnection.online === 1, 5_000);
    expect(performance.now() - cutAt).toBeLessThan(HOLDER.ttlMs + HOLDER.renewEveryMs + 2_000);
    expect(mostOpenAtOnce(emu)).toBe(1);

    const id = await handled(second.rig, "接管之后");
    expect(cardsFor(emu, id)).toBe(1);
    await first.stop();
  }, 40_000);
});
