import { describe, expect, it } from "vitest";
import { ensureClusterSchema } from "../src/cluster/schema.ts";
import { type Core, createCore } from "../src/core.ts";
import type { Agent } from "../src/harness/agents/agent.ts";
import { createDemoAgent, createDemoTools } from "../src/harness/agents/demo.ts";
import { type RunLeaseOptions, RunLeases } from "../src/harness/run-leases.ts";
import { createLogger } from "../src/logger.ts";
import { ensureStoreSchema, STORE_PG_TYPES } from "../src/store/pg-schema.ts";
import { postgresSql } from "../src/store/sql.ts";
import { strings } from "../src/strings/index.ts";
import { fakeSurface, privateSession } from "./helpers/core.ts";
import { usePostgres } from "./helpers/postgres.ts";
import { until } from "./helpers/wait.ts";

/**
 * Runs across instances on one Postgres (issue 27): each run is held by the lease `run:<id>` of the instance
 * running it. A session has one run at a time across instances; a run given up (a deploy) or whose lease lapsed
 * is adopted by another instance at the waiting question; and the old holder, once it is not the holder, writes
 * nothing more of it (the fence).
 */

const pg = usePostgres();
const log = createLogger({ level: "silent" });

interface Instance {
  core: Core;
  leases: RunLeases;
  started: string[];
}

async function instance(
  name: string,
  leases: Partial<RunLeaseOptions> = {},
  agent: Agent = createDemoAgent(),
  now?: () => number,
  askTimeoutMs = 60_000,
): Promise<Instance> {
  const pool = pg().pool({ types: STORE_PG_TYPES });
  await ensureClusterSchema(pool);
  await ensureStoreSchema(pool);
  const sql = postgresSql(pool);
  const ownership = new RunLeases({
    sql,
    instance: `${name}:home-${name}`,
    home: `home-${name}`,
    log,
    adoptEveryMs: 60_000,
    ...leases,
  });
  let id = 0;
  const core = await createCore({
    sql,
    logger: log,
    agent,
    tools: createDemoTools({ stepMs: 0 }),
    askTimeoutMs,
    authSecret: "test-secret-0123456789",
    newId: () => `${name}-${++id}`,
    surfaces: [fakeSurface()],
    ownership,
    ...(now ? { now } : {}),
  });
  const started: string[] = [];
  core.runner.on("run_started", ({ run }) => started.push(run.id));
  return { core, leases: ownership, started };
}

async function close(...instances: Instance[]): Promise<void> {
  for (const { core } of instances) {
    await core.runner.stop();
    await core.hub.close();
  }
}

const pendingAsk = (core: Core, sessionId: string) =>
  until(() => core.registry.getPendingForSession(sessionId)[0], "a pending ask", 10_000, 5);

const answersTo = (ask: { questions: { question: string }[] }) => [
  { question: ask.questions[0]?.question ?? "", selectedLabels: ["Kubernetes"], customInput: null },
  { question: ask.questions[1]?.question ?? "", selectedLabels: ["多语言"], customInput: null },
];
const by = { surface: "fake", userId: "ou_a" };

async function runLeases(): Promise<{ name: string; holder: string; fence: number; live: boolean }[]> {
  const rows = await pg()
    .pool()
    .query<{ name: string; holder: string; fence: string; live: boolean }>(
      "SELECT name, holder, fence, expires_at > now() AS live FROM cluster_leases WHERE name LIKE 'run:%' ORDER BY name",
    );
  return rows.rows.map((row) => ({ ...row, fence: Number(row.fence) }));
}

