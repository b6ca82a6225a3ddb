import type { ElicitationAsk, ElicitResponse } from "../asks/elicitation.ts";
import type { PendingAsk } from "../asks/pending.ts";
import type { AskRegistry } from "../asks/registry.ts";
import { ASK_TOOL_NAME, parseAskInput } from "../asks/schema.ts";
import { ASK_ERRORS, askInvalid, askRefused, askResult, toolFailed, toolResultOf } from "../asks/summary.ts";
import type { AskSurface } from "../domain/ports.ts";
import type { ToolResult } from "../domain/tool-result.ts";
import type { SessionInfo, ToolDefinition } from "../domain/types.ts";
import { describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { strings } from "../strings/index.ts";
import { isShutdown } from "./shutdown.ts";

export interface ToolContext {
  session: SessionInfo;
  runId: string;
  senderId: string;
  signal: AbortSignal;
  /** Set on calls a sub-agent makes: `ask_user_questions` is refused, only the session's agent may ask. */
  subAgent?: boolean;
  /** How many sub-agents deep the call is (0 or absent: the session's own agent); bounds `delegate`. */
  depth?: number;
  /** The call's id in history: an ask records it, so a resumed turn finds its ask again. */
  toolCallId?: string;
  /** The call belongs to a turn resumed after a restart: an ask it made before is waited on, not asked again. */
  resuming?: boolean;
}

/** What a tool may use to run tools itself (a sub-agent's calls go through the same dispatcher). */
export interface ToolHost {
  definitions(): ToolDefinition[];
  dispatch(name: string, args: unknown, ctx: ToolContext): Promise<ToolResult>;
}

export interface ToolImpl {
  definition: ToolDefinition;
  execute(args: unknown, ctx: ToolContext, host: ToolHost): Promise<string>;
}

export type { AskSurface } from "../domain/ports.ts";

export interface DispatcherDeps {
  registry: AskRegistry;
  tools: readonly ToolImpl[];
  surfaces: readonly AskSurface[];
  logger: Logger;
}

/**
 * Runs tool calls. `ask_user_questions` has its own branch, independent of any approval or permission
 * logic: validate → can a surface reach the sender? → register → wait → result. Every path returns a
 * ToolResult (JSON content the model can read, whether it failed, its summary); nothing here throws at the
 * agent except an abort.
 */
export class ToolDispatcher implements ToolHost {
  readonly #deps: DispatcherDeps;
  readonly #tools: Map<string, ToolImpl>;
  readonly #surfaces: AskSurface[];

  constructor(deps: DispatcherDeps) {
    this.#deps = deps;
    this.#tools = new Map(deps.tools.map((tool) => [tool.definition.name, tool]));
    this.#surfaces = [...deps.surfaces];
  }

  /** Channels plug in after construction (the Feishu channel is built after the runner). */
  addSurface(surface: AskSurface): void {
    this.#surfaces.push(surface);
  }

  definitions(): ToolDefinition[] {
    return [...this.#tools.values()].map((tool) => tool.definition);
  }

  async dispatch(name: string, args: unknown, ctx: ToolContext): Promise<ToolResult> {
    if (name === ASK_TOOL_NAME) return this.#dispatchAsk(args, ctx);
    const tool = this.#tools.get(name);
    if (!tool) return toolFailed(`Unknown tool: ${name}`);
    try {
      return toolResultOf(await tool.execute(args, ctx, this));
    } catch (error) {
      if (ctx.signal.aborted) throw error;
      this.#deps.logger.warn({ tool: name, err: error }, "tool failed");
      return toolFailed(describeError(error));
    }
  }

  /**
   * An MCP server's form (asks/elicitation.ts), through the same registry as `ask_user_questions`: only a
   * surface that can show it (the Feishu card) counts; timeout, abort or no surface answer `cancel`.
   */
  async elicit(elicitation: ElicitationAsk, ctx: ToolContext): Promise<ElicitResponse> {
    if (ctx.subAgent) return { action: "decline" };
    const target = { sessionId: ctx.session.id, runId: ctx.runId, userId: ctx.senderId };
    const reachable = this.#surfaces.filter(
      (surface) => surface.name === "feishu" && safeCanReach(surface, target, this.#deps.logger),
    );
    if (reachable.length === 0) return { action: "cancel" };
    const { registry } = this.#deps;
    const ask = await registry.register({
      sessionId: ctx.session.id,
      runId: ctx.runId,
      answererId: ctx.senderId,
      questions: [],
      surfaces: reachable.map((surface) => surface.name),
      elicitation,
    });
    // The waiter first: an abort that came while the ask was written settles it at once below, and a
    // memory-only registry forgets a settled ask.
    const answer = registry.waitForAnswer(ask.requestId);
    const onAbort = () => void registry.cancel(ask.requestId, ASK_ERRORS.cancelled);
    ctx.signal.addEventListener("abort", onAbort, { once: true });
    if (ctx.signal.aborted) onAbort();
    try {
      const outcome = await answer;
      return outcome.kind === "answered" && outcome.response ? outcome.response : { action: "cancel" };
    } finally {
      ctx.signal.removeEventListener("abort", onAbort);
    }
  }

  async #dispatchAsk(args: unknown, ctx: ToolContext): Promise<ToolResult> {
    if (ctx.subAgent) return askRefused("ask_user_questions is not available to sub-agents");
    const parsed = parseAskInput(args);
    if (!parsed.ok) return askInvalid(parsed);

    const { registry } = this.#deps;
    if (ctx.resuming && ctx.toolCallId) {
      const earlier = await registry.forToolCall(ctx.runId, ctx.toolCallId);
      if (earlier?.outcome) return askResult(earlier.outcome);
      if (earlier) return this.#wait(earlier.ask.requestId, ctx);
    }
    const target = { sessionId: ctx.session.id, runId: ctx.runId, userId: ctx.senderId };
    const reachable = this.#surfaces.filter((surface) => safeCanReach(surface, target, this.#deps.logger));
    if (reachable.length === 0) return askRefused(strings.askUnavailable);

    let ask: PendingAsk;
    try {
      ask = await registry.register({
        sessionId: ctx.session.id,
        runId: ctx.runId,
        answererId: ctx.senderId,
        questions: parsed.value.questions,
        surfaces: reachable.map((surface) => surface.name),
        ...(parsed.value.metadata ? { metadata: parsed.value.metadata } : {}),
        ...(ctx.toolCallId ? { toolCallId: ctx.toolCallId } : {}),
      });
    } catch (error) {
      // The ask row could not be written: nobody could answer it durably, so it is not asked; the model is told.
      this.#deps.logger.error({ err: error }, "ask could not be saved");
      return askRefused(`${strings.askUnavailable}: ${describeError(error)}`);
    }
    return this.#wait(ask.requestId, ctx);
  }

  /**
   * Waits for the ask. An abort by cancel ends it; an abort by shutdown leaves it pending (its row stays, the
   * next start resumes the run at this call) and only stops this process from waiting.
   */
  async #wait(requestId: string, ctx: ToolContext): Promise<ToolResult> {
    const { registry } = this.#deps;
    let stop: (reason: unknown) => void = () => {};
    const stopped = new Promise<never>((_, reject) => {
      stop = reject;
    });
    const onAbort = () => {
      if (isShutdown(ctx.signal)) stop(ctx.signal.reason);
      else void registry.cancel(requestId, ASK_ERRORS.cancelled);
    };
    // The waiter before the abort check, as in elicit.
    const answer = registry.waitForAnswer(requestId);
    ctx.signal.addEventListener("abort", onAbort, { once: true });
    if (ctx.signal.aborted) onAbort();
    try {
      return askResult(await Promise.race([answer, stopped]));
    } finally {
      ctx.signal.removeEventListener("abort", onAbort);
    }
  }
}

function safeCanReach(
  surface: AskSurface,
  target: { sessionId: string; runId: string; userId: string },
  logger: Logger,
): boolean {
  try {
    return surface.canReach(target);
  } catch (error) {
    logger.error({ surface: surface.name, err: error }, "ask surface check failed");
    return false;
  }
}
