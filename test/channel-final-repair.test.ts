import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Agent } from "../src/harness/agents/agent.ts";
import { openDatabase } from "../src/store/db.ts";
import { FeishuStore } from "../src/store/feishu.ts";
import { FakeMessenger } from "../src/testing/fake-messenger.ts";
import { type FakeChannelRig, startFakeChannel } from "./helpers/fake-channel.ts";
import { cardText } from "./helpers/feishu.ts";

/**
 * A task's final card state survives a kill between the run's end and its last PATCH (the PATCH failing or
 * waiting when the process dies): the next start sends it, once. And late retries end with the channel.
 * Fake time and the fake messenger, a data directory kept across the restart (test/helpers/fake-channel.ts).
 */

const ALICE = "ou_alice000000000000000000000000000";
const DAY_MS = 24 * 60 * 60 * 1000;
/** The figure: 20 times the 50 calls a second Feishu takes from an app, as many as it takes a minute. */
const CARDS = 1000;

const rigs: FakeChannelRig[] = [];
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
  vi.useRealTimers();
});
async function rig(options: Parameters<typeof startFakeChannel>[0] = {}): Promise<FakeChannelRig> {
  const started = await startFakeChannel(options);
  rigs.push(started);
  return started;
}

const isCompleted = (card: { header?: { template: string } }) => card.header?.template === "green";

/** What the bot's database says of a card, read apart from the bot (its own connection). */
async function recordOf(dbFile: string, runId: string) {
  const db = openDatabase(dbFile);
  try {
    return await FeishuStore.onFile(db, Date.now).cardForRun(runId);
  } finally {
    db.close();
  }
}

/**
 * A /quick run that completes while every PATCH of its card fails with a 502: the publisher retries, gives
 * up, arms a late retry, and the process is killed before any of it lands. Returns the kept platform.
 */
async function killedBeforeTheFinalPatch() {
  const fake = new FakeMessenger({ timeoutMs: 5000 });
  const first = await startFakeChannel({ fake, stepMs: 200 });
  const userMessageId = first.send({ chatType: "p2p", senderOpenId: ALICE, text: "/quick" });
  const cardId = await first.progressCard(userMessageId);
  fake.fail({
    method: "patchCard",
    messageId: cardId,
    times: Number.POSITIVE_INFINITY,
    response: { httpStatus: 502 },
  });
  const runId = (await first.core.runner.currentRun(`feishu-${fake.appId}-private-${ALICE}`))?.id ?? "";
  await first.drive(first.core.runner.idle());
  await first.until(() => fake.callsTo("patchCard", cardId).length >= 2, "the final PATCH refused");
  expect((await first.core.runner.getRun(runId))?.status).toBe("completed");
  expect(isCompleted(fake.cardOf(cardId))).toBe(false);
  await first.kill();
  fake.clearFaults();
  return { fake, dataDir: first.dataDir, dbFile: first.dbFile, cardId, runId };
}

