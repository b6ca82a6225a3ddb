import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { formatIssues } from "../asks/schema.ts";
import { AppError, describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { TOOL_DESCRIPTIONS } from "./descriptions.ts";
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
import type { WaitingCalls } from "./waiting-calls.ts";

/**
 * The six MCP tools (mcp.ts serves them): each one's definition for `tools/list` and its call on the
 * service, its arguments parsed with the same zod schema the definition was built from.
 */

export type SchemaOf = (schema: z.ZodType, io: "input" | "output") => Record<string, unknown>;

export const toJsonSchema: SchemaOf = (schema, io) => z.toJSONSchema(schema, { target: "draft-7", io });

/**
 * One tool: its definition as `tools/list` gives it (JSON Schema built once, when the route is mounted), and
 * its call, which parses the arguments with the same zod schema before anything runs.
 */
export interface Tool {
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

/** Where a waiting call is found by a later `notifications/cancelled` of the same caller. */
export interface CallWaits {
  waiting: WaitingCalls;
  caller: string;
}

export interface ToolExtra {
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
