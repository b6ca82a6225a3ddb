import express from "express";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { TOOL_DESCRIPTIONS } from "../src/agents-api/descriptions.ts";
import { mountAgentHttpApi } from "../src/agents-api/http.ts";
import { buildTools } from "../src/agents-api/mcp-tools.ts";
import type { AgentTasks } from "../src/agents-api/service.ts";

/**
 * An outside agent's operations exist twice, as MCP tools (agents-api/mcp-tools.ts) and as plain HTTP routes
 * (agents-api/http.ts), both over the same service (service.ts) and the same zod schemas (schemas.ts). This
 * keeps them in step: a tool without its route, a route without its tool, or a tool without its description
 * for the models (descriptions.ts) fails here.
 */
const ROUTE_OF_TOOL: Readonly<Record<string, string>> = {
  start_task: "POST /api/tasks",
  report_progress: "POST /api/tasks/:id/steps",
  finish_task: "POST /api/tasks/:id/finish",
  ask_user_questions: "POST /api/asks",
  get_answers: "GET /api/asks/:id",
  cancel_question: "DELETE /api/asks/:id",
};

// Express keeps its routing table on app.router.stack: a layer per route or mounted router.
const layerSchema = z.object({
  rawPath: z.unknown().optional(),
  route: z.object({ path: z.string(), methods: z.record(z.string(), z.boolean()) }).optional(),
  handle: z.unknown(),
});

function routesOf(router: unknown, prefix = ""): string[] {
  const stack = z.array(z.unknown()).safeParse(router ? Reflect.get(router, "stack") : undefined);
  if (!stack.success) return [];
  return stack.data.flatMap((entry) => {
    const layer = layerSchema.parse(entry);
    if (layer.route)
      return Object.keys(layer.route.methods).map(
        (method) => `${method.toUpperCase()} ${prefix}${layer.route?.path}`,
      );
    return typeof layer.rawPath === "string" ? routesOf(layer.handle, prefix + layer.rawPath) : [];
  });
}

describe("MCP and HTTP offer the same operations", () => {
  const tools = [...buildTools().keys()].sort();

  it("every MCP tool has a description for the models, and every description a tool", () => {
    const described = Object.keys(TOOL_DESCRIPTIONS).filter((key) => key !== "server");
    expect(described.sort()).toEqual(tools);
  });

  it("every MCP tool has its HTTP route, and every route of the agents' API is a tool's", () => {
    const app = express();
    mountAgentHttpApi(app, { tasks: {} as AgentTasks, authSecret: "s".repeat(32), now: () => 0 });
    expect(Object.keys(ROUTE_OF_TOOL).sort()).toEqual(tools);
    expect(routesOf(app.router).sort()).toEqual(Object.values(ROUTE_OF_TOOL).sort());
  });
});
