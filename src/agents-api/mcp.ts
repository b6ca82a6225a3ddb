import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import express, {
  type Express,
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
} from "express";
import type { AppError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { agentOf, requireAgent } from "./auth.ts";
import { TOOL_DESCRIPTIONS } from "./descriptions.ts";
import { bodyErrors } from "./http.ts";
import { buildTools, type CallWaits, type SchemaOf, type Tool } from "./mcp-tools.ts";
import { agentRequestRate } from "./request-rate.ts";
import type { AgentTasks } from "./service.ts";
import type { AgentPrincipal, AgentTokenRevocations } from "./token.ts";
import { callerOf, cancelledIds, WaitingCalls } from "./waiting-calls.ts";

/**
 * MCP over Streamable HTTP at /mcp, stateless: each POST gets its own protocol shell and transport, bound to the
 * agent of its token, over tool definitions built once. Nothing of a conversation lives in this process between calls — the asks do (the
 * registry, durable rows) — so a bot restart or a second instance loses no session, and a client never has
 * to re-initialise. A long ask is one POST whose SSE stream carries the progress notifications; a
 * `notifications/cancelled` for it, arriving on a POST of its own, ends its wait (`WaitingCalls`).
 */

export interface McpDeps {
  tasks: AgentTasks;
  authSecret: string;
  now: () => number;
  logger: Logger;
  maxBodyBytes?: number;
  /** Requests per token, shared with the HTTP API (request-rate.ts); absent: a limiter of its own. */
  requestRate?: RequestHandler;
  /** zod → JSON Schema for the tool list (default z.toJSONSchema); a test counts the conversions. */
  schemaOf?: SchemaOf;
  revocations?: AgentTokenRevocations;
}

export function mountMcp(app: Express, deps: McpDeps): void {
  const log = deps.logger.child({ module: "mcp" });
  const json = express.json({ limit: deps.maxBodyBytes ?? 256 * 1024 });
  const tools = buildTools(deps.schemaOf);
  const validator = new AjvJsonSchemaValidator();
  const rate = deps.requestRate ?? agentRequestRate(deps.now);
  const waiting = new WaitingCalls();
  app.post(
    "/mcp",
    requireAgent(deps.authSecret, deps.now, deps.revocations),
    rate,
    json,
    async (req, res, next) => {
      try {
        const caller = callerOf(req.get("authorization"));
        for (const id of cancelledIds(req.body))
          if (waiting.cancel(caller, id))
            log.info({ agent: agentOf(req).agent, requestId: id }, "agent cancelled a waiting call");
        const server = buildServer(agentOf(req), deps.tasks, log, tools, validator, { waiting, caller });
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
        res.on("close", () => {
          void transport.close();
          void server.close();
        });
        await server.connect(transport);
        await transport.handleRequest(req, res, req.body);
      } catch (error) {
        next(error);
      }
    },
  );
  // Stateless: no standalone SSE stream to GET, no session to DELETE (the spec's answer is 405).
  const notAllowed = (_req: Request, res: Response) => {
    res
      .status(405)
      .setHeader("Allow", "POST")
      .json({
        jsonrpc: "2.0",
        error: { code: -32000, message: "Method not allowed: this server is stateless, POST only" },
        id: null,
      });
  };
  app.get("/mcp", notAllowed);
  app.delete("/mcp", notAllowed);
  app.use("/mcp", (error: unknown, _req: Request, res: Response, next: NextFunction) =>
    bodyErrors(error, res, next),
  );
}

/**
 * The protocol shell of one request, bound to its agent: the low-level Server with the prebuilt tools. It is
 * per request because a stateless transport serves one request; it holds no schema work of its own.
 */

export function buildServer(
  who: AgentPrincipal,
  tasks: AgentTasks,
  log: Logger,
  tools: ReadonlyMap<string, Tool> = buildTools(),
  // The SDK makes a fresh Ajv per Server unless given one (the costliest part of a request after the schemas).
  validator: AjvJsonSchemaValidator = new AjvJsonSchemaValidator(),
  calls: CallWaits = { waiting: new WaitingCalls(), caller: "" },
): Server {
  // Refusals (not allowed, rate-limited, bad input) are what an operator looks for when an agent says "it failed".
  const refused = (error: AppError) =>
    log.info({ agent: who.agent, code: error.code, reason: error.message }, "agent call refused");
  const server = new Server(
    { name: "feishu-progress-bot", version: "0.1.0" },
    { capabilities: { tools: {} }, instructions: TOOL_DESCRIPTIONS.server, jsonSchemaValidator: validator },
  );
  const list = { tools: [...tools.values()].map((t) => t.definition) };
  server.setRequestHandler(ListToolsRequestSchema, () => list);
  server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
    const found = tools.get(request.params.name);
    if (!found) throw new McpError(ErrorCode.InvalidParams, `Tool ${request.params.name} not found`);
    return found.call({ who, tasks, log, refused, calls }, request.params.arguments, extra);
  });
  return server;
}
