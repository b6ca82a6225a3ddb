import fs from "node:fs";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { createApp } from "../src/app.ts";
import type { PendingAsk } from "../src/asks/pending.ts";
import type { AskQuestion } from "../src/asks/schema.ts";
import { signToken } from "../src/auth/token.ts";
import type { SessionInfo } from "../src/domain/types.ts";
import { sampleAsk } from "../test/fixtures.ts";
import { buildCore, type TestCore } from "../test/helpers/core.ts";
import { createSession } from "../test/helpers/harness.ts";
import { all, type Check, zero } from "./checks.ts";
import {
  type BenchOptions,
  clock,
  fmtBytes,
  fmtInt,
  fmtMs,
  heapUsed,
  percentile,
  printTable,
  silentLogger,
} from "./common.ts";
import { startTsWorker } from "./worker.ts";
import type { WsRequest, WsResponse } from "./ws-clients-worker.ts";

/**
 * Benchmark 4: one process holding many pending asks and WebSocket connections. The core is the real one
 * (registry, SQLite audit, hub); the clients run in a worker thread, so the heap figures are the server's.
 */

const AUTH_SECRET = "test-secret-0123456789"; // the one buildCore signs with
const ASKS_PER_SESSION = 2;

export interface ScaleResult {
  asks: number;
  connections: number;
  heapPerAsk: number;
  registerPerSecond: number;
  completePerSecond: number;
  registerPerSecondConnected: number;
  completePerSecondConnected: number;
  heapPerConnection: number;
  rssPerConnection: number;
  connectMs: number;
  resendOneP50: number;
  resendOneP99: number;
  stormMs: number;
  stormP50: number;
  stormP99: number;
  /** `complete` calls the registry refused (each ask is completed once, by its answerer). */
  refusedCompletes: number;
  /** Asks still pending after every one was completed. */
  leftPending: number;
  /** Clients that had all their pending asks again: on the first connect, one by one, all at once. */
  clientsServed: { connect: number; one: number; oneOf: number; storm: number };
}

/** The figures are figures; what must hold is that every ask settles once and every client gets its asks. */
export function scaleChecks(r: ScaleResult): Check[] {
  const b = "scale";
  return [
    zero(b, "completes refused", r.refusedCompletes),
    zero(b, "asks left pending", r.leftPending),
    all(b, "clients with their asks after connecting", r.clientsServed.connect, r.connections),
    all(b, "clients with their asks after one reconnect", r.clientsServed.one, r.clientsServed.oneOf),
    all(b, "clients with their asks after all reconnect", r.clientsServed.storm, r.connections),
  ];
}

export async function runScale(options: BenchOptions): Promise<Check[]> {
  const connections = options.quick ? 1000 : 5000;
  const asks = connections * ASKS_PER_SESSION;
  const core = await buildCore({ agent: { name: "idle", run: () => new Promise(() => undefined) } });
  const sessions = await Promise.all(
    Array.from({ length: connections }, (_, i) =>
      createSession(core, `ou_user${String(i).padStart(27, "0")}`),
    ),
  );
  const { server, url } = await listen(core, connections);
  const clients = startTsWorker<WsRequest, WsResponse>(new URL("./ws-clients-worker.ts", import.meta.url));
  try {
    // Pending asks, nobody connected: the registry, its timers and promises, one audit row each.
    const before = heapUsed();
    const questions = sessions.flatMap(() =>
      Array.from({ length: ASKS_PER_SESSION }, () => freshQuestions()),
    );
    let refusedCompletes = 0;
    let started = clock();
    let pending = await registerAll(core, sessions, questions);
    const registerPerSecond = asks / ((clock() - started) / 1000);
    const heapPerAsk = (heapUsed() - before) / asks;
    started = clock();
    refusedCompletes += await completeAll(core, pending);
    const completePerSecond = asks / ((clock() - started) / 1000);

    // Every session's owner connects and subscribes; each connection gets its session's pending asks.
    pending = await registerAll(core, sessions, questions);
    const heapBefore = heapUsed();
    const rssBefore = process.memoryUsage().rss;
    const connected = await clients.call({
      op: "connect",
      url,
      asksPerClient: ASKS_PER_SESSION,
      clients: sessions.map((s) => ({
        token: signToken(AUTH_SECRET, s.ownerId, Date.now() + 3_600_000),
        sessionId: s.id,
      })),
    });
    const heapPerConnection = (heapUsed() - heapBefore) / connections;
    const rssPerConnection = (process.memoryUsage().rss - rssBefore) / connections;

    // One client drops and comes back (200 times, one after another), then all of them at once.
    const oneIndices = sample(connections, 200);
    const one = await clients.call({ op: "reconnect", indices: oneIndices, concurrency: 1 });
    const storm = await clients.call({
      op: "reconnect",
      indices: sessions.map((_, i) => i),
      concurrency: connections,
    });

    // The same asks settled and asked again while every owner is connected: each event is fanned out.
    started = clock();
    refusedCompletes += await completeAll(core, pending);
    const completePerSecondConnected = asks / ((clock() - started) / 1000);
    started = clock();
    pending = await registerAll(core, sessions, questions);
    const registerPerSecondConnected = asks / ((clock() - started) / 1000);
    refusedCompletes += await completeAll(core, pending);

    const result: ScaleResult = {
      asks,
      connections,
      heapPerAsk,
      registerPerSecond,
      completePerSecond,
      registerPerSecondConnected,
      completePerSecondConnected,
      heapPerConnection,
      rssPerConnection,
      connectMs: connected.ms,
      resendOneP50: percentile(one.subscribeToAsksMs, 50),
      resendOneP99: percentile(one.subscribeToAsksMs, 99),
      stormMs: storm.ms,
      stormP50: percentile(storm.reconnectToAsksMs, 50),
      stormP99: percentile(storm.reconnectToAsksMs, 99),
      refusedCompletes,
      leftPending: sessions.reduce((n, s) => n + core.registry.getPendingForSession(s.id).length, 0),
      clientsServed: {
        connect: connected.subscribeToAsksMs.length,
        one: one.subscribeToAsksMs.length,
        oneOf: oneIndices.length,
        storm: storm.reconnectToAsksMs.length,
      },
    };
    printScale(result);
    return scaleChecks(result);
  } finally {
    await clients.call({ op: "close" }).catch(() => undefined);
    await clients.close();
    await core.close();
    await new Promise((resolve) => server.close(resolve));
    fs.rmSync(path.dirname(core.dbFile), { recursive: true, force: true });
  }
}

