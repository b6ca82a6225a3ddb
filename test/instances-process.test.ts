import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";
import { type MainProcess, startMain } from "./helpers/main-process.ts";
import { usePostgres } from "./helpers/postgres.ts";
import { until as waitUntil } from "./helpers/wait.ts";

/**
 * Several instances of the real entry point (`npm start`) on one Postgres behind one app (issue 27), in
 * webhook mode against the emulator: any instance takes any POST, a redelivery to another instance makes no
 * second card, and when the instance running a task is killed (SIGKILL) another adopts it at the waiting
 * question, and an answer given through a third instance ends the original task, on the same card.
 */

const ALICE = "ou_alice000000000000000000000000000";
const ENCRYPT_KEY = "test-encrypt-key-123";
const LEASE_MS = 2_000;
const pg = usePostgres();
/** One pool per test for the test's own reads (each `pg().pool()` is a new one). */
let shared: { url: string; pool: ReturnType<ReturnType<typeof pg>["pool"]> } | undefined;
const db = () => {
  if (shared?.url !== pg().url) shared = { url: pg().url, pool: pg().pool() };
  return shared.pool;
};
const running: { bots: MainProcess[]; emulator?: Emulator }[] = [];

afterEach(async () => {
  for (const { bots, emulator } of running.splice(0).reverse()) {
    await Promise.all(bots.map((bot) => bot.kill()));
    await emulator?.close();
  }
});

const until = <T>(
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  ms = 20_000,
) => waitUntil(probe, what, ms, 25);

async function startBots(emulator: Emulator, count: number): Promise<MainProcess[]> {
  return Promise.all(
    Array.from({ length: count }, () =>
      startMain({
        startMs: 120_000,
        env: {
          LOG_LEVEL: "info",
          DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), "fpb-instance-")),
          DATABASE_URL: pg().url,
          INSTANCE_LEASE_MS: String(LEASE_MS),
          FEISHU_APP_ID: emulator.appId,
          FEISHU_APP_SECRET: emulator.appSecret,
          FEISHU_DOMAIN: emulator.url,
          FEISHU_TRANSPORT: "webhook",
          FEISHU_ENCRYPT_KEY: ENCRYPT_KEY,
          AUTH_SECRET: "several-instances-test-secret-0123456789",
          DEMO_STEP_MS: "10",
          CARD_PATCH_INTERVAL_MS: "200",
        },
      }),
    ),
  );
}

/** The holder of each unfinished run's lease: `host:pid:random:home`. */
async function runHolders(): Promise<{ name: string; holder: string; fence: number }[]> {
  const rows = await db().query<{ name: string; holder: string; fence: string }>(
    "SELECT name, holder, fence FROM cluster_leases WHERE name LIKE 'run:%' AND expires_at > now()",
  );
  return rows.rows.map((row) => ({ ...row, fence: Number(row.fence) }));
}

const pidOf = (holder: string) => Number(holder.split(":")[1]);
const hook = (bot: MainProcess) => `http://127.0.0.1:${bot.port}/feishu/events`;

