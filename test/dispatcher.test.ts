import { describe, expect, it } from "vitest";
import { AskRegistry } from "../src/asks/registry.ts";
import { type ToolContext, ToolDispatcher, type ToolImpl } from "../src/harness/dispatcher.ts";
import { createLogger } from "../src/logger.ts";
import { en } from "../src/strings/index.ts";
import { sampleAsk } from "./fixtures.ts";
import { fakeSurface, privateSession } from "./helpers/core.ts";
import { until } from "./helpers/wait.ts";

function setup(options: { reachable?: boolean; tools?: ToolImpl[] } = {}) {
  let id = 0;
  const registry = new AskRegistry({
    timeoutMs: 60_000,
    now: Date.now,
    newId: () => `r${++id}`,
    onListenerError: () => {},
  });
  const dispatcher = new ToolDispatcher({
    registry,
    tools: options.tools ?? [],
    surfaces: [fakeSurface(options.reachable ?? true)],
    logger: createLogger({ level: "silent" }),
  });
  const controller = new AbortController();
  const ctx: ToolContext = {
    session: privateSession(),
    runId: "run1",
    senderId: "ou_a",
    signal: controller.signal,
  };
  return { registry, dispatcher, ctx, controller };
}

describe("ToolDispatcher", () => {
  it("returns an error naming the bad field for invalid ask arguments, and registers nothing", async () => {
    const { dispatcher, registry, ctx } = setup();
    const result = await dispatcher.dispatch("ask_user_questions", { questions: [{ question: "?" }] }, ctx);
    expect(JSON.parse(result.content).error).toMatch(/^Invalid arguments: questions\.0\.header/);
    // The step names what is wrong, without the model-facing prefix.
    expect(result).toMatchObject({
      isError: true,
      summary: expect.stringMatching(/^提问参数无效：questions\.0\.header/),
    });
    expect(registry.size).toBe(0);
  });

  it("registers the ask for the run's sender and returns the answers as the tool result", async () => {
    const { dispatcher, registry, ctx } = setup();
    const pending = dispatcher.dispatch("ask_user_questions", JSON.stringify(sampleAsk()), ctx);
    const ask = await until(() => registry.getPendingForSession(ctx.session.id)[0], "the ask");
    expect(ask).toMatchObject({ answererId: "ou_a", runId: "run1", metadata: { source: "test" } });
    const answers = [{ question: "q", selectedLabels: ["React"], customInput: null }];
    await registry.complete(ctx.session.id, ask!.requestId, answers, { surface: "fake", userId: "ou_a" });
    const result = await pending;
    expect(JSON.parse(result.content)).toEqual({ answers });
    expect(result).toMatchObject({ isError: false, summary: "回答了 1 个问题" });
  });

  it("refuses at once when no surface can reach the sender", async () => {
    const { dispatcher, registry, ctx } = setup({ reachable: false });
    expect(await dispatcher.dispatch("ask_user_questions", sampleAsk(), ctx)).toEqual({
      content: '{"error":"当前通道无法向用户提问"}',
      isError: true,
      summary: "当前通道无法向用户提问",
      summaryWords: { zh_cn: "当前通道无法向用户提问", en_us: en.askUnavailable },
    });
    expect(registry.size).toBe(0);
  });

  it("never lets a sub-agent ask", async () => {
    const { dispatcher, ctx } = setup();
    const result = await dispatcher.dispatch("ask_user_questions", sampleAsk(), { ...ctx, subAgent: true });
    expect(JSON.parse(result.content).error).toContain("not available to sub-agents");
    expect(result.isError).toBe(true);
  });

  it("settles the ask as Session cancelled when the run aborts", async () => {
    const { dispatcher, registry, ctx, controller } = setup();
    const pending = dispatcher.dispatch("ask_user_questions", sampleAsk(), ctx);
    controller.abort();
    expect(await pending).toEqual({
      content: JSON.stringify({ error: "Session cancelled" }),
      isError: true,
      summary: "提问已取消",
      summaryWords: { zh_cn: "提问已取消", en_us: en.askCancelledSummary },
    });
    expect(registry.size).toBe(0);
  });

  it("turns an unknown tool and a throwing tool into error results", async () => {
    const throwing: ToolImpl = {
      definition: { name: "explode", description: "", parameters: {} },
      execute: async () => {
        throw new Error("kaboom");
      },
    };
    const { dispatcher, ctx } = setup({ tools: [throwing] });
    expect(await dispatcher.dispatch("nope", {}, ctx)).toEqual({
      content: JSON.stringify({ error: "Unknown tool: nope" }),
      isError: true,
      summary: "失败：Unknown tool: nope",
      summaryWords: { zh_cn: "失败：Unknown tool: nope", en_us: en.toolFailedSummary("Unknown tool: nope") },
    });
    expect(await dispatcher.dispatch("explode", {}, ctx)).toEqual({
      content: JSON.stringify({ error: "kaboom" }),
      isError: true,
      summary: "失败：kaboom",
      summaryWords: { zh_cn: "失败：kaboom", en_us: en.toolFailedSummary("kaboom") },
    });
  });
});
