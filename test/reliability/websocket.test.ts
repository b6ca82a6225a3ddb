import { once } from "node:events";
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { WebSocket } from "ws";
import type { Agent } from "../../src/harness/agents/agent.ts";
import { DEFAULT_WS_LIMITS, fullBucket, takeFrame } from "../../src/ws/limits.ts";
import { eventually, startRun, startTestServer, type TestServer } from "../helpers/harness.ts";
import { PROPERTY_RUNS, record, until } from "./helpers/env.ts";

/**
 * Issue 14 item 1: one WebSocket client must not be able to crash the bot or starve others. Every case runs
 * on loopback against the real hub and is bounded in time; memory is the test process's own (the hub runs
 * in it), sampled while the attack goes on.
 */

const MALLORY = "ou_mallory";
const ALICE = "ou_alice";
const BOB = "ou_bob";
/** The process's memory may grow this much during an attack; unbounded, the flood below queued gigabytes. */
const MAX_RSS_GROWTH_BYTES = 160 * 1024 * 1024;

/** Each run waits until it is stopped, so messages sent meanwhile stay queued. */
const busyAgent: Agent = {
  name: "busy",
  run: (ctx) =>
    new Promise((resolve) => ctx.signal.addEventListener("abort", () => resolve({ text: "stopped" }))),
};

let server: TestServer | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await server?.stop();
  server = undefined;
});

/** A session whose run waits on a question, with `queued` messages of `bytes` each behind it. */
async function busySession(s: TestServer, owner: string, queued: number, bytes: number) {
  const session = await s.createSession(owner);
  await startRun(s.core, session, owner);
  for (let i = 0; i < queued; i += 1) {
    const result = await s.core.runner.submit({
      sessionId: session.id,
      senderId: owner,
      text: `${i} ${"x".repeat(bytes)}`,
    });
    expect(result.kind).toBe("queued");
  }
  return session;
}

async function served(s: TestServer, userId: string, sessionId: string): Promise<number> {
  const startedAt = performance.now();
  const client = await s.connect(userId);
  client.send({ type: "subscribe", sessionId });
  await client.next("session_snapshot");
  await client.close();
  return Math.round(performance.now() - startedAt);
}

describe("a WebSocket client that floods and never reads", () => {
  it("is cut off with memory bounded, while other users are served", async () => {
    // The session: 40 queued messages of 20 KB (QUEUE_MAX raised to allow them).
    server = await startTestServer({ agent: busyAgent, maxQueued: 40 });
    const s = server;
    const target = await busySession(s, MALLORY, 40, 20 * 1024);
    const aliceSession = await busySession(s, ALICE, 0, 0);
    const bobSession = await busySession(s, BOB, 0, 0);

    // The snapshot a subscribe costs: bounded whatever is queued (40 × 20 KB made it 808 KB).
    const probe = await s.connect(MALLORY);
    probe.send({ type: "subscribe", sessionId: target.id });
    const snapshot = await probe.next("session_snapshot");
    const snapshotBytes = JSON.stringify(snapshot).length;
    expect(snapshotBytes).toBeLessThan(32 * 1024);
    expect(snapshot.data.queuedCount).toBe(40);
    await probe.close();

    const alice = await s.connect(ALICE);
    alice.send({ type: "subscribe", sessionId: aliceSession.id });
    await alice.next("session_snapshot");

    const baseline = process.memoryUsage().rss;
    let peakGrowth = 0;
    let peakBuffered = 0;
    const sample = () => {
      peakGrowth = Math.max(peakGrowth, process.memoryUsage().rss - baseline);
      peakBuffered = Math.max(peakBuffered, s.core.hub.bufferedBytes?.() ?? 0);
    };
    const flooder = new WebSocket(`${s.url}?token=${s.tokenFor(MALLORY)}`, { autoPong: false });
    flooder.on("error", () => undefined);
    await once(flooder, "open");
    flooder.pause(); // reads nothing from here on
    const frame = JSON.stringify({ type: "subscribe", sessionId: target.id });
    const startedAt = performance.now();
    for (let sent = 0; sent < 3000 && peakGrowth < MAX_RSS_GROWTH_BYTES; sent += 100) {
      for (let i = 0; i < 100; i += 1) flooder.send(frame);
      await new Promise((resolve) => setImmediate(resolve));
      sample();
    }
    expect(peakGrowth, "memory grew without bound during the flood").toBeLessThan(MAX_RSS_GROWTH_BYTES);
    await until(
      () => {
        sample();
        return peakGrowth >= MAX_RSS_GROWTH_BYTES || s.core.hub.connectionCount(MALLORY) === 0;
      },
      "the flooding connection to be cut off",
      20_000,
      20,
    );
    const cutOffMs = Math.round(performance.now() - startedAt);
    expect(peakGrowth, "memory grew without bound after the flood").toBeLessThan(MAX_RSS_GROWTH_BYTES);
    expect(s.core.hub.connectionCount(MALLORY)).toBe(0);
    expect(s.core.hub.droppedConnections().slowReader).toBeGreaterThanOrEqual(1);
    // What waited unsent never passed the per-connection bound by more than the frame that crossed it.
    expect(peakBuffered).toBeLessThan(DEFAULT_WS_LIMITS.maxBufferedBytes + 64 * 1024);

    // Alice's open connection and Bob's new one are served as usual.
    await alice.sync();
    expect(alice.isOpen).toBe(true);
    const bobMs = await served(s, BOB, bobSession.id);
    flooder.terminate();
    record("websocket: subscribe flood from a client that never reads", {
      subscribes: 3000,
      snapshotBytes,
      peakRssGrowthMiB: +(peakGrowth / 2 ** 20).toFixed(1),
      peakBufferedMiB: +(peakBuffered / 2 ** 20).toFixed(2),
      cutOffMs,
      otherUserServedMs: bobMs,
    });
  }, 30_000);
});