async function listen(core: TestCore, connections: number) {
  const { server } = createApp({
    registry: core.registry,
    runner: core.runner,
    hub: core.hub,
    logger: silentLogger,
    // Desktop clients connect from many addresses; every one of this benchmark's comes from 127.0.0.1, so it gets
    // room for all of them (the per-address share is measured in RELIABILITY.md, not here).
    serverLimits: { maxConnections: connections * 2 + 100, maxConnectionsPerAddress: connections * 2 + 100 },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/ws` };
}

/** Each ask holds its own copy of the questions, as the tool's parsed arguments do. */
function freshQuestions(): AskQuestion[] {
  return structuredClone(sampleAsk().questions) as AskQuestion[];
}

async function registerAll(
  core: TestCore,
  sessions: SessionInfo[],
  questions: AskQuestion[][],
): Promise<PendingAsk[]> {
  const asks: PendingAsk[] = [];
  for (const [i, qs] of questions.entries()) {
    const session = sessions[Math.floor(i / ASKS_PER_SESSION)]!;
    const ask = await core.registry.register({
      sessionId: session.id,
      runId: `run-${session.id}`,
      answererId: session.ownerId,
      questions: qs,
      metadata: { source: "bench" },
      surfaces: ["websocket"],
    });
    // The tool call waits on it, as the dispatcher does.
    void core.registry.waitForAnswer(ask.requestId);
    asks.push(ask);
  }
  return asks;
}

/** Completes every ask as its answerer would; returns how many the registry refused. */
async function completeAll(core: TestCore, asks: PendingAsk[]): Promise<number> {
  let refused = 0;
  for (const ask of asks) {
    const answers = ask.questions.map((q) => ({
      question: q.question,
      selectedLabels: [q.options[0]?.label ?? ""],
      customInput: null,
    }));
    const won = await core.registry.complete(ask.sessionId, ask.requestId, answers, {
      surface: "websocket",
      userId: ask.answererId,
    });
    if (!won.ok) refused += 1;
  }
  return refused;
}

function sample(size: number, count: number): number[] {
  const step = Math.max(1, Math.floor(size / count));
  return Array.from({ length: Math.min(count, size) }, (_, i) => i * step);
}

function printScale(r: ScaleResult): void {
  const rate = (n: number) => `${fmtInt(n)}/s`;
  printTable(
    `4. One process: ${fmtInt(r.asks)} pending asks, ${fmtInt(r.connections)} WebSocket connections`,
    ["measure", "value"],
    [
      ["heap per pending ask (questions included)", fmtBytes(r.heapPerAsk)],
      ["register, nobody connected", rate(r.registerPerSecond)],
      ["complete, nobody connected", rate(r.completePerSecond)],
      [`register, ${fmtInt(r.connections)} owners connected`, rate(r.registerPerSecondConnected)],
      [`complete, ${fmtInt(r.connections)} owners connected`, rate(r.completePerSecondConnected)],
      ["server heap per connection (subscribed)", fmtBytes(r.heapPerConnection)],
      ["process RSS per connection (server and clients)", fmtBytes(r.rssPerConnection)],
      [`connect + subscribe all ${fmtInt(r.connections)} (200 at a time)`, fmtMs(r.connectMs)],
      ["one client reconnects: subscribe → its asks, p50", fmtMs(r.resendOneP50)],
      ["one client reconnects: subscribe → its asks, p99", fmtMs(r.resendOneP99)],
      [`all ${fmtInt(r.connections)} reconnect at once: until the last has its asks`, fmtMs(r.stormMs)],
      ["… per client, connect → its asks, p50", fmtMs(r.stormP50)],
      ["… per client, connect → its asks, p99", fmtMs(r.stormP99)],
    ],
  );
}
