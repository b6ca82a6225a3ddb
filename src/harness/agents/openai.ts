import { ASK_TOOL_NAME } from "../../asks/schema.ts";
import type { Logger } from "../../logger.ts";
import { bilingual, type Localized, strings } from "../../strings/index.ts";
import type { Agent, AgentContext, AgentResult } from "./agent.ts";
import { budgeted, type RunBudgetLimits, RunBudgets } from "./budget.ts";
import { toChatMessages } from "./chat-history.ts";
import { type ChatModel, createChatModel, type ModelToolCall } from "./chat-model.ts";
import { createDelegateTool, DELEGATE_TOOL_NAME } from "./delegate.ts";
import { systemPromptFor } from "./prompts.ts";
import { parseArguments, runToolLoop, throttledText } from "./tool-loop.ts";
import type { ToolRegistry } from "./tool-registry.ts";

export interface OpenAIAgentOptions {
  baseUrl: string;
  apiKey?: string | undefined;
  model: string;
  /** Model requests per run (and per sub-agent) before the run fails; default 25. */
  maxSteps?: number;
  /** Retries of one request on 408/409/429/5xx, timeouts and dropped connections; default 3. */
  maxRetries?: number;
  /** Silence (no headers, no stream chunk) after which a request counts as timed out; default 120 s. */
  requestTimeoutMs?: number;
  /** First retry backoff, doubling per retry; default 1 s (tests shorten it). */
  retryBaseMs?: number;
  /** Minimum gap between streamed-text reports to the run; default 100 ms. */
  textIntervalMs?: number;
  /** When given, `delegate` is registered on it, bound to this agent's model. */
  tools?: ToolRegistry;
  /** How deep `delegate` may nest; default 2 (a sub-agent may delegate once more). Same as budget.depth. */
  maxDelegateDepth?: number;
  /** One run's budget across all its sub-agents: model requests, sub-agents, depth (budget.ts defaults). */
  budget?: Partial<RunBudgetLimits>;
  /** Replaces the default system prompt; the Feishu instruction is still added on Feishu sessions. */
  systemPrompt?: string;
  logger: Logger;
}

/**
 * An agent on any OpenAI-compatible chat completions endpoint. Each run rebuilds the conversation from
 * the session's saved history (so a resumed run continues from the last saved turn), then loops: stream a
 * reply into the card, run its tool calls as one turn through the runner, feed the results back.
 */
export function createOpenAIAgent(options: OpenAIAgentOptions): Agent {
  const logger = options.logger.child({ module: "openai-agent" });
  const maxSteps = options.maxSteps ?? 25;
  const chat: ChatModel = createChatModel({
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    model: options.model,
    logger,
    ...(options.maxRetries === undefined ? {} : { maxRetries: options.maxRetries }),
    ...(options.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: options.requestTimeoutMs }),
    ...(options.retryBaseMs === undefined ? {} : { retryBaseMs: options.retryBaseMs }),
  });
  const budgets = new RunBudgets({
    ...options.budget,
    ...(options.maxDelegateDepth === undefined ? {} : { depth: options.maxDelegateDepth }),
  });
  if (options.tools && !options.tools.has(DELEGATE_TOOL_NAME)) {
    options.tools.register(createDelegateTool({ chat, maxSteps, budgets, logger }));
  }

  return {
    name: "openai",
    async run(ctx: AgentContext): Promise<AgentResult> {
      const messages = toChatMessages(
        ctx.history,
        systemPromptFor(ctx.session, ctx.tools, options.systemPrompt),
      );
      // The runner saves the input before the run starts; a context without it still gets it once.
      if (!ctx.history.some((message) => message.role === "user" && message.runId === ctx.runId))
        messages.push({ role: "user", content: ctx.input });
      const text = throttledText(ctx.reportText, options.textIntervalMs ?? 100);
      logger.debug({ runId: ctx.runId, resumed: ctx.resumed, tools: ctx.tools.length }, "model run started");
      const budget = budgets.open(ctx.runId);
      // Every request of the run, its sub-agents' too, is charged here: the run's token sums (issue 30).
      budget.onUsage = ctx.reportUsage;
      try {
        const answer = await runToolLoop({
          chat: budgeted(chat, budget),
          messages,
          tools: ctx.tools,
          signal: ctx.signal,
          maxSteps,
          onText: text.push,
          // A turn that waited on a question when the process stopped: finish it, do not ask the model again.
          resume: ctx.pendingTurns?.[0],
          callTools: (calls, said) => {
            text.flush();
            return ctx.callTools(
              calls.map((call) => ({
                id: call.id,
                name: call.name,
                args: parseArguments(call.arguments),
                ...titleOf(call),
              })),
              { text: said },
            );
          },
        });
        return { text: answer || strings.model.emptyAnswer };
      } finally {
        logger.debug({ runId: ctx.runId, used: budget.used }, "model run ended");
        budgets.close(ctx.runId);
      }
    },
  };
}

/** The step's title on the card: what the call is for, in a few words (in every language, when ours). */
function titleOf(call: ModelToolCall): { title: string; titleWords?: Localized } {
  if (call.name === ASK_TOOL_NAME)
    return { title: strings.model.askTitle, titleWords: bilingual.model.askTitle };
  if (call.name === DELEGATE_TOOL_NAME) {
    const args = parseArguments(call.arguments);
    const task = typeof args === "object" && args !== null && "task" in args ? String(args.task) : "";
    const short = task.replace(/\s+/g, " ").trim();
    const shown = short.length > 30 ? `${short.slice(0, 29)}…` : short;
    return { title: strings.model.delegateTitle(shown), titleWords: bilingual.model.delegateTitle(shown) };
  }
  return { title: call.name };
}
