import fs from "node:fs";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { createApp } from "../src/app.ts";
import { connectAskWakeups } from "../src/ask-wakeups.ts";
import { signToken } from "../src/auth/token.ts";
import { ensureClusterSchema } from "../src/cluster/schema.ts";
import { createWakeups } from "../src/cluster/wakeups.ts";
import { type Core, createCore } from "../src/core.ts";
import { createDemoAgent, createDemoTools } from "../src/harness/agents/demo.ts";
import { AnnouncedRunLeases, connectRunWakeups } from "../src/harness/run-wakeups.ts";
import { severalInstances } from "../src/instances.ts";
import { createLogger } from "../src/logger.ts";
import { ensureStoreSchema, STORE_PG_TYPES } from "../src/store/pg-schema.ts";
import { postgresSql } from "../src/store/sql.ts";
import type { ServerFrame } from "../src/ws/protocol.ts";
import { fakeSurface, privateSession } from "./helpers/core.ts";
import { TestClient } from "./helpers/harness.ts";
import { usePostgres } from "./helpers/postgres.ts";
import { until } from "./helpers/wait.ts";

/**
 * Runs across instances, as a page sees them (issue 27): two instances on one real Postgres, a real WebSocket
 * client connected to the one that does not run the task. It sees the task start, ask (with the request id
 * of the instance that asked), queue and end, by the wake-ups alone (the poll is a minute), and its answer
 * resumes the call waiting on the other instance. With the wake-ups sent where nobody listens, the poll
 * makes them up. The instance that only shows a run never tells its own cards of it.
 */

const pg = usePostgres();
const log = createLogger({ level: "silent" });
const SECRET = "test-secret-0123456789";
const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** `main`: wired by severalInstances as main.ts wires it; otherwise by hand, to lose wake-ups on purpose. */
type Wiring = "main" | { notifyChannel?: string; pollIntervalMs?: number };

interface Instance {
  core: Core;
  port: number;
  /** Runs this instance's own feed (what its cards follow) told of. */
  own: string[];
}

async function instance(name: string, wiring: Wiring = "main"): Promise<Instance> {
  const pool = pg().pool({ types: STORE_PG_TYPES });
  await ensureClusterSchema(pool);
  await ensureStoreSchema(pool);
  const sql = postgresSql(pool);
  const several =
    wiring === "main"
      ? severalInstances(
          { dialect: "postgres", pool, sql, describe: "test", close: async () => {} },
          {
            dataDir: fs.mkdtempSync(path.join(os.tmpdir(), `fpb-${name}-`)),
            database: { url: pg().url, leaseMs: 60_000 },
          },
          log,
        )
      : undefined;
  const leases =
    several?.ownership ??
    new AnnouncedRunLeases({ sql, instance: `${name}:h`, home: "h", log, adoptEveryMs: 60_000 });
  let id = 0;
  const core = await createCore({
    sql,
    logger: log,
    agent: createDemoAgent(),
    tools: createDemoTools({ stepMs: 0 }),
    askTimeoutMs: 60_000,
    authSecret: SECRET,
    newId: () => `${name}-${++id}`,
    surfaces: [fakeSurface()],
    ownership: leases,
  });
  if (several) {
    several.connect(core);
    closers.push(() => several.close());
  } else if (wiring !== "main" && leases instanceof AnnouncedRunLeases) {
    const wakeups = createWakeups({
      connectionString: pg().url,
      channel: pg().schema,
      pollIntervalMs: wiring.pollIntervalMs ?? 60_000,
      log,
    });
    const sending = { db: pool, channel: wiring.notifyChannel ?? pg().schema, log };
    const offAsks = connectAskWakeups(core.registry, wakeups, sending);
    const runs = connectRunWakeups({ ...core, ...sending, leases, wakeups });
    wakeups.start();
    await until(() => wakeups.listening(), `${name}'s listener`);
    closers.push(async () => {
      offAsks();
      await runs.close();
      await wakeups.close();
      await leases.close();
    });
  }
  const { server } = createApp({ ...core, logger: log });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const own: string[] = [];
  core.runs.on("run_started", ({ run }) => own.push(run.id));
  closers.push(async () => {
    await core.runner.stop();
    await core.hub.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { core, port: (server.address() as AddressInfo).port, own };
}

async function watch(on: Instance, userId: string, sessionId: string) {
  const token = signToken(SECRET, userId, Date.now() + 3_600_000);
  const ws = new WebSocket(`ws://127.0.0.1:${on.port}/ws?token=${token}`);
  closers.push(() => ws.terminate());
  const client = new TestClient(ws);
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
  });
  client.send({ type: "subscribe", sessionId });
  const subscribed = await client.next("subscribed");
  return { client, subscribed };
}

type Snapshot = Extract<ServerFrame, { type: "session_snapshot" }>;
/** Within 3 s: shorter than the 5 s poll of the `main` wiring, so only a wake-up brings it in time. */
const snapshot = (client: TestClient, match: (data: Snapshot["data"]) => boolean) =>
  client.next("session_snapshot", (frame) => match(frame.data), 3_000);

