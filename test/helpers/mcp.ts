import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import express from "express";
import { z } from "zod";
import { loadConfig } from "../../src/config.ts";
import type { RunView } from "../../src/domain/types.ts";
import { createAgentFromConfig } from "../../src/harness/agents/index.ts";
import { startMcpFromConfig } from "../../src/harness/agents/mcp/index.ts";
import type { McpTools } from "../../src/harness/agents/mcp/servers.ts";
import { createLogger } from "../../src/logger.ts";
import { buildCore, privateSession, type TestCore, tempDir } from "./core.ts";
import { waitForRun } from "./harness.ts";
import { type ScriptedModel, startScriptedModel } from "./openai-server.ts";

/** Real MCP servers (devDependencies) for the MCP tests, and the stack main.ts builds around them. */

export const ALICE = "ou_alice000000000000000000000000000";
const require = createRequire(import.meta.url);
export const EVERYTHING = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");
export const FILESYSTEM = require.resolve("@modelcontextprotocol/server-filesystem/dist/index.js");

/** MCP_CONFIG written to a temp file, loaded the way main.ts loads it. */
export async function mcpFrom(
  closers: (() => Promise<void>)[],
  servers: Record<string, unknown>,
  env: Record<string, string> = {},
): Promise<McpTools> {
  const file = path.join(tempDir(), "mcp.json");
  fs.writeFileSync(file, JSON.stringify({ mcpServers: servers }));
  const config = loadConfig({
    AGENT: "openai",
    OPENAI_BASE_URL: "http://127.0.0.1:1/v1",
    OPENAI_MODEL: "m",
    MCP_CONFIG: file,
    ...env,
  });
  const mcp = await startMcpFromConfig(config, createLogger({ level: "silent" }), {
    connectTimeoutMs: 20_000,
  });
  if (!mcp) throw new Error("expected MCP tools");
  closers.push(() => mcp.close());
  return mcp;
}

/** The agent main.ts builds (OpenAI + MCP tools), against the scripted model, in a core. */
export async function stack(closers: (() => Promise<void>)[], mcp: McpTools) {
  const model: ScriptedModel = await startScriptedModel();
  closers.push(() => model.close());
  const config = loadConfig({ AGENT: "openai", OPENAI_BASE_URL: model.baseUrl, OPENAI_MODEL: "scripted" });
  const built = createAgentFromConfig(config, createLogger({ level: "silent" }), { tools: mcp.tools });
  const core: TestCore = await buildCore(built);
  closers.push(() => core.close());
  const session = await core.runner.ensureSession(privateSession(ALICE));
  const run = async (text: string): Promise<RunView> => {
    const submitted = await core.runner.submit({ sessionId: session.id, senderId: ALICE, text });
    if (submitted.kind !== "started") throw new Error("expected the run to start");
    return waitForRun(core, submitted.run.id);
  };
  return { model, core, run };
}

/**
 * A Streamable HTTP MCP server of our own (the SDK's server side) on 127.0.0.1, port 0: `add`, and `hang`,
 * which never answers. Records each request's Authorization header.
 */
export async function startHttpMcpServer(): Promise<{ url: string; auth: string[]; close(): Promise<void> }> {
  const auth: string[] = [];
  const app = express();
  app.use(express.json());
  app.post("/mcp", async (req, res) => {
    auth.push(String(req.headers.authorization ?? ""));
    const server = new McpServer({ name: "http-test", version: "1.0.0" });
    server.registerTool(
      "add",
      { description: "Adds two numbers", inputSchema: { a: z.number(), b: z.number() } },
      async ({ a, b }) => ({ content: [{ type: "text", text: `sum=${a + b}` }] }),
    );
    server.registerTool("hang", { description: "Never answers" }, () => new Promise<never>(() => {}));
    // Stateless: one transport (and server) per request.
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  const http = app.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => http.once("listening", () => resolve()));
  const address = http.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    auth,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}
