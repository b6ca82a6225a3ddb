import { afterEach, describe, expect, it } from "vitest";
import type { Agent } from "../src/harness/agents/agent.ts";
import { buildCore, gatedAgent, privateSession, type TestCore } from "./helpers/core.ts";
import { until } from "./helpers/wait.ts";
import { holdWriteLock } from "./helpers/write-lock.ts";

/**
 * The runner's reads and restarts with an async store (issue 27): what it shows of a run whose last write the
 * database refused, and a message that reaches a session before its interrupted run is resumed.
 */

const cores: TestCore[] = [];
afterEach(async () => {
  for (const core of cores.splice(0)) await core.close();
});

describe("the runner on an async store", () => {
  it("shows an ended run as ended while its row is still being written (the database refused it)", async () => {
    const gated = gatedAgent();
    const core = await buildCore({ agent: gated.agent });
    cores.push(core);
    const session = await core.runner.ensureSession(privateSession());
    const started = await core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "go" });
    if (started.kind !== "started") throw new Error("expected a start");
    await gated.started(1);
    const ended = new Promise<void>((resolve) =>
      core.runner.on("run_updated", (run) => run.status !== "running" && resolve()),
    );
    const lock = holdWriteLock(core.dbFile);
    gated.gates[0]?.resolve("done");
    await ended;
    // Its answer could not be saved, so it failed; the row still says running until the lock goes.
    expect((await core.store.getRun(started.run.id))?.status).toBe("running");
    expect((await core.runner.currentRun(session.id))?.status).toBe("failed");
    expect((await core.runner.runs(session.id, 5)).map((run) => run.status)).toEqual(["failed"]);
    lock.release();
    // The refused write is tried again with backoff, and lands.
    await until(
      async () => (await core.store.getRun(started.run.id))?.status === "failed",
      "the row written",
    );
  });

  it("queues a message to a session whose interrupted run is not resumed yet, and runs it after that run", async () => {
    const gated = gatedAgent();
    const crashed = await buildCore({ agent: gated.agent });
    const session = await crashed.runner.ensureSession(privateSession());
    await crashed.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "long task" });
    await gated.started(1);
    // The process dies mid-run; the next one opens the same file and takes a message before it recovers.
    const inputs: string[] = [];
    const agent: Agent = {
      name: "after-restart",
      async run(ctx) {
        inputs.push(`${ctx.input}${ctx.resumed ? " (resumed)" : ""}`);
        return { text: `finished ${ctx.input}` };
      },
    };
    const restarted = await buildCore({ agent, dbFile: crashed.dbFile });
    cores.push(restarted, crashed);
    const early = await restarted.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "early" });
    expect(early).toMatchObject({ kind: "queued", position: 1 });
    expect((await restarted.runner.recover()).map((run) => run.input)).toEqual(["long task"]);
    await until(() => inputs.length === 2 && inputs, "both runs");
    await restarted.runner.idle();
    expect(inputs).toEqual(["long task (resumed)", "early"]);
  });
});