describe("one user opening 300 connections", () => {
  it("keeps at most the per-user cap open, closing the oldest with 1008, and serves other users", async () => {
    server = await startTestServer({ agent: busyAgent });
    const s = server;
    const bobSession = await busySession(s, BOB, 0, 0);
    const baseline = process.memoryUsage().rss;
    const clients = [];
    for (let i = 0; i < 300; i += 25) {
      clients.push(...(await Promise.all(Array.from({ length: 25 }, () => s.connect(MALLORY)))));
    }
    await eventually(() => expect(s.core.hub.connectionCount(MALLORY)).toBeLessThanOrEqual(16));
    const closed = await Promise.all(
      clients.slice(0, 300 - 16).map((client) => client.closed().then(({ code }) => code)),
    );
    expect(new Set(closed)).toEqual(new Set([1008]));
    // The newest ones stay: the person's current tab keeps working.
    const newest = clients.at(-1);
    await newest?.sync();
    expect(newest?.isOpen).toBe(true);
    const bobMs = await served(s, BOB, bobSession.id);
    const growth = process.memoryUsage().rss - baseline;
    expect(growth).toBeLessThan(MAX_RSS_GROWTH_BYTES);
    record("websocket: 300 connections for one user", {
      open: s.core.hub.connectionCount(MALLORY),
      closedWith1008: closed.length,
      rssGrowthMiB: +(growth / 2 ** 20).toFixed(1),
      otherUserServedMs: bobMs,
    });
  }, 30_000);
});

describe("a connection subscribing to many sessions", () => {
  it("is refused past the per-connection limit with too_many_subscriptions, keeping what it had", async () => {
    server = await startTestServer({ agent: busyAgent, wsLimits: { maxSubscriptionsPerConnection: 2 } });
    const sessions: string[] = [];
    for (let i = 0; i < 3; i += 1) sessions.push((await server.createSession(ALICE)).id);
    const client = await server.connect(ALICE);
    for (const sessionId of sessions) client.send({ type: "subscribe", sessionId });
    await client.sync();
    expect(client.received.filter((frame) => frame.type === "subscribed").map((f) => f.sessionId)).toEqual(
      sessions.slice(0, 2),
    );
    const refused = client.pending("error");
    expect(refused.map((frame) => frame.type === "error" && [frame.sessionId, frame.data.code])).toEqual([
      [sessions[2], "too_many_subscriptions"],
    ]);
    // Unsubscribing makes room.
    client.send({ type: "unsubscribe", sessionId: sessions[0] });
    client.send({ type: "subscribe", sessionId: sessions[2] });
    expect((await client.next("subscribed", (frame) => frame.sessionId === sessions[2])).sessionId).toBe(
      sessions[2],
    );
  });
});

