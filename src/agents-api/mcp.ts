import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
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
import { z } from "zod";
import { formatIssues } from "../asks/schema.ts";
import { AppError, describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { agentOf, requireAgent } from "./auth.ts";
import { TOOL_DESCRIPTIONS } from "./descriptions.ts";
import { bodyErrors } from "./http.ts";
import { agentRequestRate } from "./request-rate.ts";
import {
  askResultSchema,
  askUserQuestionsInput,
  cancelQuestionInput,
  DEFAULT_WAIT_S,
  finishResultSchema,
  finishTaskInput,
  getAnswersInput,
  reportProgressInput,
  startTaskInput,
  stepResultSchema,
  taskResultSchema,
} from "./schemas.ts";
import type { AgentTasks } from "./service.ts";
import type { AgentPrincipal, AgentTokenRevocations } from "./token.ts";
import type { WaitOptions } from "./wait.ts";
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

export type SchemaOf = (schema: z.ZodType, io: "input" | "output") => Record<string, unknown>;

const toJsonSchema: SchemaOf = (schema, io) => z.toJSONSchema(schema, { target: "draft-7", io });

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
 * One tool: its definition as `tools/list` gives it (JSON Schema built once, when the route is mounted), and
 * its call, which parses the arguments with the same zod schema before anything runs.
 */
interface Tool {
  definition: {
    name: string;
    title: string;
    description: string;
    inputSchema: Record<string, unknown>;
    outputSchema: Record<string, unknown>;
  };
  call(ctx: ToolContext, args: unknown, extra: ToolExtra): Promise<CallToolResult>;
}

interface ToolContext {
  who: AgentPrincipal;
  tasks: AgentTasks;
  log: Logger;
  refused: (error: AppError) => void;
  calls: CallWaits;
}

function tool<S extends z.ZodType>(
  spec: {
    name: string;
    title: string;
    description: string;
    input: S;
    output: z.ZodType;
    run: (
      ctx: ToolContext,
      input: z.infer<S>,
      extra: ToolExtra,
    ) => Record<string, unknown> | Promise<Record<string, unknown>>;
  },
  schemaOf: SchemaOf,
): Tool {
  return {
    definition: {
      name: spec.name,
      title: spec.title,
      description: spec.description,
      inputSchema: schemaOf(spec.input, "input"),
      outputSchema: schemaOf(spec.output, "output"),
    },
    call: (ctx, args, extra) =>
      result(() => {
        const parsed = spec.input.safeParse(args ?? {});
        if (!parsed.success)
          throw new AppError("INVALID_INPUT", `${spec.name}: ${formatIssues(parsed.error.issues)}`);
        return spec.run(ctx, parsed.data, extra);
      }, ctx.refused),
  };
}

/**
 * The six tools, built once per mount: converting their zod schemas to JSON Schema is the expensive part of a
 * `tools/list` (50 concurrent lists, each rebuilding them, held the event loop for seconds).
 */
export function buildTools(schemaOf: SchemaOf = toJsonSchema): ReadonlyMap<string, Tool> {
  const tools = [
    tool(
      {
        name: "start_task",
        title: "Start a progress card",
        description: TOOL_DESCRIPTIONS.start_task,
        input: startTaskInput,
        output: taskResultSchema,
        run: ({ who, tasks }, input) => tasks.startTask(who, input),
      },
      schemaOf,
    ),
    tool(
      {
        name: "report_progress",
        title: "Report a step",
        description: TOOL_DESCRIPTIONS.report_progress,
        input: reportProgressInput,
        output: stepResultSchema,
        run: ({ who, tasks }, input) => tasks.reportProgress(who, input),
      },
      schemaOf,
    ),
    tool(
      {
        name: "ask_user_questions",
        title: "Ask a person in Feishu",
        description: TOOL_DESCRIPTIONS.ask_user_questions,
        input: askUserQuestionsInput,
        output: askResultSchema,
        run: ({ who, tasks, log, calls }, input, extra) =>
          waitCancellable(calls, extra, (signal) =>
            tasks.askAndWait(who, input, waitOptions(input.wait_s, extra, log, signal)),
          ),
      },
      schemaOf,
    ),
    tool(
      {
        name: "get_answers",
        title: "Get the answers",
        description: TOOL_DESCRIPTIONS.get_answers,
        input: getAnswersInput,
        output: askResultSchema,
        run: ({ who, tasks, log, calls }, input, extra) =>
          waitCancellable(calls, extra, (signal) =>
            tasks.wait(who, input.ask_id, waitOptions(input.wait_s, extra, log, signal)),
          ),
      },
      schemaOf,
    ),
    tool(
      {
        name: "cancel_question",
        title: "Withdraw a question",
        description: TOOL_DESCRIPTIONS.cancel_question,
        input: cancelQuestionInput,
        output: askResultSchema,
        run: ({ who, tasks }, input) => tasks.cancelQuestion(who, input.ask_id),
      },
      schemaOf,
    ),
    tool(
      {
        name: "finish_task",
        title: "Finish the task",
        description: TOOL_DESCRIPTIONS.finish_task,
        input: finishTaskInput,
        output: finishResultSchema,
        run: ({ who, tasks }, input) => tasks.finishTask(who, input),
      },
      schemaOf,
    ),
  ];
  return new Map(tools.map((t) => [t.definition.name, t]));
}

/**
 * The protocol shell of one request, bound to its agent: the low-level Server with the prebuilt tools. It is
 * per request because a stateless transport serves one request; it holds no schema work of its own.
 */

/** Where a waiting call is found by a later `notifications/cancelled` of the same caller. */
export interface CallWaits {
  waiting: WaitingCalls;
  caller: string;
}

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

interface ToolExtra {
  signal: AbortSignal;
  requestId: string | number;
  _meta?: { progressToken?: string | number };
  sendNotification: (notification: {
    method: "notifications/progress";
    params: { progressToken: string | number; progress: number; message: string };
  }) => Promise<void>;
}

/** A wait that ends when the call's own stream goes or its caller cancels its request id on another POST. */
async function waitCancellable<T>(
  calls: CallWaits,
  extra: ToolExtra,
  wait: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const entered = calls.waiting.enter(calls.caller, extra.requestId);
  try {
    return await wait(AbortSignal.any([extra.signal, entered.signal]));
  } finally {
    entered.done();
  }
}

function waitOptions(
  waitS: number | undefined,
  extra: ToolExtra,
  log: Logger,
  signal: AbortSignal,
): WaitOptions {
  const token = extra._meta?.progressToken;
  return {
    waitMs: (waitS ?? DEFAULT_WAIT_S) * 1000,
    signal,
    ...(token !== undefined
      ? {
          onProgress: ({ count, message }) =>
            extra.sendNotification({
              method: "notifications/progress",
              params: { progressToken: token, progress: count, message },
            }),
          onProgressError: (error) =>
            log.warn({ err: describeError(error) }, "progress notification could not be sent"),
        }
      : {}),
  };
}

/** A tool's value as structured content and as JSON text; our own refusals as a tool error the model reads. */
async function result<T extends Record<string, unknown>>(
  run: () => T | Promise<T>,
  refused: (error: AppError) => void,
): Promise<CallToolResult> {
  try {
    const value = await run();
    return { content: [{ type: "text", text: JSON.stringify(value) }], structuredContent: value };
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    refused(error);
    return { isError: true, content: [{ type: "text", text: `${error.code}: ${error.message}` }] };
  }
}