describe("runs across instances", () => {
  it("queues a message to a session running on another instance, and the holder runs it after", async () => {
    const a = await instance("a");
    const b = await instance("b");
    try {
      const session = await a.core.runner.ensureSession(privateSession("ou_a"));
      const first = await a.core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "go" });
      expect(first.kind).toBe("started");
      expect(await runLeases()).toEqual([
        { name: `run:${a.started[0]}`, holder: "a:home-a", fence: 1, live: true },
      ]);
      // The same session through the other instance (a webhook POST behind a load balancer): it waits.
      const second = await b.core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "/quick" });
      expect(second).toMatchObject({ kind: "queued", position: 1 });
      // B finds no queue to drain while A's run is under way.
      await b.core.runner.recover();
      expect(b.started).toEqual([]);

      const ask = await pendingAsk(a.core, session.id);
      expect(await a.core.registry.complete(session.id, ask.requestId, answersTo(ask), by)).toEqual({
        ok: true,
      });
      await a.core.runner.idle();
      const runs = await a.core.runner.runs(session.id, 5);
      expect(runs.map((run) => [run.input, run.status])).toEqual([
        ["/quick", "completed"],
        ["go", "completed"],
      ]);
      expect(a.started).toHaveLength(2);
      expect(b.started).toEqual([]);
      // Ended runs hold nothing.
      expect(await runLeases()).toEqual([]);
    } finally {
      await close(a, b);
    }
  });

  it("hands a run an instance gave up (a deploy) to another at its next look, at the same question", async () => {
    const a = await instance("a");
    const b = await instance("b");
    try {
      const session = await a.core.runner.ensureSession(privateSession("ou_a"));
      const started = await a.core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "go" });
      if (started.kind !== "started") throw new Error("expected a start");
      const asked = await pendingAsk(a.core, session.id);
      // B was up before the question was asked: it holds it only once it adopts the run.
      expect(b.core.registry.getPendingForSession(session.id)).toEqual([]);
      expect(await b.core.runner.recover()).toEqual([]);

      await a.core.runner.stop();
      expect(await runLeases()).toEqual([
        { name: `run:${started.run.id}`, holder: "a:home-a", fence: 1, live: false },
      ]);
      const resumed = await b.core.runner.recover();
      expect(resumed.map((run) => run.id)).toEqual([started.run.id]);
      expect(await runLeases()).toEqual([
        { name: `run:${started.run.id}`, holder: "b:home-b", fence: 2, live: true },
      ]);
      const again = await pendingAsk(b.core, session.id);
      expect(again.requestId).toBe(asked.requestId);
      expect(await b.core.registry.complete(session.id, again.requestId, answersTo(again), by)).toEqual({
        ok: true,
      });
      await b.core.runner.idle();
      const run = await b.core.runner.getRun(started.run.id);
      expect(run?.status).toBe("completed");
      expect(run?.text).toContain("Kubernetes");
      const history = await b.core.store.history(session.id);
      expect(history.filter((m) => m.toolName === "ask_user_questions")).toHaveLength(1);
    } finally {
      await close(a, b);
    }
  });

  it("refuses the old holder's writes once its lapsed lease was adopted: it stops, the adopter ends the run once", async () => {
    // A renews nothing in this test: its lease lapses as if it had been paused past it.
    const a = await instance("a", { renewEveryMs: 600_000 });
    const b = await instance("b");
    try {
      const session = await a.core.runner.ensureSession(privateSession("ou_a"));
      const started = await a.core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "go" });
      if (started.kind !== "started") throw new Error("expected a start");
      const asked = await pendingAsk(a.core, session.id);
      await pg().pool().query("UPDATE cluster_leases SET expires_at = now() WHERE holder = 'a:home-a'");

      expect((await b.core.runner.recover()).map((run) => run.id)).toEqual([started.run.id]);
      const again = await pendingAsk(b.core, session.id);
      expect(again.requestId).toBe(asked.requestId);
      expect(await b.core.registry.complete(session.id, again.requestId, answersTo(again), by)).toEqual({
        ok: true,
      });
      // A hears of the answer too (a wake-up would tell it): its waiting call resumes, and its run goes on
      // believing it holds the run, until its first write meets the fence.
      await a.core.registry.reconcile(asked.requestId);
      await until(
        () => a.core.runner.activeRun(session.id) === undefined || undefined,
        "A to stop",
        10_000,
        5,
      );
      await b.core.runner.idle();
      await a.core.runner.idle();

      const run = await b.core.runner.getRun(started.run.id);
      expect(run?.status).toBe("completed");
      const history = await b.core.store.history(session.id);
      // One answer, one ending: the old holder's turns and its last message were refused.
      expect(history.filter((m) => m.role === "assistant" && m.content.startsWith("**完成**"))).toHaveLength(
        1,
      );
      expect(history.filter((m) => m.toolName === "ask_user_questions")).toHaveLength(1);
      expect(a.core.runner.activeRun(session.id)).toBeUndefined();
      expect(await runLeases()).toEqual([]);
      // A may not write the run's card any more (feishu/card-transport.ts fencedTransport); B did.
      expect(a.leases.lapsed(started.run.id)).toBe(true);
      expect(b.leases.lapsed(started.run.id)).toBe(false);
    } finally {
      await close(a, b);
    }
  });

  it("an instance paused past its lease sees the run lapsed at once, before a renewal; its asks' deadlines go", async () => {
    // A's hold is good for 0.8 s by its clock and never renewed; its question is due in 3 s; B, which adopts
    // it, runs ten minutes behind and so times it out far later.
    const hold = { ttlMs: 1_000, marginMs: 200, renewEveryMs: 600_000 };
    const a = await instance("a", hold, createDemoAgent(), undefined, 3_000);
    const b = await instance("b", {}, createDemoAgent(), () => Date.now() - 600_000);
    const pool = pg().pool();
    try {
      const session = await a.core.runner.ensureSession(privateSession("ou_a"));
      const started = await a.core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "go" });
      if (started.kind !== "started") throw new Error("expected a start");
      const asked = await pendingAsk(a.core, session.id);
      // Paused past its hold: A's own clock says so before any renewal or write could (no card PATCH goes out).
      await until(() => a.leases.lapsed(started.run.id) || undefined, "A's hold to lapse", 5_000, 5);
      const expired = async () => (await runLeases())[0]?.live === false || undefined;
      await until(expired, "the lease to expire", 5_000, 20);
      expect((await b.core.runner.recover()).map((run) => run.id)).toEqual([started.run.id]);
      // A's renewal finds the run gone: lost, so its question's deadline is not A's any more.
      await a.leases.renew();
      const stopped = () => a.core.runner.activeRun(session.id) === undefined || undefined;
      await until(stopped, "A to stop", 10_000, 5);
      // Past the deadline by A's clock: A times nothing out (B will, by its own, ten minutes later).
      await new Promise((resolve) => setTimeout(resolve, asked.expiresAt + 1_000 - Date.now()));
      const row = await pool.query<{ status: string }>("SELECT status FROM asks");
      expect(row.rows).toEqual([{ status: "pending" }]);
      expect(a.core.registry.get(asked.requestId)).toBeDefined(); // a copy: it shows, it times out nothing
    } finally {
      await close(a, b);
    }
  });

  it("leaves runs to the instances that can serve for a TTL while it cannot; adopts them after if nobody did", async () => {
    const a = await instance("a");
    const b = await instance("b", { ttlMs: 800, marginMs: 100, renewEveryMs: 100 });
    const c = await instance("c");
    try {
      const session = await a.core.runner.ensureSession(privateSession("ou_a"));
      const started = await a.core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "go" });
      if (started.kind !== "started") throw new Error("expected a start");
      await pendingAsk(a.core, session.id);
      await a.core.runner.stop();
      let serving = false;
      b.leases.serveWhen(() => serving);
      expect(await b.core.runner.recover()).toEqual([]);
      expect((await runLeases())[0]).toMatchObject({ holder: "a:home-a", live: false });
      // Serving now: at once.
      serving = true;
      expect((await b.core.runner.recover()).map((run) => run.id)).toEqual([started.run.id]);
      expect(await c.core.runner.recover()).toEqual([]);

      // Given up again, and nobody serves: left for a TTL (0.8 s), then adopted all the same.
      await b.core.runner.stop();
      serving = false;
      const d = await instance("d", { ttlMs: 800, marginMs: 100, renewEveryMs: 100 });
      try {
        d.leases.serveWhen(() => false);
        expect(await d.core.runner.recover()).toEqual([]);
        await new Promise((resolve) => setTimeout(resolve, 900));
        expect((await d.core.runner.recover()).map((run) => run.id)).toEqual([started.run.id]);
      } finally {
        await close(d);
      }
    } finally {
      await close(a, b, c);
    }
  });

  it("ends a run whose agent lives on its host when an instance of another home adopts it, saying why", async () => {
    // An ACP agent's process and workspace stay on the disk that ran it (the demo agent, pinned like one).
    const pinned = (): Agent => ({ ...createDemoAgent(), pinned: async () => true });
    const a = await instance("a", {}, pinned());
    const elsewhere = await instance("b", {}, pinned());
    try {
      const session = await a.core.runner.ensureSession(privateSession("ou_a"));
      const started = await a.core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "go" });
      if (started.kind !== "started") throw new Error("expected a start");
      const asked = await pendingAsk(a.core, session.id);
      await a.core.runner.stop();

      expect((await elsewhere.core.runner.recover()).map((run) => run.id)).toEqual([started.run.id]);
      await elsewhere.core.runner.idle();
      const run = await elsewhere.core.runner.getRun(started.run.id);
      expect(run).toMatchObject({ status: "failed", error: strings.acp.hostGone });
      // The run's end cancels its questions without waiting for the rows (runner.ts): read once they landed.
      const cancelled = async () =>
        (await elsewhere.core.registry.state(asked.requestId))?.status === "cancelled" || undefined;
      await until(cancelled, "the question cancelled", 10_000, 10);
      expect(await runLeases()).toEqual([]);
    } finally {
      await close(a, elsewhere);
    }
  });

  it("resumes a pinned run on the instance that restarts on its DATA_DIR", async () => {
    const pinned = (): Agent => ({ ...createDemoAgent(), pinned: async () => true });
    const before = await instance("a", {}, pinned());
    const session = await before.core.runner.ensureSession(privateSession("ou_a"));
    const started = await before.core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "go" });
    if (started.kind !== "started") throw new Error("expected a start");
    const asked = await pendingAsk(before.core, session.id);
    await close(before);
    // The same home (the id kept in its DATA_DIR), a new process.
    const after = await instance("a", { instance: "a2:home-a" }, pinned());
    try {
      expect((await after.core.runner.recover()).map((run) => run.id)).toEqual([started.run.id]);
      const again = await pendingAsk(after.core, session.id);
      expect(again.requestId).toBe(asked.requestId);
      expect(await after.core.registry.complete(session.id, again.requestId, answersTo(again), by)).toEqual({
        ok: true,
      });
      await after.core.runner.idle();
      expect(await after.core.runner.getRun(started.run.id)).toMatchObject({ status: "completed" });
    } finally {
      await close(after);
    }
  });
});
