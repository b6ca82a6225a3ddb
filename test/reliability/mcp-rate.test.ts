import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";
import { afterEach, describe, expect, it } from "vitest";
import type { z } from "zod";
import { mountAgentHttpApi } from "../../src/agents-api/http.ts";
import { mountMcp } from "../../src/agents-api/mcp.ts";
import type { SchemaOf } from "../../src/agents-api/mcp-tools.ts";
import { agentRequestRate } from "../../src/agents-api/request-rate.ts";
import { AgentTasks } from "../../src/agents-api/service.ts";
import { signAgentToken } from "../../src/agents-api/token.ts";
import { AskRegistry } from "../../src/asks/registry.ts";
import { createLogger } from "../../src/logger.ts";
import { ALICE, SECRET } from "../helpers/agents.ts";
import { record } from "./helpers/env.ts";

/**
 * /mcp under one token's burst (issue 24 item 14): 50 concurrent `tools/list` each rebuilt the whole server and
 * converted every tool's schema, and pushed a card callback to 4 s. Over real HTTP on loopback: the tools'
 * JSON Schemas are built once, when the route is mounted, and one token gets a bounded request rate on /mcp and
 * /api together; another token is served meanwhile.
 */

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

async function start(schemaOf?: SchemaOf): Promise<string> {
  const logger = createLogger({ level: "silent" });
  let id = 0;
  const registry = new AskRegistry({
    timeoutMs: 60_000,
    now: Date.now,
    newId: () => `ask-${++id}`,
    onListenerError: (error) => {
      throw error;
    },
  });
  const tasks = new AgentTasks({
    registry,
    now: Date.now,
    askTimeoutMs: 60_000,
  });
  const app = express();
  // One limiter for both doors, as createAgentsApi builds it.
  const requestRate = agentRequestRate(Date.now);
  const deps = { tasks, authSecret: SECRET, now: Date.now, logger, requestRate };
  mountMcp(app, { ...deps, ...(schemaOf ? { schemaOf } : {}) });
  mountAgentHttpApi(app, deps);
  app.use(
    (
      error: { status?: number; code?: string },
      _req: express.Request,
      res: express.Response,
      _n: express.NextFunction,
    ) => {
      res.status(error.status ?? 500).json({ error: { code: error.code } });
    },
  );
  server = app.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => server?.once("listening", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const token = (agent: string) =>
  signAgentToken(SECRET, { agent, mayAsk: [ALICE], expiresAt: Date.now() + 60_000 });

async function listTools(
  url: string,
  as: string,
): Promise<{ status: number; retryAfter: string | null; tools: number }> {
  const response = await fetch(`${url}/mcp`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${as}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  const text = await response.text();
  return {
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    tools: (text.match(/"inputSchema"/g) ?? []).length,
  };
}

describe("/mcp under one token's burst", () => {
  it("builds the six tools' schemas once, however many times they are listed", async () => {
    let conversions = 0;
    const counting: SchemaOf = (schema: z.ZodType, io) => {
      conversions += 1;
      return { type: "object", io, described: schema.description ?? null };
    };
    const url = await start(counting);
    const lister = token("Lister");
    for (let i = 0; i < 10; i += 1) expect((await listTools(url, lister)).tools).toBe(6);
    expect(conversions).toBe(12);
  });

  it("50 concurrent tools/list from one token: 20 served, the rest 429 with Retry-After; another token is served", async () => {
    const url = await start();
    const flood = token("Flood");
    const results = await Promise.all(Array.from({ length: 50 }, () => listTools(url, flood)));
    const served = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 429);
    expect(served).toHaveLength(20);
    expect(served.every((r) => r.tools === 6)).toBe(true);
    expect(refused).toHaveLength(30);
    expect(refused.every((r) => r.retryAfter === "1")).toBe(true);
    // The same token's HTTP API shares the budget; another agent's token has its own.
    const api = await fetch(`${url}/api/asks/nothing`, { headers: { authorization: `Bearer ${flood}` } });
    expect(api.status).toBe(429);
    expect((await listTools(url, token("Bystander"))).status).toBe(200);
    record("mcp: 50 concurrent tools/list", { served: served.length, refused: refused.length });
  });
});
