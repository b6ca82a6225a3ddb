import { afterEach, describe, expect, it } from "vitest";
import type { RunView } from "../src/domain/types.ts";
import type { Agent } from "../src/harness/agents/agent.ts";
import { createDemoAgent, createDemoTools } from "../src/harness/agents/demo.ts";
import { buildCore, fakeSurface, gatedAgent, privateSession, type TestCore } from "./helpers/core.ts";
import { until } from "./helpers/wait.ts";

const cores: TestCore[] = [];
function track(core: TestCore): TestCore {
  cores.push(core);
  return core;
}
afterEach(async () => {
  for (const core of cores.splice(0)) await core.close();
});

async function demoCore(options: { surfaces?: ReturnType<typeof fakeSurface>[] } = {}) {
  const core = track(
    await buildCore({ agent: createDemoAgent(), tools: createDemoTools({ stepMs: 0 }), ...options }),
  );
  const session = await core.runner.ensureSession(privateSession());
  return { core, session };
}

function nextAsks(core: TestCore, sessionId: string, count: number) {
  return until(
    () => {
      const asks = core.registry.getPendingForSession(sessionId);
      return asks.length >= count && asks;
    },
    `${count} pending ask(s)`,
    10_000,
    1,
  );
}

describe("SessionRunner", () => {
  it("queues messages that arrive while a run is busy and runs them in order afterwards", async () => {
    const gated = gatedAgent();
    const core = track(await buildCore({ agent: gated.agent }));
    const session = await core.runner.ensureSession(privateSession());
    const first = await core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "one" });
    const second = await core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "two" });
    const third = await core.runner.submit({ sessionId: session.id, senderId: "ou_b", text: "three" });
    expect(first.kind).toBe("started");
    expect(second).toMatchObject({ kind: "queued", position: 1 });
    expect(third).toMatchObject({ kind: "queued", position: 2 });
    expect((await core.runner.queued(session.id)).map((q) => q.text)).toEqual(["two", "three"]);

    (await gated.started(1)) && gated.gates[0]!.resolve("done one");
    expect((await gated.started(2)).input).toBe("two");
    gated.gates[1]!.resolve("done two");
    const ctx3 = await gated.started(3);
    expect(ctx3).toMatchObject({ input: "three", senderId: "ou_b" });
    gated.gates[2]!.resolve("done three");
    await core.runner.idle();
    expect(await core.runner.queued(session.id)).toEqual([]);
    expect(await core.runner.currentRun(session.id)).toMatchObject({
      status: "completed",
      text: "done three",
      senderId: "ou_b",
    });
  });

  it("lets only the run's sender cancel; cancel aborts the run and fails its pending asks with Session cancelled", async () => {
    const { core, session } = await demoCore();
    const started = await core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "hi" });
    await nextAsks(core, session.id, 1);
    expect(core.runner.cancel(session.id, "ou_b")).toEqual({ ok: false, reason: "forbidden" });
    expect(core.runner.cancel(session.id, "ou_a")).toEqual({ ok: true });
    await core.runner.idle();
    const run = (await core.store.getRun(started.kind === "started" ? started.run.id : ""))!;
    expect(run.status).toBe("cancelled");
    expect(core.registry.getPendingForSession(session.id)).toEqual([]);
    const toolMessage = (await core.store.history(session.id)).find(
      (m) => m.toolName === "ask_user_questions",
    );
    expect(toolMessage).toMatchObject({
      content: JSON.stringify({ error: "Session cancelled" }),
      summary: "提问已取消",
    });
    expect(core.runner.cancel(session.id, "ou_a")).toEqual({ ok: false, reason: "not_running" });
  });

  it("fails a /fail run with a readable error and retries the same input for its sender only", async () => {
    const { core, session } = await demoCore();
    await core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "/fail please" });
    await core.runner.idle();
    const failed = (await core.runner.currentRun(session.id))!;
    expect(failed.status).toBe("failed");
    expect(failed.error).toContain("无法连接到构建服务");
    expect(failed.steps.map((s) => [s.tool, s.status])).toEqual([["scan_workspace", "done"]]);

    expect(await core.runner.retry(session.id, "ou_b")).toEqual({ ok: false, reason: "forbidden" });
    const retried = await core.runner.retry(session.id, "ou_a");
    expect(retried.ok && retried.result.kind).toBe("started");
    await core.runner.idle();
    const again = (await core.runner.currentRun(session.id))!;
    expect(again.id).not.toBe(failed.id);
    expect(again.input).toBe("/fail please");
    expect((await core.runner.retry(session.id, "ou_a")).ok).toBe(true);
    await core.runner.idle();
  });

  it("does not retry a completed run", async () => {
    const { core, session } = await demoCore();
    await core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "/quick" });
    await core.runner.idle();
    expect(await core.runner.retry(session.id, "ou_a")).toEqual({ ok: false, reason: "not_retryable" });
  });

  it("moves a queued message to the front (插队) or withdraws it (取消排队), for its sender only", async () => {
    const gated = gatedAgent();
    const core = track(await buildCore({ agent: gated.agent }));
    const session = await core.runner.ensureSession(privateSession());
    await core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "running" });
    const a = await core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "a" });
    const b = await core.runner.submit({ sessionId: session.id, senderId: "ou_b", text: "b" });
    const c = await core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "c" });
    if (a.kind !== "queued" || b.kind !== "queued" || c.kind !== "queued") throw new Error("expected queued");
    expect(await core.runner.promote(c.queued.id, "ou_b")).toEqual({ ok: false, reason: "forbidden" });
    expect(await core.runner.promote(c.queued.id, "ou_a")).toEqual({ ok: true, position: 1 });
    expect((await core.runner.queued(session.id)).map((q) => q.text)).toEqual(["c", "a", "b"]);
    expect(await core.store.queue.position(b.queued.id)).toBe(3);
    expect(await core.runner.unqueue(a.queued.id, "ou_b")).toEqual({ ok: false, reason: "forbidden" });
    expect(await core.runner.unqueue(a.queued.id, "ou_a")).toEqual({ ok: true });
    expect(await core.runner.unqueue(a.queued.id, "ou_a")).toEqual({ ok: false, reason: "not_found" });
    expect((await core.runner.queued(session.id)).map((q) => q.text)).toEqual(["c", "b"]);
  });

  it("records steps, and tool calls with their results and summaries in history", async () => {
    const { core, session } = await demoCore();
    await core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "go" });
    const [ask] = await nextAsks(core, session.id, 1);
    expect(ask!.answererId).toBe("ou_a");
    const answers = [
      { question: ask!.questions[0]!.question, selectedLabels: ["Docker（推荐）"], customInput: null },
      { question: ask!.questions[1]!.question, selectedLabels: ["暗色模式", "导出 PDF"], customInput: null },
    ];
    expect(
      await core.registry.complete(session.id, ask!.requestId, answers, { surface: "fake", userId: "ou_a" }),
    ).toEqual({ ok: true });
    await core.runner.idle();
    const run = (await core.runner.currentRun(session.id))!;
    expect(run.status).toBe("completed");
    expect(run.steps.map((s) => s.tool)).toEqual([
      "scan_workspace",
      "ask_user_questions",
      "apply_choice",
      "apply_choice",
      "apply_choice",
    ]);
    expect(run.steps[1]).toMatchObject({ status: "done", summary: "回答了 2 个问题" });
    expect(run.text).toContain("Docker（推荐）");
    expect(run.text).toContain("暗色模式、导出 PDF");
    const history = await core.store.history(session.id);
    expect(history[0]).toMatchObject({ role: "user", content: "go" });
    expect(history.at(-1)).toMatchObject({ role: "assistant", content: run.text });
    const call = history.find((m) => m.toolCalls?.[0]?.name === "ask_user_questions");
    const result = history.find((m) => m.toolCallId === call?.toolCalls?.[0]?.id);
    expect(JSON.parse(result!.content)).toEqual({ answers });
  });

  it("puts two asks of one /parallel turn up at once; answering one keeps the other", async () => {
    const { core, session } = await demoCore();
    await core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "/parallel" });
    const asks = await nextAsks(core, session.id, 2);
    expect(asks.map((a) => a.questions.length)).toEqual([1, 1]);
    const [first, second] = asks;
    await core.registry.complete(
      session.id,
      first!.requestId,
      [{ question: first!.questions[0]!.question, selectedLabels: [], customInput: "Nomad" }],
      { surface: "fake", userId: "ou_a" },
    );
    expect(core.registry.getPendingForSession(session.id).map((a) => a.requestId)).toEqual([
      second!.requestId,
    ]);
    await core.registry.complete(
      session.id,
      second!.requestId,
      [{ question: second!.questions[0]!.question, selectedLabels: ["多语言"], customInput: null }],
      { surface: "fake", userId: "ou_a" },
    );
    await core.runner.idle();
    expect((await core.runner.currentRun(session.id))!.text).toContain("其他：Nomad");
  });

  it("runs /long as 20 steps and /quick as one, without questions", async () => {
    const { core, session } = await demoCore();
    await core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "/long" });
    await core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "/quick" });
    const updates: RunView[] = [];
    core.runner.on("run_updated", (run) => updates.push(run));
    await core.runner.idle();
    const runs = [...new Map(updates.map((run) => [run.id, run])).values()];
    expect(runs.map((run) => [run.input, run.status, run.steps.length])).toEqual([
      ["/long", "completed", 20],
      ["/quick", "completed", 1],
    ]);
  });

  it("words every demo step in Chinese, with a summary that adds to its title instead of repeating it", async () => {
    const { core, session } = await demoCore();
    const updates: RunView[] = [];
    core.runner.on("run_updated", (run) => updates.push(run));
    await core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "go" });
    const [ask] = await nextAsks(core, session.id, 1);
    await core.registry.complete(
      session.id,
      ask!.requestId,
      [
        { question: ask!.questions[0]!.question, selectedLabels: ["Kubernetes"], customInput: null },
        { question: ask!.questions[1]!.question, selectedLabels: ["导出 PDF"], customInput: "加上审计日志" },
      ],
      { surface: "fake", userId: "ou_a" },
    );
    await core.runner.idle();
    await core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "/long" });
    await core.runner.idle();
    const steps = [...new Map(updates.map((run) => [run.id, run])).values()].flatMap((run) => run.steps);
    expect(steps.map((step) => `${step.title} · ${step.summary}`)).toEqual(
      expect.arrayContaining([
        "部署方式：Kubernetes · 已生成 deployment.yaml",
        "开启功能：导出 PDF · 改动了 2 个文件",
        "按补充说明处理：加上审计日志 · 已记入任务说明",
        "处理第 7/20 块 · 处理了 139 条记录",
      ]),
    );
    for (const step of steps) {
      expect(step.summary, step.title).toMatch(/[\u4e00-\u9fff]/);
      const [, object] = step.title.split("：");
      if (object) expect(step.summary, step.title).not.toContain(object);
    }
  });

  it("answers at once with 当前通道无法向用户提问 when no surface can reach the sender", async () => {
    const { core, session } = await demoCore({ surfaces: [fakeSurface(false)] });
    await core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "go" });
    await core.runner.idle();
    const run = (await core.runner.currentRun(session.id))!;
    expect(run.status).toBe("completed");
    expect(run.steps[1]).toMatchObject({
      tool: "ask_user_questions",
      status: "failed",
      summary: "当前通道无法向用户提问",
    });
    expect(core.registry.size).toBe(0);
  });

  it("resumes a run a crash interrupted, showing it as recovering first, and still runs the queue once", async () => {
    const gated = gatedAgent();
    const crashed = await buildCore({ agent: gated.agent });
    const session = await crashed.runner.ensureSession(privateSession());
    await crashed.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "long task" });
    await crashed.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "queued task" });
    await gated.started(1);
    // The process dies: nothing is marked finished. A new process opens the same file.
    const inputs: string[] = [];
    const statuses: string[] = [];
    const agent: Agent = {
      name: "after-restart",
      async run(ctx) {
        inputs.push(`${ctx.input}${ctx.resumed ? " (resumed)" : ""}`);
        await ctx.callTool("noop", {});
        return { text: `finished ${ctx.input}` };
      },
    };
    const restarted = track(await buildCore({ agent, dbFile: crashed.dbFile }));
    restarted.runner.on("run_updated", (run) => statuses.push(`${run.input}:${run.status}`));
    const resumed = await restarted.runner.recover();
    expect(resumed.map((run) => run.status)).toEqual(["recovering"]);
    await restarted.runner.idle();
    expect(inputs).toEqual(["long task (resumed)", "queued task"]);
    expect(statuses[0]).toBe("long task:recovering");
    expect(statuses).toContain("long task:completed");
    expect(
      (await restarted.store.history(session.id)).filter((m) => m.role === "user").map((m) => m.content),
    ).toEqual(["long task", "queued task"]);
    expect(await restarted.runner.recover()).toEqual([]);
    await crashed.close();
  });
  it("saves a turn of several calls as one assistant message with every result, once all have returned", async () => {
    const turns: string[][] = [];
    const agent: Agent = {
      name: "two-calls",
      async run(ctx) {
        turns.push(
          await ctx.callTools(
            [
              { name: "scan_workspace", args: {}, title: "扫描" },
              { name: "apply_choice", args: '{"choice": "A"', title: "应用" },
            ],
            { text: "两件事一起做" },
          ),
        );
        return { text: "done" };
      },
    };
    const core = track(await buildCore({ agent, tools: createDemoTools({ stepMs: 0 }) }));
    const session = await core.runner.ensureSession(privateSession());
    await core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "go" });
    await core.runner.idle();
    const history = await core.store.history(session.id);
    expect(history.map((m) => m.role)).toEqual(["user", "assistant", "tool", "tool", "assistant"]);
    const turn = history[1]!;
    expect(turn.content).toBe("两件事一起做");
    // A model's raw argument text is kept as written, even when it is not JSON.
    expect(turn.toolCalls?.map((c) => [c.name, c.arguments])).toEqual([
      ["scan_workspace", "{}"],
      ["apply_choice", '{"choice": "A"'],
    ]);
    expect(history.slice(2, 4).map((m) => m.toolCallId)).toEqual(turn.toolCalls?.map((c) => c.id));
    expect(turns[0]).toHaveLength(2);
    expect((await core.runner.currentRun(session.id))!.steps.map((s) => s.title)).toEqual(["扫描", "应用"]);
  });

  it("saves nothing of a turn a shutdown interrupts, so the resumed agent makes it again", async () => {
    const { core, session } = await demoCore();
    await core.runner.submit({ sessionId: session.id, senderId: "ou_a", text: "go" });
    await nextAsks(core, session.id, 1);
    await core.runner.stop();
    const history = await core.store.history(session.id);
    expect(history.map((m) => m.toolCalls?.[0]?.name ?? m.role)).toEqual(["user", "scan_workspace", "tool"]);
    expect(await core.store.unfinishedRuns()).toHaveLength(1);
  });
});