describe("several instances on one Postgres (webhook)", () => {
  it("adopts a killed instance's task at its question, answered through a third, on one card", async () => {
    const emulator = await startEmulator({ encryptKey: ENCRYPT_KEY });
    const entry: { bots: MainProcess[]; emulator?: Emulator } = { bots: [], emulator };
    running.push(entry);
    entry.bots = await startBots(emulator, 3);
    const [first, second] = entry.bots as [MainProcess, MainProcess, MainProcess];

    const message = emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "帮我部署" });
    expect((await emulator.deliverWebhook(hook(first), message)).status).toBe(200);
    // Feishu redelivers what it did not see acknowledged, to any instance: no second run, no second card.
    expect((await emulator.deliverWebhook(hook(second), message)).status).toBe(200);
    const messageId = message.event.message.message_id;
    const cards = () =>
      emulator.messages.listMessages().filter((m) => m.parentId === messageId && m.msgType === "interactive");
    const cardId = await until(() => cards()[0]?.messageId, "the progress card");
    const withForm = await until(() => {
      const content = emulator.messages.getMessage(cardId)?.content ?? "";
      return content.includes('"tag":"form"') && content;
    }, "the form on the card");
    const requestId = /"requestId":"([^"]+)"/.exec(withForm)?.[1] ?? "";
    const sessionId = /"sessionId":"([^"]+)"/.exec(withForm)?.[1] ?? "";

    const [held] = await runHolders();
    if (!held) throw new Error("no run lease");
    const owner = entry.bots.find((bot) => bot.child.pid === pidOf(held.holder));
    if (!owner) throw new Error(`no bot with the holder's pid: ${held.holder}`);
    expect(owner).toBe(first);
    let lastPatch: number | undefined;
    const offPatched = emulator.on("message_patched", ({ message: patched }) => {
      if (patched.messageId === cardId) lastPatch = Date.now();
    });
    const killedAt = Date.now();
    await owner.kill();
    const rest = entry.bots.filter((bot) => bot !== owner);

    const adopted = await until(async () => {
      const [now] = await runHolders();
      return now && now.holder !== held.holder ? now : undefined;
    }, "another instance to adopt the run");
    const takeoverMs = Date.now() - killedAt;
    expect(adopted.fence).toBe(held.fence + 1);
    // The lease's TTL, then at most one look (a fifth of it), with slack for a loaded machine.
    expect(takeoverMs).toBeLessThan(LEASE_MS * 5);
    // The adopter writes the card again (its form, as it resumes) before the click, and then leaves it be for
    // a second: the click meets a card nobody is updating, so no update may land while it is answered.
    // Within a minute at most: the instances are in their first minute, and the adopter's share of the budget
    // may be 0 until the dead one's calls have left the window (cluster/budget.ts).
    await until(
      () => lastPatch !== undefined && Date.now() - lastPatch > 1_000,
      "the adopter's card written, then quiet",
      90_000,
    );
    offPatched();
    expect(emulator.messages.getMessage(cardId)?.content).toContain('"tag":"form"');
    const adopter = rest.find((bot) => bot.child.pid === pidOf(adopted.holder));
    const other = rest.find((bot) => bot !== adopter);
    if (!adopter || !other) throw new Error("the adopter is not one of the live instances");

    // The click goes to the instance that does not run the task: the ask's row decides, and the click is
    // answered with the card as the rows have it, the form gone, while the card's instance holds its PATCH
    // until that answer is in (Feishu would revert it), then PATCHes it for everyone else.
    emulator.subscribe({ mode: "webhook", url: hook(other) });
    const answered = await emulator.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      name: "ask0_submit",
      value: { kind: "feishu_ask", act: "submit", sessionId, requestId, sender: ALICE },
      formValue: { ask0_q0: "0", ask0_q1: ["2"] },
    });
    expect(answered).toMatchObject({ status: 200, toast: { type: "success" }, card: "applied" });
    expect(answered.revertedUpdates).toBeUndefined();
    expect(answered.durationMs).toBeLessThan(3000);
    const shown = JSON.stringify((answered.answer as { card?: { data?: unknown } }).card?.data ?? null);
    expect(shown).toContain(sessionId);
    expect(shown).not.toContain('"tag":"form"');
    await until(
      () => emulator.messages.getMessage(cardId)?.content.includes('"template":"green"'),
      "the completed card",
    );
    const done = emulator.messages.getMessage(cardId)?.content ?? "";
    expect(done).toContain("Docker（推荐）");
    expect(cards()).toHaveLength(1);

    const asks = await pg()
      .pool()
      .query<{ status: string; answered_via: string }>("SELECT status, answered_via FROM asks");
    expect(asks.rows).toEqual([{ status: "answered", answered_via: "feishu" }]);
    const runs = await db().query<{ status: string }>("SELECT status FROM runs");
    expect(runs.rows).toEqual([{ status: "completed" }]);
    expect(await runHolders()).toEqual([]);
    for (const bot of rest) expect(bot.output()).not.toMatch(/"level":(50|60)/);
  }, 240_000);

  it("the app's sweeper sends the final state of a task whose instance was killed before it landed", async () => {
    const emulator = await startEmulator({ encryptKey: ENCRYPT_KEY });
    const entry: { bots: MainProcess[]; emulator?: Emulator } = { bots: [], emulator };
    running.push(entry);
    entry.bots = await startBots(emulator, 2);
    const [first] = entry.bots as [MainProcess, MainProcess];
    const message = emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "帮我部署" });
    expect((await emulator.deliverWebhook(hook(first), message)).status).toBe(200);
    const messageId = message.event.message.message_id;
    const cardId = await until(
      () =>
        emulator.messages.listMessages().find((m) => m.parentId === messageId && m.msgType === "interactive")
          ?.messageId,
      "the progress card",
    );
    const withForm = await until(() => {
      const content = emulator.messages.getMessage(cardId)?.content ?? "";
      return content.includes('"tag":"form"') && content;
    }, "the form on the card");
    const requestId = /"requestId":"([^"]+)"/.exec(withForm)?.[1] ?? "";
    const [held] = await runHolders();
    const owner = entry.bots.find((bot) => bot.child.pid === pidOf(held?.holder ?? ""));
    const survivor = entry.bots.find((bot) => bot !== owner);
    if (!owner || !survivor) throw new Error("no run holder among the instances");

    // Every PATCH of the card fails from now on: the task ends, its final state never lands.
    const refused = emulator.injectFault({
      match: { method: "PATCH", path: `/open-apis/im/v1/messages/${cardId}` },
      times: 10_000,
      response: { httpStatus: 500, code: 1, msg: "unavailable" },
    });
    // Answered by a reply quoting the card, taken by the instance that does not run the task: it finds the
    // card in the rows, so the reply answers the question rather than queueing a task of its own.
    const reply = emulator.userMessage({
      chatType: "p2p",
      senderOpenId: ALICE,
      text: "1:1 2:1",
      parentId: cardId,
    });
    expect((await emulator.deliverWebhook(hook(survivor), reply)).status).toBe(200);
    await until(async () => {
      const runs = await db().query<{ status: string }>("SELECT status FROM runs");
      return runs.rows[0]?.status === "completed";
    }, "the task to end");
    await owner.kill();
    refused.cancel();
    expect(emulator.messages.getMessage(cardId)?.content).not.toContain('"template":"green"');

    // Nobody restarts: the surviving instance, holding the app's sweeper lease, sends it. Within a minute at
    // most: both instances are in their first minute, and the survivor's share of the budget may be 0 until
    // the calls the other made under its larger share have left the window (cluster/budget.ts).
    await until(
      () => emulator.messages.getMessage(cardId)?.content.includes('"template":"green"'),
      "the final state, sent by the sweeper",
      90_000,
    );
    const sweeper = await db().query<{ holder: string }>(
      "SELECT holder FROM cluster_leases WHERE name LIKE 'sweeper:%' AND expires_at > now()",
    );
    expect(sweeper.rows.map((row) => pidOf(row.holder))).toEqual([survivor.child.pid]);
    expect(survivor.output()).toContain("sent final states their instances left unsent");
    // Recorded once the PATCH's answer is in (a write after it): read until it is.
    await until(async () => {
      const landed = await db().query<{ final_landed_at: number | null }>(
        "SELECT final_landed_at FROM progress_cards",
      );
      return landed.rows[0]?.final_landed_at != null || undefined;
    }, "the final state recorded as landed");
    const asks = await db().query<{ request_id: string; status: string }>(
      "SELECT request_id, status FROM asks",
    );
    expect(asks.rows).toEqual([{ request_id: requestId, status: "answered" }]);
    const queued = await db().query("SELECT 1 FROM queued_messages");
    expect(queued.rows).toEqual([]);
    const cards = emulator.messages.listMessages().filter((m) => m.msgType === "interactive");
    expect(cards.map((m) => m.messageId)).toEqual([cardId]);
  }, 240_000);
});
