import { describe, expect, it } from "vitest";
import { type Core, createCore } from "../src/core.ts";
import { createDemoAgent, createDemoTools } from "../src/harness/agents/demo.ts";
import { createLogger } from "../src/logger.ts";
import { ensureStoreSchema, STORE_PG_TYPES } from "../src/store/pg-schema.ts";
import { postgresSql } from "../src/store/sql.ts";
import { fakeSurface, privateSession } from "./helpers/core.ts";
import { usePostgres } from "./helpers/postgres.ts";
import { until } from "./helpers/wait.ts";

/**
 * The bot's core (runner, registry, dispatcher) on Postgres alone (issue 27): a task asks, is answered and ends;
 * messages queue behind it; and a process that stops mid-question leaves a run another process on the same
 * database resumes at the waiting call, the same question (same request id), whose answer ends the original task.
 * That restart path is what takeover builds on.
 */

const pg = usePostgres();

async function coreOn(pool: ReturnType<ReturnType<typeof pg>["pool"]>): Promise<Core> {
  let id = 0;
  const prefix = Math.random().toString(36).slice(2, 8);
  return createCore({
    sql: postgresSql(pool),
    logger: createLogger({ level: "silent" }),
    agent: createDemoAgent(),
    tools: createDemoTools({ stepMs: 0 }),
    askTimeoutMs: 60_000,
    authSecret: "test-secret-0123456789",
    newId: () => `${prefix}-${++id}`,
    surfaces: [fakeSurface()],
  });
}

const pendingAsk = (core: Core, sessionId: string) =>
  until(() => core.registry.getPendingForSession(sessionId)[0], "a pending ask", 10_000, 5);

const answersTo = (ask: { questions: { question: string }[] }) => [
  { question: ask.questions[0]?.question ?? "", selectedLabels: ["Kubernetes"], customInput: null },
  { question: ask.questions[1]?.question ?? "", selectedLabels: ["多语言"], customInput: null },
];

describe("the core on Postgres", () => {
  it("runs a task that asks, queues the next message behind it, and runs that one after", async () => {
    const pool = pg().pool({ types: STORE_PG_TYPES });
    await ensureStoreSchema(pool);
    const core = await coreOn(pool);
    try {
      const session = await core.runner.ensureSession(privateSession("ou_a"));
      const first = await core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "go" });
      const second = await core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "/quick" });
      expect(first.kind).toBe("started");
      expect(second).toMatchObject({ kind: "queued", position: 1 });
      const ask = await pendingAsk(core, session.id);
      const by = { surface: "fake", userId: "ou_a" };
      expect(await core.registry.complete(session.id, ask.requestId, answersTo(ask), by)).toEqual({
        ok: true,
      });
      await core.runner.idle();
      const runs = await core.runner.runs(session.id, 5);
      expect(runs.map((run) => [run.input, run.status])).toEqual([
        ["/quick", "completed"],
        ["go", "completed"],
      ]);
      expect(runs[1]?.text).toContain("Kubernetes");
      expect(await core.runner.queued(session.id)).toEqual([]);
    } finally {
      await core.runner.stop();
      await core.hub.close();
    }
  });

  it("resumes on another process a task a stopped one left waiting, at the same question", async () => {
    const pool = pg().pool({ types: STORE_PG_TYPES });
    await ensureStoreSchema(pool);
    const before = await coreOn(pool);
    const session = await before.runner.ensureSession(privateSession("ou_a"));
    const started = await before.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "go" });
    if (started.kind !== "started") throw new Error("expected a start");
    const asked = await pendingAsk(before, session.id);
    // The first process goes (a deploy, a dead host): its run is not ended, its question stays pending.
    await before.runner.stop();
    await before.hub.close();

    const after = await coreOn(pg().pool({ types: STORE_PG_TYPES }));
    try {
      const resumed = await after.runner.recover();
      expect(resumed.map((run) => run.id)).toEqual([started.run.id]);
      const again = await pendingAsk(after, session.id);
      expect(again.requestId).toBe(asked.requestId);
      const by = { surface: "fake", userId: "ou_a" };
      expect(await after.registry.complete(session.id, again.requestId, answersTo(again), by)).toEqual({
        ok: true,
      });
      await after.runner.idle();
      const run = await after.runner.getRun(started.run.id);
      expect(run?.status).toBe("completed");
      expect(run?.text).toContain("Kubernetes");
      // One question asked, once: the resumed call waited on the original ask, it did not ask again.
      const history = await after.store.history(session.id);
      expect(history.filter((m) => m.toolName === "ask_user_questions")).toHaveLength(1);
    } finally {
      await after.runner.stop();
      await after.hub.close();
    }
  });
});