/** The demo's two questions answered, from the question frame itself. */
function answerFrame(frame: Extract<ServerFrame, { type: "ask_user_questions" }>) {
  const [deploy, features] = frame.data.questions.map((question) => question.question);
  return {
    type: "ask_user_questions_result",
    sessionId: frame.sessionId,
    data: {
      requestId: frame.data.requestId,
      answers: [
        { question: deploy, selectedLabels: ["Kubernetes"], customInput: null },
        { question: features, selectedLabels: ["多语言"], customInput: null },
      ],
    },
  };
}

async function started(on: Instance, sessionId: string, text: string): Promise<string> {
  const result = await on.core.runner.submit({ sessionId, senderId: "ou_a", text });
  if (result.kind !== "started") throw new Error(`expected a start, got ${result.kind}`);
  return result.run.id;
}

describe("runs across instances, on a page", () => {
  it("a page on B sees A's task start, ask with A's request id, and end; its answer resumes A's call", async () => {
    const a = await instance("a");
    const b = await instance("b");
    const session = await a.core.runner.ensureSession(privateSession("ou_a"));
    const { client } = await watch(b, "ou_a", session.id);
    expect((await client.next("session_snapshot")).data).toMatchObject({ active: false, run: null });

    const runId = await started(a, session.id, "go");
    const live = await snapshot(client, (data) => data.active && data.run?.id === runId);
    expect(live.data.run).toMatchObject({ status: "running", senderId: "ou_a", input: "go" });
    const asked = await client.next("ask_user_questions", () => true, 3_000);
    const onA = await until(() => a.core.registry.getPendingForSession(session.id)[0], "a's ask");
    expect(asked.data.requestId).toBe(onA.requestId);
    expect(asked.data.expiresAt).toBe(onA.expiresAt);

    // A second page opened now finds the task under way and the question, and may answer it.
    const late = await watch(b, "ou_a", session.id);
    expect(late.subscribed.data.canAnswer).toBe(true);
    expect((await late.client.next("session_snapshot")).data).toMatchObject({
      active: true,
      run: { id: runId },
    });
    expect((await late.client.next("ask_user_questions")).data.requestId).toBe(onA.requestId);

    client.send(answerFrame(asked));
    expect((await client.next("ask_user_questions_accepted")).data.requestId).toBe(onA.requestId);
    await client.next("ask_user_questions_cancelled", (frame) => frame.data.requestId === onA.requestId);
    const done = await snapshot(client, (data) => data.run?.status === "completed");
    expect(done.data).toMatchObject({ active: false, run: { id: runId } });
    // The answer went to the call waiting on A: the task ended there, with the choices made on B's page.
    expect((await a.core.runner.getRun(runId))?.status).toBe("completed");
    expect(done.data.run?.steps.map((step) => step.title).join(" ")).toContain("Kubernetes");
    // B showed the task and ran nothing: its own feed, which its cards follow, never heard of it.
    expect(a.own).toEqual([runId]);
    expect(b.own).toEqual([]);
  });

  it("a queue on either instance shows on the other, and the task it starts on A shows on B", async () => {
    const a = await instance("a");
    const b = await instance("b");
    const session = await a.core.runner.ensureSession(privateSession("ou_a"));
    const onB = await watch(b, "ou_a", session.id);
    const onA = await watch(a, "ou_a", session.id);
    const first = await started(a, session.id, "go");
    const asked = await onB.client.next("ask_user_questions", () => true, 3_000);

    // Queued through A (A runs the session): B's page shows it.
    expect(
      await a.core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "/quick" }),
    ).toMatchObject({
      kind: "queued",
    });
    await snapshot(onB.client, (data) => data.queuedCount === 1 && data.queued[0]?.text === "/quick");
    // Queued through B (a webhook that reached B): A's page shows it.
    expect(
      await b.core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "/quick 2" }),
    ).toMatchObject({
      kind: "queued",
      position: 2,
    });
    await snapshot(onA.client, (data) => data.queuedCount === 2 && data.queued[1]?.text === "/quick 2");

    onB.client.send(answerFrame(asked));
    // A drains its queue: both queued messages run there, one after the other, and B's page follows.
    const last = await snapshot(
      onB.client,
      (data) => data.run?.input === "/quick 2" && data.run.status === "completed" && data.queuedCount === 0,
    );
    expect(last.data.active).toBe(false);
    await until(async () => (await a.core.runner.runs(session.id, 5)).length === 3, "a's three runs");
    expect(a.own).toHaveLength(3);
    expect(a.own[0]).toBe(first);
    expect(b.own).toEqual([]);
  });

  it("with every wake-up of A lost, B's poll shows the task, its question and its end all the same", async () => {
    const a = await instance("a", { notifyChannel: "nobody_listens" });
    const b = await instance("b", { pollIntervalMs: 300 });
    const session = await a.core.runner.ensureSession(privateSession("ou_a"));
    const { client } = await watch(b, "ou_a", session.id);
    const runId = await started(a, session.id, "go");
    await snapshot(client, (data) => data.active && data.run?.id === runId);
    const asked = await client.next("ask_user_questions", () => true, 3_000);
    // B's own wake-ups do reach A: the answer given on B resumes A's call at once.
    client.send(answerFrame(asked));
    await client.next("ask_user_questions_accepted");
    const done = await snapshot(client, (data) => data.run?.status === "completed");
    expect(done.data).toMatchObject({ active: false, run: { id: runId } });
    expect(b.own).toEqual([]);
  });
});