describe("a card's final state after a kill", () => {
  it("is sent after the restart by one PATCH, and a second restart sends none", async () => {
    const { fake, dataDir, dbFile, cardId, runId } = await killedBeforeTheFinalPatch();
    expect((await recordOf(dbFile, runId))?.finalLandedAt).toBeUndefined();
    const before = fake.callsTo("patchCard", cardId).length;

    const second = await startFakeChannel({ fake, dataDir, recover: true });
    await second.idle();
    const after = fake.callsTo("patchCard", cardId).slice(before);
    expect(after.map((call) => call.outcome?.ok)).toEqual([true]);
    expect(isCompleted(fake.cardOf(cardId))).toBe(true);
    expect(cardText(fake.cardOf(cardId))).toContain("/quick");
    expect((await recordOf(dbFile, runId))?.finalLandedAt).toBeTypeOf("number");
    await second.stop();

    const third = await rig({ fake, dataDir, recover: true });
    await third.idle();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(fake.callsTo("patchCard", cardId)).toHaveLength(before + 1);
  });

  it("waits for the composition root: starting the channel renders nothing, repairEnded() after listen does", async () => {
    const { fake, dataDir, dbFile, cardId, runId } = await killedBeforeTheFinalPatch();
    const before = fake.callsTo("patchCard", cardId).length;
    // A card's 会话详情 link needs the public URL, which with PORT=0 exists only once the server listens
    // (public-url.ts throws before): the channel's start must not render a card.
    let listening = false;
    const second = await rig({
      fake,
      dataDir,
      publicUrl: () => {
        if (!listening) throw new Error("the bot has no address yet");
        return "http://localhost:41234";
      },
    });
    await second.idle();
    expect(fake.callsTo("patchCard", cardId)).toHaveLength(before);
    listening = true;
    expect(await second.channel.repairEnded()).toBe(1);
    await second.idle();
    expect(
      fake
        .callsTo("patchCard", cardId)
        .slice(before)
        .map((call) => call.outcome?.ok),
    ).toEqual([true]);
    expect(isCompleted(fake.cardOf(cardId))).toBe(true);
    expect((await recordOf(dbFile, runId))?.finalLandedAt).toBeTypeOf("number");
  });

  it("marks the final state landed when the live PATCH lands, so a restart sends nothing", async () => {
    const fake = new FakeMessenger({ timeoutMs: 5000 });
    const first = await startFakeChannel({ fake });
    const cardId = await first.progressCard(
      first.send({ chatType: "p2p", senderOpenId: ALICE, text: "/quick" }),
    );
    await first.until(() => isCompleted(fake.cardOf(cardId)), "the completed card");
    await first.idle();
    const patches = fake.callsTo("patchCard", cardId).length;
    await first.kill();

    const second = await rig({ fake, dataDir: first.dataDir, recover: true });
    await second.idle();
    expect(fake.callsTo("patchCard", cardId)).toHaveLength(patches);
  });

  it("leaves a card older than 14 days alone (Feishu refuses the PATCH)", async () => {
    const { fake, dataDir, dbFile, cardId, runId } = await killedBeforeTheFinalPatch();
    const before = fake.callsTo("patchCard", cardId).length;
    vi.setSystemTime(Date.now() + 15 * DAY_MS);
    fake.clock.advance(15 * DAY_MS);

    const second = await rig({ fake, dataDir, recover: true });
    await second.idle();
    expect(fake.callsTo("patchCard", cardId)).toHaveLength(before);
    expect((await recordOf(dbFile, runId))?.gone).toBe(false);
  });

  it("marks a card recalled meanwhile gone, and does not try it again", async () => {
    const { fake, dataDir, dbFile, cardId, runId } = await killedBeforeTheFinalPatch();
    fake.recallMessage(cardId);
    const before = fake.callsTo("patchCard", cardId).length;

    const second = await startFakeChannel({ fake, dataDir, recover: true });
    await second.idle();
    const codes = fake
      .callsTo("patchCard", cardId)
      .slice(before)
      .map((c) => c.outcome?.ok);
    expect(codes).toEqual([false]);
    expect((await recordOf(dbFile, runId))?.gone).toBe(true);
    // The run had ended: nothing to end, and no message about a gone card in the chat.
    expect(second.fromBot().filter((m) => m.msgType === "text")).toHaveLength(0);
    await second.stop();

    const third = await rig({ fake, dataDir, recover: true });
    await third.idle();
    expect(fake.callsTo("patchCard", cardId)).toHaveLength(before + 1);
  });

  it(`repairs ${CARDS} cards after a restart through the app limiter: one PATCH each, none refused`, async () => {
    const fake = new FakeMessenger({ timeoutMs: 5000 });
    // The runs end only once every reply is out: no reply shows a final state (which would count as landed).
    let release: (() => void) | undefined;
    const replied = new Promise<void>((resolve) => {
      release = resolve;
    });
    const agent: Agent = {
      name: "waits-for-every-card",
      async run() {
        await replied;
        return { text: "完成" };
      },
    };
    const first = await startFakeChannel({ fake, agent });
    const storm = fake.fail({
      method: "patchCard",
      times: Number.POSITIVE_INFINITY,
      response: { httpStatus: 502 },
    });
    const users = Array.from({ length: CARDS }, (_, i) => `ou_user${String(i).padStart(28, "0")}`);
    for (const user of users) first.send({ chatType: "p2p", senderOpenId: user, text: "/quick" });
    await first.until(() => fake.callsTo("replyCard").length === users.length, "every card", 600_000);
    release?.();
    await first.drive(first.core.runner.idle());
    await first.until(
      () => fake.callsTo("patchCard").length >= users.length,
      "each final PATCH refused",
      600_000,
    );
    await first.kill();
    storm.cancel();
    const cards = fake
      .callsTo("replyCard")
      .flatMap((c) => (c.outcome?.ok && c.outcome.messageId ? [c.outcome.messageId] : []));
    expect(cards).toHaveLength(users.length);
    const before = fake.callsTo("patchCard").length;
    // A restart takes a while: the last minute's calls of the killed process no longer count.
    await vi.advanceTimersByTimeAsync(61_000);

    const second = await rig({ fake, dataDir: first.dataDir, recover: true });
    await second.idle();
    const repaired = fake.callsTo("patchCard").slice(before);
    expect(repaired.filter((c) => !c.outcome?.ok)).toEqual([]);
    expect(new Set(repaired.map((c) => c.messageId))).toEqual(new Set(cards));
    expect(repaired).toHaveLength(cards.length);
    // Paced: never more than Feishu's 50 calls in a second (the fake would have refused them, too).
    const times = repaired.map((c) => c.at);
    const busiest = Math.max(...times.map((t) => times.filter((u) => u >= t && u < t + 1000).length));
    expect(busiest).toBeLessThanOrEqual(50);
    expect(Math.max(...times) - Math.min(...times)).toBeGreaterThanOrEqual((CARDS / 50 - 1) * 1000);
    for (const card of cards) expect(isCompleted(fake.cardOf(card))).toBe(true);
    // About 5 s of CPU alone; beside the rest of the suite on 2 cores it once took over the default 20 s.
  }, 120_000);
  it("counts a reply that already carried the final state as landed (runs that ended waiting for their turn)", async () => {
    const fake = new FakeMessenger({ timeoutMs: 5000 });
    const first = await startFakeChannel({ fake });
    // More replies than Feishu takes in a second: the last ones wait their turn, and their runs end meanwhile.
    const users = Array.from({ length: 70 }, (_, i) => `ou_user${String(i).padStart(28, "0")}`);
    for (const user of users) first.send({ chatType: "p2p", senderOpenId: user, text: "/quick" });
    await first.until(() => fake.callsTo("replyCard").length === users.length, "every card");
    await first.drive(first.core.runner.idle());
    await first.idle();
    const replies = fake.callsTo("replyCard").flatMap((c) => (c.card && isCompleted(c.card) ? [c] : []));
    expect(replies.length).toBeGreaterThan(0);
    const before = fake.callsTo("patchCard").length;
    await first.kill();
    await vi.advanceTimersByTimeAsync(61_000);

    const second = await rig({ fake, dataDir: first.dataDir, recover: true });
    await second.idle();
    expect(fake.callsTo("patchCard")).toHaveLength(before);
  });
});

describe("late retries after the channel closes", () => {
  it("stops a forgotten card's late retry on close: no timer is left and no PATCH goes out", async () => {
    const r = await startFakeChannel({ stepMs: 200 });
    const cardId = await r.progressCard(r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/quick" }));
    r.fake.fail({
      method: "patchCard",
      messageId: cardId,
      times: Number.POSITIVE_INFINITY,
      response: { httpStatus: 502 },
    });
    const runId = (await r.core.runner.currentRun(`feishu-${r.fake.appId}-private-${ALICE}`))?.id ?? "";
    await r.drive(r.core.runner.idle());
    await r.idle();
    // Given up and forgotten by the channel, with its late retry armed.
    expect(r.channel.activeCard(runId)).toBeUndefined();
    r.fake.clearFaults();
    const patches = r.fake.callsTo("patchCard", cardId).length;
    // The final state was tried, retried and given up (502 each time); its late retry is armed.
    expect(r.fake.callsTo("patchCard", cardId).filter((c) => !c.outcome?.ok).length).toBeGreaterThanOrEqual(
      4,
    );
    await r.stop();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(15 * 60_000);
    expect(r.fake.callsTo("patchCard", cardId)).toHaveLength(patches);
  });
});
