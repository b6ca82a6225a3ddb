import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { DatabaseUnavailableError } from "../src/cluster/errors.ts";
import { type Core, createCore } from "../src/core.ts";
import { createDemoAgent, createDemoTools } from "../src/harness/agents/demo.ts";
import { type SeveralInstances, severalInstances } from "../src/instances.ts";
import { createLogger } from "../src/logger.ts";
import { type OpenedStore, openStore } from "../src/store/open.ts";
import { fakeSurface, privateSession } from "./helpers/core.ts";
import { usePostgres } from "./helpers/postgres.ts";
import { until } from "./helpers/wait.ts";

/**
 * Postgres away for 10 s under two instances (issue 27): what needs the database is refused with the outage's
 * error (503, Feishu redelivers), nothing crashes, and afterwards, in the same processes, the task waiting on a
 * question is held again (adopted by one of them at the same question) and its answer ends it once.
 */

const pg = usePostgres({ own: true });
const log = createLogger({ level: "silent" });
const LEASE_MS = 2_000;

interface Instance {
  core: Core;
  instances: SeveralInstances;
  store: OpenedStore;
}

async function instance(name: string): Promise<Instance> {
  const database = { kind: "postgres" as const, url: pg().url, leaseMs: LEASE_MS };
  const store = await openStore({ database });
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `fpb-${name}-`));
  const instances = severalInstances(store, { dataDir, database }, log);
  if (!instances) throw new Error("Postgres gives several instances");
  let id = 0;
  const core = await createCore({
    sql: store.sql,
    logger: log,
    agent: createDemoAgent(),
    tools: createDemoTools({ stepMs: 0 }),
    askTimeoutMs: 120_000,
    authSecret: "test-secret-0123456789",
    newId: () => `${name}-${++id}`,
    surfaces: [fakeSurface()],
    ownership: instances.ownership,
  });
  instances.connect(core);
  await core.runner.recover(); // starts the looks for runs to adopt, as main.ts does
  return { core, instances, store };
}

describe("several instances while Postgres is away", () => {
  it("refuses what needs the store for 10 s, then holds the waiting task again and ends it once", async () => {
    const server = pg().server;
    if (!server) throw new Error("this test starts its own server");
    const a = await instance("a");
    const b = await instance("b");
    try {
      const session = await a.core.runner.ensureSession(privateSession("ou_a"));
      const started = await a.core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "go" });
      if (started.kind !== "started") throw new Error("expected a start");
      const asked = await until(
        () => a.core.registry.getPendingForSession(session.id)[0],
        "a question",
        10_000,
        5,
      );

      await server.stop();
      const outageStarted = Date.now();
      // A message cannot be recorded: refused with the outage's error, for the channel to say 503.
      await expect(
        b.core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "/quick" }),
      ).rejects.toBeInstanceOf(DatabaseUnavailableError);
      // An answer cannot be decided without its row: refused, the question stays open.
      const answers = [
        { question: asked.questions[0]?.question ?? "", selectedLabels: ["Kubernetes"], customInput: null },
        { question: asked.questions[1]?.question ?? "", selectedLabels: ["多语言"], customInput: null },
      ];
      const by = { surface: "fake", userId: "ou_a" };
      await expect(a.core.registry.complete(session.id, asked.requestId, answers, by)).rejects.toBeInstanceOf(
        DatabaseUnavailableError,
      );
      // A's hold on the task lapses on its own clock: it stops the task, unwritten, its question left pending.
      await until(
        () => a.core.runner.activeRun(session.id) === undefined || undefined,
        "A to give the task up",
        10_000,
      );
      const left = 10_000 - (Date.now() - outageStarted);
      if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
      await server.start();

      // Back: one of the two adopts the task at the same question, without a restart.
      const holder = await until(
        () =>
          [a, b].find(
            (one) =>
              one.core.registry.getPendingForSession(session.id)[0]?.requestId === asked.requestId &&
              one.core.runner.activeRun(session.id),
          ),
        "an instance to hold the task again",
        30_000,
        50,
      );
      expect(await holder.core.registry.complete(session.id, asked.requestId, answers, by)).toEqual({
        ok: true,
      });
      await until(
        async () => (await holder.core.runner.getRun(started.run.id))?.status === "completed" || undefined,
        "the task to end",
        15_000,
      );
      // The run's state is said before its last message lands (runner.ts): read the history once it has.
      await holder.core.runner.idle();
      const history = await holder.core.store.history(session.id);
      expect(history.filter((m) => m.toolName === "ask_user_questions")).toHaveLength(1);
      expect(history.filter((m) => m.role === "assistant" && m.content.startsWith("**完成**"))).toHaveLength(
        1,
      );
    } finally {
      for (const one of [a, b]) {
        await one.core.runner.stop();
        await one.core.hub.close();
        await one.instances.close();
        await one.store.close();
      }
    }
  }, 90_000);
});