describe("a client that sends frames faster than the rate", () => {
  it("has the excess refused with one rate_limited error, then is served again", async () => {
    server = await startTestServer({ wsLimits: { framesPerSecond: 20, frameBurst: 5 } });
    const client = await server.connect(ALICE);
    for (let i = 0; i < 200; i += 1) client.send({ type: "ping", sessionId: `p${i}` });
    const error = await client.next("error");
    expect(error.data.code).toBe("rate_limited");
    await eventually(() =>
      expect(server?.core.hub.droppedConnections().rateLimitedFrames).toBeGreaterThan(0),
    );
    // A burst free, a burst on credit; the rest of the 200 were refused, not queued.
    const pongs = () => client.received.filter((frame) => frame.type === "pong").length;
    expect(pongs()).toBeLessThanOrEqual(10 + 2);
    // Once reading resumes the connection is served again. Frames of the flood still in flight may take the
    // credit first, so ask a few times rather than once.
    let served = false;
    for (let attempt = 0; attempt < 10 && !served; attempt += 1) {
      const marker = `after-${attempt}`;
      client.send({ type: "ping", sessionId: marker });
      served = await client
        .next("pong", (frame) => frame.sessionId === marker, 1000)
        .then(
          () => true,
          () => false,
        );
    }
    expect(served).toBe(true);
    expect(client.isOpen).toBe(true);
    expect(pongs()).toBeLessThan(200);
  });
});

describe("the frame rate bucket", () => {
  it("handles at most two bursts plus the rate over any window, and refuses nothing from a client within the rate", () => {
    const limits = { framesPerSecond: 50, frameBurst: 10 };
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 200 }), { minLength: 1, maxLength: 400 }), (gaps) => {
        let bucket = fullBucket(limits, 0);
        let atMs = 0;
        let handled = 0;
        for (const gap of gaps) {
          atMs += gap;
          const taken = takeFrame(bucket, limits, atMs);
          bucket = taken.bucket;
          if (taken.verdict.handle) handled += 1;
        }
        expect(handled).toBeLessThanOrEqual(2 * limits.frameBurst + (atMs * limits.framesPerSecond) / 1000);
      }),
      { numRuns: PROPERTY_RUNS },
    );
    // A polite client: one frame every 20 ms (the rate exactly) is never refused nor paused.
    let bucket = fullBucket(limits, 0);
    for (let i = 1; i <= 1000; i += 1) {
      const taken = takeFrame(bucket, limits, i * 20);
      bucket = taken.bucket;
      expect(taken.verdict).toEqual({ handle: true, pauseMs: 0 });
    }
  });
});

describe("the heartbeat", () => {
  it("closes a client that sends pongs of its own but never answers our pings", async () => {
    const heartbeatIntervalMs = 1_000;
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    server = await startTestServer({ heartbeatIntervalMs });
    const healthy = await server.connect(ALICE);
    const faker = await server.connect({ token: server.tokenFor(MALLORY), autoPong: false });
    for (let beat = 0; beat < 3 && faker.isOpen; beat += 1) {
      faker.ws.pong(Buffer.from("unsolicited"));
      faker.ws.pong();
      await faker.sync();
      await vi.advanceTimersByTimeAsync(heartbeatIntervalMs);
      if (faker.isOpen) await healthy.sync();
    }
    expect((await faker.closed()).code).toBe(1006);
    await eventually(() => expect(server?.core.hub.connectionCount(MALLORY)).toBe(0));
    await healthy.sync();
    expect(healthy.isOpen).toBe(true);
  });
});
