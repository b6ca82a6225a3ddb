import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { createApp } from "../src/app.ts";
import type { Card } from "../src/cards/model.ts";
import { ensureClusterSchema } from "../src/cluster/schema.ts";
import { createWakeups } from "../src/cluster/wakeups.ts";
import { fencedTransport } from "../src/feishu/card-transport.ts";
import { servingShare } from "../src/feishu/cluster-budget.ts";
import { createDemoAgent } from "../src/harness/agents/demo.ts";
import { eventRelay, WAKEUP_CHANNEL } from "../src/instances.ts";
import { createLogger } from "../src/logger.ts";
import { buildCore } from "./helpers/core.ts";
import { usePostgres } from "./helpers/postgres.ts";
import { until } from "./helpers/wait.ts";

/**
 * An instance that cannot serve yet (issue 27): a newcomer whose share of the app's budget is not there yet (its
 * grace, or a killed instance's last minute still counted) is alive but not ready, takes no stored message, and
 * (run-leases.test.ts) adopts no run; and a card whose task went to another instance is not written from here.
 */

const pg = usePostgres();
const log = createLogger({ level: "silent" });
const APP = "cli_0123456789abcdef";

const share = (perSecond: number, perMinute: number) => ({ perSecond, perMinute });

describe("serving, with several instances", () => {
  it("serves with a call left this second and this minute, not in a grace or with no room", () => {
    expect(servingShare(share(16, 333))).toBe(true);
    expect(servingShare(share(16, 1))).toBe(true);
    expect(servingShare(share(0, 333))).toBe(false); // the newcomer's grace
    expect(servingShare(share(16, 0))).toBe(false); // a dead instance's minute still fills its room
    expect(servingShare(share(0, 0))).toBe(false); // before its first heartbeat
  });

  it("says it at /readyz (503 until it serves) while /healthz says it is alive", async () => {
    const core = await buildCore({ agent: createDemoAgent() });
    let serving = false;
    const { server } = createApp({ ...core, logger: log, serving: () => serving });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      const notYet = await fetch(`${base}/readyz`);
      expect([notYet.status, await notYet.json()]).toEqual([503, { ready: false }]);
      serving = true;
      const ready = await fetch(`${base}/readyz`);
      expect([ready.status, await ready.json()]).toEqual([200, { ready: true }]);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await core.close();
    }
  });

  it("takes no stored message at a wake-up while it cannot serve: an instance that can takes them all", async () => {
    const pool = pg().pool();
    await ensureClusterSchema(pool);
    const listening = async (pollIntervalMs = 60_000) => {
      const wakeups = createWakeups({
        connectionString: pg().url,
        channel: WAKEUP_CHANNEL,
        pollIntervalMs,
        log,
      });
      wakeups.start();
      await until(() => wakeups.listening() || undefined, "the listener", 10_000, 10);
      return wakeups;
    };
    const [wa, wb] = [await listening(), await listening()];
    const taken: { by: string; id: string }[] = [];
    const by = (name: string) => async (data: Record<string, unknown>) => {
      taken.push({ by: name, id: String((data as { message: { message_id: string } }).message.message_id) });
    };
    let newcomerServes = false;
    const holder = eventRelay(pool, wa, "a", log);
    const offs = [
      holder.take(APP, by("a")),
      eventRelay(pool, wb, "b", log).take(APP, by("b"), () => newcomerServes),
    ];
    try {
      for (let i = 0; i < 10; i++) await holder.hand(APP, { message: { message_id: `om_${i}` } });
      await until(() => taken.length >= 10 || undefined, "10 messages taken in", 15_000, 10);
      expect(new Set(taken.map((t) => t.by))).toEqual(new Set(["a"]));
      // Serving now: it takes its part again.
      newcomerServes = true;
      for (let i = 10; i < 40; i++) await holder.hand(APP, { message: { message_id: `om_${i}` } });
      await until(() => taken.length >= 40 || undefined, "40 messages taken in", 15_000, 10);
      expect(taken.some((t) => t.by === "b")).toBe(true);
      expect(new Set(taken.map((t) => t.id)).size).toBe(40);
    } finally {
      for (const off of offs) off();
      await wa.close();
      await wb.close();
    }
  });

  it("still takes at its poll what nobody took for 10 s while it cannot serve (none may serve yet)", async () => {
    const pool = pg().pool();
    await ensureClusterSchema(pool);
    const wakeups = createWakeups({
      connectionString: pg().url,
      channel: WAKEUP_CHANNEL,
      pollIntervalMs: 300,
      log,
    });
    wakeups.start();
    await until(() => wakeups.listening() || undefined, "the listener", 10_000, 10);
    const taken: string[] = [];
    const relay = eventRelay(pool, wakeups, "c", log);
    const off = relay.take(
      APP,
      async (data) =>
        void taken.push(String((data as { message: { message_id: string } }).message.message_id)),
      () => false,
    );
    try {
      await relay.hand(APP, { message: { message_id: "om_alone" } });
      // Not at once: the instances that can serve have 10 s to take it first.
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect(taken).toEqual([]);
      await until(() => taken.length >= 1 || undefined, "the message taken at the poll", 15_000, 10);
      expect(taken).toEqual(["om_alone"]);
    } finally {
      off();
      await wakeups.close();
    }
  });

  it("writes no card of a task that went to another instance, and lets the card go", async () => {
    let lapsed = false;
    const sent: string[] = [];
    const letGo: string[] = [];
    const wire = fencedTransport(
      {
        kind: "im",
        update: async (card) => {
          sent.push(JSON.stringify(card));
        },
        close: () => undefined,
      },
      () => lapsed,
      () => letGo.push("run-1"),
    );
    const card = {
      schema: "2.0",
      config: { update_multi: true },
      body: { elements: [] },
    } as const satisfies Card;
    await wire.update(card, { key: "a", formOpen: false, final: false });
    expect(sent).toHaveLength(1);
    lapsed = true;
    await expect(wire.update(card, { key: "b", formOpen: false, final: false })).rejects.toThrow(
      /another instance/,
    );
    expect(sent).toHaveLength(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(letGo).toEqual(["run-1"]);
  });
});
