import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { extendRunAsks } from "../src/asks/person-actions.ts";
import { type Core, createCore } from "../src/core.ts";
import { createDemoAgent, createDemoTools } from "../src/harness/agents/demo.ts";
import { type SeveralInstances, severalInstances } from "../src/instances.ts";
import { createLogger } from "../src/logger.ts";
import { type OpenedStore, openStore } from "../src/store/open.ts";
import { fakeSurface, privateSession } from "./helpers/core.ts";
import { usePostgres } from "./helpers/postgres.ts";
import { until } from "./helpers/wait.ts";

/**
 * A person's command for a task another instance runs (issue 27): 取消 (or 取消并处理新消息) reaching an instance
 * that does not run the task is checked there against the run's row (only its sender), then carried to the
 * holder (a work row and a wake-up), which does it. Built as main.ts builds an instance (instances.ts).
 */

const pg = usePostgres();
const log = createLogger({ level: "silent" });

interface Instance {
  core: Core;
  instances: SeveralInstances;
  store: OpenedStore;
}

async function instance(name: string, askTimeoutMs = 60_000): Promise<Instance> {
  const store = await openStore({ database: { kind: "postgres", url: pg().url, leaseMs: 2_000 } });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `fpb-${name}-`));
  const instances = severalInstances(store, { dataDir, database: { url: pg().url, leaseMs: 2_000 } }, log);
  if (!instances) throw new Error("Postgres gives several instances");
  let id = 0;
  const core = await createCore({
    sql: store.sql,
    logger: log,
    agent: createDemoAgent(),
    tools: createDemoTools({ stepMs: 0 }),
    askTimeoutMs,
    authSecret: "test-secret-0123456789",
    newId: () => `${name}-${++id}`,
    surfaces: [fakeSurface()],
    ownership: instances.ownership,
  });
  instances.connect(core);
  return { core, instances, store };
}

async function close(...all: Instance[]): Promise<void> {
  for (const { core, instances, store } of all) {
    await core.runner.stop();
    await core.hub.close();
    await instances.close();
    await store.close();
  }
}

describe("commands across instances", () => {
  it("cancels a task another instance runs, for its sender only, by a forwarded command", async () => {
    const a = await instance("a");
    const b = await instance("b");
    try {
      const session = await a.core.runner.ensureSession(privateSession("ou_a"));
      const started = await a.core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "go" });
      if (started.kind !== "started") throw new Error("expected a start");
      await until(() => a.core.registry.getPendingForSession(session.id)[0], "a pending ask", 10_000, 5);

      // Someone else, through B: refused from the run's row, nothing sent.
      expect(await b.core.runner.cancel(session.id, "ou_b")).toEqual({ ok: false, reason: "forbidden" });
      // Nothing queued to replace the run with.
      expect(await b.core.runner.replace(session.id, "ou_a")).toEqual({ ok: false, reason: "not_found" });
      expect(a.core.runner.activeRun(session.id)?.id).toBe(started.run.id);

      expect(await b.core.runner.cancel(session.id, "ou_a")).toEqual({ ok: true });
      await until(
        () => a.core.runner.activeRun(session.id) === undefined || undefined,
        "A's run to stop",
        10_000,
      );
      await a.core.runner.idle();
      expect(await a.core.runner.getRun(started.run.id)).toMatchObject({ status: "cancelled" });
      expect(await b.core.runner.getRun(started.run.id)).toMatchObject({ status: "cancelled" });
      // Ended: a second cancel finds nothing running anywhere.
      expect(await b.core.runner.cancel(session.id, "ou_a")).toEqual({ ok: false, reason: "not_running" });
    } finally {
      await close(a, b);
    }
  });

  it("lets the queued message replace a task another instance runs", async () => {
    const a = await instance("a");
    const b = await instance("b");
    try {
      const session = await a.core.runner.ensureSession(privateSession("ou_a"));
      const started = await a.core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "go" });
      if (started.kind !== "started") throw new Error("expected a start");
      await until(() => a.core.registry.getPendingForSession(session.id)[0], "a pending ask", 10_000, 5);
      expect(
        await b.core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "/quick" }),
      ).toMatchObject({
        kind: "queued",
      });
      expect(await b.core.runner.replace(session.id, "ou_a")).toEqual({ ok: true });
      await until(
        async () =>
          (await a.core.runner.runs(session.id, 5)).find((run) => run.input === "/quick" && run.endedAt),
        "the queued message to run",
        10_000,
      );
      const runs = await a.core.runner.runs(session.id, 5);
      expect(runs.map((run) => [run.input, run.status])).toEqual([
        ["/quick", "completed"],
        ["go", "cancelled"],
      ]);
    } finally {
      await close(a, b);
    }
  });

  it("moves the deadline of a question another instance holds (延长), and its timer follows", async () => {
    // A's question would time out 1.5 s after it is asked.
    const a = await instance("a", 1_500);
    const b = await instance("b");
    try {
      const session = await a.core.runner.ensureSession(privateSession("ou_a"));
      const started = await a.core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "go" });
      if (started.kind !== "started") throw new Error("expected a start");
      const ask = await until(
        () => a.core.registry.getPendingForSession(session.id)[0],
        "a pending ask",
        10_000,
        5,
      );
      const before = ask.expiresAt;
      const extended: string[] = [];
      a.core.registry.on("extended", (moved) => extended.push(moved.requestId));
      const times = { extendMs: 60_000, extendMaxMs: 120_000 };
      const run = { sessionId: session.id, runId: started.run.id };
      expect(await extendRunAsks(b.core.registry, run, "ou_b", times)).toEqual({
        ok: false,
        reason: "forbidden",
      });
      expect(await extendRunAsks(b.core.registry, run, "ou_a", times)).toMatchObject({
        ok: true,
        earliest: before + 60_000,
      });
      // The holder hears of it (the wake-up), so its card can show it, and its timer waits for the new deadline.
      await until(() => extended.includes(ask.requestId) || undefined, "A to hear of the 延长", 10_000);
      expect(a.core.registry.get(ask.requestId)?.expiresAt).toBe(before + 60_000);
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      expect(await a.core.registry.state(ask.requestId)).toMatchObject({ status: "pending" });
    } finally {
      await close(a, b);
    }
  });
});
