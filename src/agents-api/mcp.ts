import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import express, { type Express, type NextFunction, type Request, type Response } from "express";
import { AppError, describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { agentOf, requireAgent } from "./auth.ts";
import { TOOL_DESCRIPTIONS } from "./descriptions.ts";
import { bodyErrors } from "./http.ts";
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
import type { AgentPrincipal } from "./token.ts";
import type { WaitOptions } from "./wait.ts";
import { callerOf, cancelledIds, WaitingCalls } from "./waiting-calls.ts";

/**
 * MCP over Streamable HTTP at /mcp, stateless: each POST gets its own McpServer and transport, bound to the
 * agent of its token. Nothing of a conversation lives in this process between calls — the asks do (the
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
}

export function mountMcp(app: Express, deps: McpDeps): void {
  const log = deps.logger.child({ module: "mcp" });
  const json = express.json({ limit: deps.maxBodyBytes ?? 256 * 1024 });
  const waiting = new WaitingCalls();
  app.post("/mcp", requireAgent(deps.authSecret, deps.now), json, async (req, res, next) => {
    try {
      const caller = callerOf(req.get("authorization"));
      for (const id of cancelledIds(req.body))
        if (waiting.cancel(caller, id))
          log.info({ agent: agentOf(req).agent, requestId: id }, "agent cancelled a waiting call");
      const server = buildServer(agentOf(req), deps.tasks, log, { waiting, caller });
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
  });
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

/** Where a waiting call is found by a later `notifications/cancelled` of the same caller. */
export interface CallWaits {
  waiting: WaitingCalls;
  caller: string;
}

export function buildServer(
  who: AgentPrincipal,
  tasks: AgentTasks,
  log: Logger,
  calls: CallWaits = { waiting: new WaitingCalls(), caller: "" },
): McpServer {
  // Refusals (not allowed, rate-limited, bad input) are what an operator looks for when an agent says "it failed".
  const refused = (error: AppError) =>
    log.info({ agent: who.agent, code: error.code, reason: error.message }, "agent call refused");
  const server = new McpServer(
    { name: "feishu-progress-bot", version: "0.1.0" },
    { instructions: TOOL_DESCRIPTIONS.server },
  );
  server.registerTool(
    "start_task",
    {
      title: "Start a progress card",
      description: TOOL_DESCRIPTIONS.start_task,
      inputSchema: startTaskInput,
      outputSchema: taskResultSchema,
    },
    (input) => result(() => tasks.startTask(who, input), refused),
  );
  server.registerTool(
    "report_progress",
    {
      title: "Report a step",
      description: TOOL_DESCRIPTIONS.report_progress,
      inputSchema: reportProgressInput,
      outputSchema: stepResultSchema,
    },
    (input) => result(() => tasks.reportProgress(who, input), refused),
  );
  server.registerTool(
    "ask_user_questions",
    {
      title: "Ask a person in Feishu",
      description: TOOL_DESCRIPTIONS.ask_user_questions,
      inputSchema: askUserQuestionsInput,
      outputSchema: askResultSchema,
    },
    (input, extra) =>
      result(async () => {
        const askId = tasks.ask(who, input);
        return waitCancellable(calls, extra, (signal) =>
          tasks.wait(who, askId, waitOptions(input.wait_s, extra, log, signal)),
        );
      }, refused),
  );
  server.registerTool(
    "get_answers",
    {
      title: "Get the answers",
      description: TOOL_DESCRIPTIONS.get_answers,
      inputSchema: getAnswersInput,
      outputSchema: askResultSchema,
    },
    (input, extra) =>
      result(
        () =>
          waitCancellable(calls, extra, (signal) =>
            tasks.wait(who, input.ask_id, waitOptions(input.wait_s, extra, log, signal)),
          ),
        refused,
      ),
  );
  server.registerTool(
    "cancel_question",
    {
      title: "Withdraw a question",
      description: TOOL_DESCRIPTIONS.cancel_question,
      inputSchema: cancelQuestionInput,
      outputSchema: askResultSchema,
    },
    (input) => result(() => tasks.cancelQuestion(who, input.ask_id), refused),
  );
  server.registerTool(
    "finish_task",
    {
      title: "Finish the task",
      description: TOOL_DESCRIPTIONS.finish_task,
      inputSchema: finishTaskInput,
      outputSchema: finishResultSchema,
    },
    (input) => result(() => tasks.finishTask(who, input), refused),
  );
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
