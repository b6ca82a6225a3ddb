import { describe, expect, it } from "vitest";
import { z } from "zod";
import { loadConfig } from "../src/config.ts";
import { createAgentFromConfig } from "../src/harness/agents/index.ts";
import { currentTimeTool, defineTool, ToolRegistry } from "../src/harness/agents/tool-registry.ts";
import type { ToolContext, ToolHost } from "../src/harness/dispatcher.ts";
import { createLogger } from "../src/logger.ts";
import { privateSession } from "./helpers/core.ts";

const ctx: ToolContext = {
  session: privateSession(),
  runId: "run-1",
  senderId: "ou_a",
  signal: new AbortController().signal,
};
const host: ToolHost = {
  definitions: () => [],
  dispatch: async () => ({ content: "{}", isError: false, summary: "{}" }),
};

describe("ToolRegistry", () => {
  it("refuses ask_user_questions, bad names and duplicates", () => {
    const registry = new ToolRegistry().register(currentTimeTool());
    expect(() => registry.register(currentTimeTool())).toThrow(/already registered/);
    const named = (name: string) =>
      defineTool({ name, description: "x", input: z.object({}), execute: async () => ({}) });
    expect(() => registry.register(named("ask_user_questions"))).toThrow(/built in/);
    expect(() => registry.register(named("has space"))).toThrow(/letters, digits/);
    expect(registry.list().map((tool) => tool.definition.name)).toEqual(["current_time"]);
  });

  it("checks a defined tool's arguments and tells the model what to fix", async () => {
    const tool = defineTool({
      name: "lookup_order",
      description: "Find an order.",
      input: z.strictObject({ orderNo: z.string().regex(/^\d+$/, "orderNo must be digits") }),
      execute: async ({ orderNo }) => ({ status: "shipped", orderNo }),
    });
    expect(tool.definition.parameters).toMatchObject({ type: "object", required: ["orderNo"] });
    expect(await tool.execute({ orderNo: "12" }, ctx, host)).toBe('{"status":"shipped","orderNo":"12"}');
    expect(await tool.execute('{"orderNo":"12"}', ctx, host)).toContain("shipped");
    expect(JSON.parse(await tool.execute({ orderNo: "A1" }, ctx, host))).toEqual({
      error: "Invalid arguments: orderNo: orderNo must be digits",
    });
    expect(JSON.parse(await tool.execute("{oops", ctx, host))).toEqual({
      error: "Invalid arguments: not valid JSON",
    });
  });

  it("tells the time in a time zone (Asia/Shanghai by default)", async () => {
    const tool = currentTimeTool(() => Date.UTC(2025, 0, 2, 3, 4, 5));
    expect(JSON.parse(await tool.execute({}, ctx, host))).toMatchObject({
      iso: "2025-01-02T03:04:05.000Z",
      local: "2025-01-02 11:04:05",
    });
    expect(JSON.parse(await tool.execute({ timeZone: "Mars/Olympus" }, ctx, host))).toEqual({
      error: "Unknown time zone: Mars/Olympus",
    });
  });
});

describe("createAgentFromConfig", () => {
  const logger = createLogger({ level: "silent" });

  it("builds the demo agent with its demo tools", () => {
    const { agent, tools } = createAgentFromConfig(loadConfig({}), logger);
    expect(agent.name).toBe("demo");
    expect(tools.map((tool) => tool.definition.name)).toContain("scan_workspace");
  });

  it("builds the OpenAI agent with current_time and delegate", () => {
    const config = loadConfig({
      AGENT: "openai",
      OPENAI_BASE_URL: "http://127.0.0.1:1/v1",
      OPENAI_MODEL: "m",
    });
    const { agent, tools } = createAgentFromConfig(config, logger);
    expect(agent.name).toBe("openai");
    expect(tools.map((tool) => tool.definition.name)).toEqual(["current_time", "delegate"]);
  });
});
