import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { RunView } from "../src/domain/types.ts";
import { fixtureAgent } from "./helpers/acp.ts";
import { buildCore, privateSession } from "./helpers/core.ts";
import { until as waitUntil } from "./helpers/wait.ts";

const ALICE = "ou_alice";

/**
 * Waits while the child process does its part (helpers/wait.ts). Under this file's fake setTimeout each
 * check also moves the fake clock by its 10 ms interval, far below the timeouts these tests step to.
 */
const until = <R>(probe: () => R, what: string) => waitUntil(probe, what, 10_000, 10);

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const close of closers.splice(0).reverse()) await close();
});

describe("AGENT=acp: a hung agent", () => {
  it("fails the run once nothing came for ACP_IDLE_TIMEOUT_MS, stops the process and starts a new one next time", async () => {
    // Only the timer functions are faked: the child's pipes and the SDK's I/O run for real.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const agent = fixtureAgent({ idleTimeoutMs: 60_000 });
    const core = await buildCore({ agent });
    closers.push(
      () => agent.close(),
      () => core.close(),
    );
    const session = await core.runner.ensureSession(privateSession(ALICE));
    const submit = async (text: string): Promise<RunView> => {
      const result = await core.runner.submit({ sessionId: session.id, senderId: ALICE, text });
      if (result.kind !== "started") throw new Error("expected a start");
      return result.run;
    };
    const settledRun = (id: string) =>
      until(async () => {
        const run = await core.runner.getRun(id);
        return run && ["completed", "failed", "cancelled"].includes(run.status) ? run : undefined;
      }, "the run to end");

    const hung = await submit("/hang");
    await until(
      async () => (await core.runner.getRun(hung.id))?.steps.find((s) => s.title.includes("Think hard")),
      "the step",
    );
    await vi.advanceTimersByTimeAsync(59_000);
    expect((await core.runner.getRun(hung.id))?.status).toBe("running");
    await vi.advanceTimersByTimeAsync(1_000);
    const failed = await settledRun(hung.id);
    expect(failed.status).toBe("failed");
    expect(failed.error).toContain("60 秒没有任何进展");

    const next = await settledRun((await submit("/count")).id);
    expect(next).toMatchObject({ status: "completed", text: "第 1 次提问" });
  });

  it("does not count the time a permission form waits for the person", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const agent = fixtureAgent({ idleTimeoutMs: 60_000 });
    const core = await buildCore({ agent, askTimeoutMs: 600_000 });
    closers.push(
      () => agent.close(),
      () => core.close(),
    );
    const session = await core.runner.ensureSession(privateSession(ALICE));
    const result = await core.runner.submit({ sessionId: session.id, senderId: ALICE, text: "/perm" });
    if (result.kind !== "started") throw new Error("expected a start");
    const ask = await until(() => core.registry.getPendingForSession(session.id)[0], "the permission ask");
    await vi.advanceTimersByTimeAsync(300_000);
    expect((await core.runner.getRun(result.run.id))?.status).toBe("running");
    const answers = [
      { question: ask.questions[0]?.question ?? "", selectedLabels: ["Reject"], customInput: null },
    ];
    expect(
      await core.registry.complete(session.id, ask.requestId, answers, { surface: "test", userId: ALICE }),
    ).toEqual({ ok: true });
    const run = await until(async () => {
      const r = await core.runner.getRun(result.run.id);
      return r?.status === "completed" ? r : undefined;
    }, "the run to complete");
    expect(run.text).toBe("权限结果: selected reject");
  });

  it("stops a chat's idle agent process after ACP_KEEP_ALIVE_MS; the next message resumes its session in a new one", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-acp-keep-"));
    const agent = fixtureAgent({ keepAliveMs: 600_000, stateDir });
    const core = await buildCore({ agent });
    closers.push(
      () => agent.close(),
      () => core.close(),
    );
    const session = await core.runner.ensureSession(privateSession(ALICE));
    const ask = async (text: string) => {
      const result = await core.runner.submit({ sessionId: session.id, senderId: ALICE, text });
      if (result.kind !== "started") throw new Error("expected a start");
      return until(async () => {
        const run = await core.runner.getRun(result.run.id);
        return run?.status === "completed" ? run : undefined;
      }, "the run to complete");
    };
    expect((await ask("/count")).text).toBe("第 1 次提问");
    await vi.advanceTimersByTimeAsync(599_000);
    // Still the same process: it counts on without loading.
    expect((await ask("/count")).text).toBe("第 2 次提问");
    await vi.advanceTimersByTimeAsync(600_000);
    expect((await ask("/count")).text).toBe("第 3 次提问(会话已恢复)");
  });
});
