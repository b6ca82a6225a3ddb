import { describe, expect, it } from "vitest";
import { ensureClusterSchema } from "../src/cluster/schema.ts";
import { createWakeups, type Wakeups } from "../src/cluster/wakeups.ts";
import { eventRelay, WAKEUP_CHANNEL } from "../src/instances.ts";
import { createLogger } from "../src/logger.ts";
import { usePostgres } from "./helpers/postgres.ts";
import { until } from "./helpers/wait.ts";

/**
 * The long connection's messages as rows (issue 27): the holder stores each message and is acknowledged once it
 * is durable; every instance of the app takes stored messages in, each exactly once, a redelivery adds none,
 * and a message that could not be taken in is taken in again.
 */

const pg = usePostgres();
const log = createLogger({ level: "silent" });
const APP = "cli_0123456789abcdef";

const message = (id: string) => ({ message: { message_id: id, content: `{"text":"${id}"}` } });
const idOf = (data: Record<string, unknown>) => (data as ReturnType<typeof message>).message.message_id;

async function wakeupsOn(pollIntervalMs = 60_000): Promise<Wakeups> {
  const wakeups = createWakeups({ connectionString: pg().url, channel: WAKEUP_CHANNEL, pollIntervalMs, log });
  wakeups.start();
  await until(() => wakeups.listening() || undefined, "the listener", 10_000, 10);
  return wakeups;
}

describe("the long connection's messages as rows", () => {
  it("gives each stored message to one instance, spreads them, and adds none for a redelivery", async () => {
    const pool = pg().pool();
    await ensureClusterSchema(pool);
    const [wa, wb] = [await wakeupsOn(), await wakeupsOn()];
    const taken: { by: string; id: string }[] = [];
    const slowly = (by: string) => async (data: Record<string, unknown>) => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      taken.push({ by, id: idOf(data) });
    };
    const holder = eventRelay(pool, wa, "a", log);
    const standby = eventRelay(pool, wb, "b", log);
    const offs = [holder.take(APP, slowly("a")), standby.take(APP, slowly("b"))];
    try {
      for (let i = 0; i < 20; i++) await holder.hand(APP, message(`om_${i}`));
      await holder.hand(APP, message("om_3")); // redelivered to the holder: no second row
      await until(() => taken.length >= 20 || undefined, "20 messages taken in", 15_000, 10);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(taken.map((t) => t.id).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `om_${i}`).sort());
      expect(new Set(taken.map((t) => t.by))).toEqual(new Set(["a", "b"]));
    } finally {
      for (const off of offs) off();
      await wa.close();
      await wb.close();
    }
  });

  it("takes in again a message whose taking failed, and finds a message whose wake-up was lost at the poll", async () => {
    const pool = pg().pool();
    await ensureClusterSchema(pool);
    const wakeups = await wakeupsOn(300);
    const relay = eventRelay(pool, wakeups, "a", log);
    const attempts = new Map<string, number>();
    const off = relay.take(APP, async (data) => {
      const id = idOf(data);
      attempts.set(id, (attempts.get(id) ?? 0) + 1);
      if (id === "om_flaky" && attempts.get(id) === 1) throw new Error("the store refused");
    });
    try {
      await relay.hand(APP, message("om_flaky"));
      // Stored by hand, with no wake-up: the poll finds it.
      await pool.query("INSERT INTO cluster_work (kind, payload) VALUES ($1, $2)", [
        `feishu-message:${APP}`,
        JSON.stringify(message("om_quiet")),
      ]);
      await until(
        () => (attempts.get("om_flaky") === 2 && attempts.has("om_quiet")) || undefined,
        "both",
        10_000,
      );
      const left = await pool.query("SELECT count(*)::int AS n FROM cluster_work WHERE done_at IS NULL");
      expect(left.rows[0]?.n).toBe(0);
      expect(attempts).toEqual(
        new Map([
          ["om_flaky", 2],
          ["om_quiet", 1],
        ]),
      );
    } finally {
      off();
      await wakeups.close();
    }
  });
});
