import { z } from "zod";
import type { Logger } from "../../logger.ts";
import type { ToolImpl } from "../dispatcher.ts";
import { askToolDefinition, filterToolsForSession } from "../tools.ts";
import { budgeted, type RunBudgets } from "./budget.ts";
import type { ChatModel } from "./chat-model.ts";
import { DELEGATE_DESCRIPTION, SUB_AGENT_PROMPT } from "./prompts.ts";
import { parseArguments, runToolLoop } from "./tool-loop.ts";
import { defineTool } from "./tool-registry.ts";

export const DELEGATE_TOOL_NAME = "delegate";

export interface DelegateOptions {
  chat: ChatModel;
  maxSteps: number;
  /** The run budgets the agent opened: every sub-agent and each of its model requests is charged to its run's. */
  budgets: RunBudgets;
  logger: Logger;
}

/**
 * `delegate`: runs a sub-agent (the same model, a fresh conversation holding only the sub-task) and returns
 * its final answer to the calling agent. The sub-agent's tools are filtered as a sub-agent's
 * (never `ask_user_questions`: only the session's own agent talks to the person), and each of its calls
 * goes through the dispatcher marked `subAgent`, which refuses an ask even if the model names it anyway.
 * Its calls are not steps on the card and not saved: the delegate call and its result are. Every sub-agent
 * and every request it makes is charged to the run's one budget (budget.ts).
 */
export function createDelegateTool(options: DelegateOptions): ToolImpl {
  const maxDepth = options.budgets.limits.depth;
  return defineTool({
    name: DELEGATE_TOOL_NAME,
    description: DELEGATE_DESCRIPTION,
    input: z.strictObject({
      task: z
        .string()
        .trim()
        .min(1, "task must not be empty")
        .max(8000, "task must be at most 8000 characters")
        .describe("The sub-task, with every fact the sub-agent needs"),
    }),
    async execute({ task }, ctx, host) {
      const depth = (ctx.depth ?? 0) + 1;
      const budget = options.budgets.forRun(ctx.runId);
      // Refused, not thrown: the model reads why and finishes the work itself; the step shows the reason.
      const refusal = budget.spendSubAgent(depth);
      if (refusal !== undefined) {
        options.logger.warn(
          { runId: ctx.runId, depth, used: budget.used },
          "sub-agent refused by the run budget",
        );
        return { error: refusal, summary: refusal };
      }
      const tools = filterToolsForSession([askToolDefinition(), ...host.definitions()], ctx.session, {
        subAgent: true,
      }).filter((tool) => tool.name !== DELEGATE_TOOL_NAME || depth < maxDepth);
      const subContext = { ...ctx, subAgent: true, depth };
      options.logger.info({ sessionId: ctx.session.id, runId: ctx.runId, depth }, "sub-agent started");
      const text = await runToolLoop({
        chat: budgeted(options.chat, budget),
        messages: [
          { role: "system", content: SUB_AGENT_PROMPT },
          { role: "user", content: task },
        ],
        tools,
        signal: ctx.signal,
        maxSteps: options.maxSteps,
        callTools: (calls) =>
          Promise.all(
            calls.map(async (call) => {
              const result = await host.dispatch(call.name, parseArguments(call.arguments), subContext);
              return result.content;
            }),
          ),
      });
      return { result: text, summary: text.replace(/\s+/g, " ").slice(0, 80) };
    },
  });
}
