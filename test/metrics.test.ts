import fs from "node:fs";
import type { Server } from "node:http";
import os from "node:os";
import path from "node:path";
import { register as globalRegistry, Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { createApp } from "../src/app.ts";
import type { Card } from "../src/cards/model.ts";
import { loadConfig } from "../src/config.ts";
import { createCore } from "../src/core.ts";
import { type FeishuRuntime, startFeishu } from "../src/feishu/index.ts";
import { createDemoAgent, createDemoTools } from "../src/harness/agents/demo.ts";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";
import { createLogger } from "../src/logger.ts";
import { createMetrics } from "../src/metrics.ts";
import { openDatabase } from "../src/store/db.ts";
import { cardReplyingTo, requestIdsOn } from "./helpers/feishu.ts";
import { until as waitUntil } from "./helpers/wait.ts";

/**
 * `/metrics` as an operator scrapes it, with the bot wired as main.ts wires it (startFeishu + createApp on one
 * registry), Feishu played by the emulator over signed webhooks. The figures are read from the text format.
 */

const ALICE = "ou_alice000000000000000000000000000";
const KEY = "metrics-encrypt-key";
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start() {
  const emulator = await startEmulator({ encryptKey: KEY });
  cleanups.push(() => emulator.close());
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-metrics-"));
  const config = loadConfig({
    DATA_DIR: dataDir,
    FEISHU_APP_ID: emulator.appId,
    FEISHU_APP_SECRET: emulator.appSecret,
    FEISHU_DOMAIN: emulator.url,
    FEISHU_TRANSPORT: "webhook",
    FEISHU_ENCRYPT_KEY: KEY,
    AUTH_SECRET: "metrics-test-secret-0123456789abcdef",
    CARD_PATCH_INTERVAL_MS: "200",
    FEISHU_ASK_PING: "off",
  });
  if (config.mode !== "feishu") throw new Error("the test's config must be in feishu mode");
  const db = openDatabase(path.join(dataDir, "bot.sqlite"));
  const logger = createLogger({ level: process.env.DEBUG_LOG ? "debug" : "silent" });
  const core = await createCore({
    db,
    logger,
    agent: createDemoAgent(),
    tools: createDemoTools({ stepMs: 5 }),
    askTimeoutMs: 60_000,
    authSecret: "metrics-test-secret-123",
  });
  const metrics = createMetrics({ registry: new Registry(), sources: core });
  const feishu: FeishuRuntime = await startFeishu({
    config,
    core,
    logger,
    now: Date.now,
    metrics: metrics.feishu,
  });
  const { server } = createApp({ ...core, logger, routes: feishu.routes, metrics });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(async () => {
    await core.runner.stop();
    await feishu.close();
    await core.hub.close();
    await new Promise((resolve) => (server as Server).close(resolve));
    db.close();
  });
  const address = server.address();
  const base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  return { emulator, core, base };
}

const until = <T>(probe: () => T | undefined | false, what: string, timeoutMs = 15_000): Promise<T> =>
  waitUntil(probe, what, timeoutMs, 10);

/** One sample's value from the Prometheus text format; 0 when the series is absent. */
function sample(text: string, series: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

async function scrape(base: string): Promise<string> {
  const response = await fetch(`${base}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toContain("text/plain");
  return response.text();
}

const cardOf = (emulator: Emulator, id: string): Card =>
  JSON.parse(emulator.messages.getMessage(id)?.content ?? "{}");
/** The queued message gets a 消息已排队 card first, then its progress card: the reply that is not the first. */
const progressCardReplyingTo = (emulator: Emulator, messageId: string, queuedCardId: string) =>
  emulator.messages
    .listMessages()
    .find((m) => m.parentId === messageId && m.msgType === "interactive" && m.messageId !== queuedCardId)
    ?.messageId;
const webhook = (base: string) => `${base}/feishu/events`;

describe("/metrics", () => {
  it("counts PATCHes by outcome and code, callback latency, asks, runs and queues after a run on the emulator", async () => {
    const { emulator, core, base } = await start();
    const before = await scrape(base);
    expect(sample(before, 'fpb_runs{state="completed"}')).toBe(0);
    expect(sample(before, "fpb_pending_asks")).toBe(0);

    // The first progress PATCH meets Feishu's per-message limit; the retry lands.
    emulator.injectFault({
      match: { method: "PATCH", path: "/open-apis/im/v1/messages/" },
      times: 1,
      response: { httpStatus: 400, code: 230020, msg: "rate limited" },
    });
    const message = emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "帮我部署" });
    expect((await emulator.deliverWebhook(webhook(base), message)).status).toBe(200);
    const cardId = await until(() => cardReplyingTo(emulator, message.event.message.message_id), "the card");
    const requestId = await until(() => requestIdsOn(cardOf(emulator, cardId))[0], "a form on the card");
    // While it waits: one question set pending, and a second message queued behind the run.
    const queued = emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "/quick" });
    expect((await emulator.deliverWebhook(webhook(base), queued)).status).toBe(200);
    await until(async () => (await core.store.queue.total()) === 1, "the queued message");
    // Its 消息已排队 card: while the first run waits it is the only reply to the queued message.
    const queuedCard = await until(
      () => cardReplyingTo(emulator, queued.event.message.message_id),
      "the queued card",
    );
    const waiting = await scrape(base);
    expect(sample(waiting, "fpb_pending_asks")).toBe(1);
    expect(sample(waiting, "fpb_queued_messages")).toBe(1);
    expect(sample(waiting, 'fpb_runs{state="running"}')).toBe(1);

    const sessionId = core.registry.get(requestId)?.sessionId ?? "";
    // As the Feishu client: the answer's card is applied to the message, so the bot need not PATCH it again.
    emulator.subscribe({ mode: "webhook", url: webhook(base) });
    const answered = await emulator.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: { kind: "feishu_ask", act: "submit", sessionId, requestId, sender: ALICE },
      name: "ask0_submit",
      formValue: { ask0_q0: "0", ask0_q1: ["0"] },
    });
    expect(answered.status).toBe(200);
    // Both cards end green: the asked one, then the queued /quick on a progress card of its own.
    await until(async () => (await core.store.runCounts()).completed === 2, "both runs to complete");
    // The /quick run can end before its progress card is posted (the run never waits for its card): wait
    // for that reply itself rather than taking whichever reply is latest, which may still be the queued card.
    const secondCard = await until(
      () => progressCardReplyingTo(emulator, queued.event.message.message_id, queuedCard),
      "card 2",
    );
    for (const id of [cardId, secondCard]) {
      await until(() => cardOf(emulator, id).header?.template === "green", `${id} completed`);
    }
    // The queued card's last state says the message's task started (blue); it is not the progress card.
    await until(() => cardOf(emulator, queuedCard).header?.template === "blue", "the queued card started");

    const after = await scrape(base);
    expect(sample(after, 'fpb_card_patches_total{outcome="rate_limited",code="230020"}')).toBe(1);
    expect(sample(after, 'fpb_card_patches_total{outcome="sent",code=""}')).toBeGreaterThanOrEqual(2);
    expect(sample(after, 'fpb_card_callback_duration_seconds_count{outcome="answered"}')).toBe(1);
    expect(sample(after, 'fpb_card_callback_duration_seconds_bucket{le="3",outcome="answered"}')).toBe(1);
    expect(sample(after, 'fpb_app_limiter_wait_seconds_count{priority="urgent"}')).toBeGreaterThan(0);
    expect(sample(after, "fpb_pending_asks")).toBe(0);
    expect(sample(after, "fpb_queued_messages")).toBe(0);
    expect(sample(after, 'fpb_runs{state="completed"}')).toBe(2);
    expect(sample(after, 'fpb_runs{state="running"}')).toBe(0);
    expect(sample(after, "fpb_app_limiter_queue")).toBe(0);
    expect(after).toContain("# TYPE fpb_card_callback_duration_seconds histogram");
  });

  it("counts state changes folded into one PATCH as coalesced", async () => {
    const { emulator, base } = await start();
    const message = emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "/long" });
    await emulator.deliverWebhook(webhook(base), message);
    const cardId = await until(() => cardReplyingTo(emulator, message.event.message.message_id), "the card");
    await until(() => cardOf(emulator, cardId).header?.template === "green", "the completed card");
    const text = await scrape(base);
    // 20 steps of 5 ms (each a start and an end) at one PATCH per 200 ms: changes ride along with later PATCHes.
    const sent = sample(text, 'fpb_card_patches_total{outcome="sent",code=""}');
    const coalesced = sample(text, 'fpb_card_patches_total{outcome="coalesced",code=""}');
    expect(sent).toBeGreaterThan(0);
    expect(coalesced).toBeGreaterThan(0);
    expect(sent).toBeLessThan(20);
  });

  it("counts a card refused and re-rendered plainer as degraded, and one that can no longer be updated as stopped", async () => {
    const { emulator, core, base } = await start();
    // The first PATCH of the first card is refused as invalid: the publisher re-renders it degraded.
    emulator.injectFault({
      match: { method: "PATCH", path: "/open-apis/im/v1/messages/" },
      times: 1,
      response: { httpStatus: 400, code: 230099, msg: "Failed to create card content" },
    });
    const first = emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "/long" });
    await emulator.deliverWebhook(webhook(base), first);
    const firstCard = await until(() => cardReplyingTo(emulator, first.event.message.message_id), "card 1");
    await until(() => cardOf(emulator, firstCard).header?.template === "green", "card 1 completed");
    // Every PATCH of the second card meets 230031 (older than 14 days): its publisher stops at the first.
    emulator.injectFault({
      match: { method: "PATCH", path: "/open-apis/im/v1/messages/" },
      times: 100,
      response: { httpStatus: 400, code: 230031, msg: "message is older than 14 days" },
    });
    const second = emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "/long" });
    await emulator.deliverWebhook(webhook(base), second);
    await until(() => cardReplyingTo(emulator, second.event.message.message_id), "card 2");
    await until(async () => (await core.store.runCounts()).completed === 2, "both runs to complete");
    const text = await scrape(base);
    expect(sample(text, 'fpb_card_patches_total{outcome="degraded",code="230099"}')).toBe(1);
    await expect
      .poll(
        async () => sample(await scrape(base), 'fpb_card_patches_total{outcome="stopped",code="230031"}'),
        {
          timeout: 15_000,
        },
      )
      .toBe(1);
    // Stopped means stopped: no further attempt on that card was counted as failed or rate-limited.
    const after = await scrape(base);
    expect(sample(after, 'fpb_card_patches_total{outcome="failed",code="230031"}')).toBe(0);
    expect(sample(after, 'fpb_card_patches_total{outcome="stopped",code="230031"}')).toBe(1);
  });

  it("includes the process's default metrics (prom-client's) next to ours", async () => {
    const { base } = await start();
    const text = await scrape(base);
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
    expect(text).toMatch(/^nodejs_heap_size_used_bytes \d/m);
    expect(text).toContain("fpb_pending_asks 0");
  });

  it("registers nothing on prom-client's global registry, so two apps in one process do not collide", async () => {
    await start();
    await start();
    expect(await globalRegistry.getMetricsAsJSON()).toEqual([]);
  });
});
