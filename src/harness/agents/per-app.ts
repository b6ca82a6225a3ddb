import { ASK_TOOL_NAME } from "../../asks/schema.ts";
import type { ToolHost, ToolImpl } from "../dispatcher.ts";
import type { Agent, AgentContext } from "./agent.ts";

/**
 * Several Feishu apps, each with its own agent (issue 30). The runner and the dispatcher keep one agent and one
 * tool list; this is that one agent, and that list, made of every app's:
 * - `run` hands the run to the agent of the app the run belongs to (`appOf`, read from the run's source), or to
 *   the environment's (`fallback`) for a run of an app without an agent of its own, or of no app at all;
 * - each agent sees only its own tools (plus `ask_user_questions`), in its own definitions;
 * - a tool two agents both have (`delegate`, bound to each OpenAI agent's own model) is one entry of the
 *   dispatcher that runs the run's agent's own, and hands it a host that lists that agent's tools only (a
 *   sub-agent of app B never sees app A's tools); a call of a tool the run's agent does not have fails as unknown.
 */

export interface AgentWithTools {
  agent: Agent;
  tools: ToolImpl[];
}

export interface PerAppAgentOptions {
  fallback: AgentWithTools;
  /** App id → that app's own agent. */
  apps: ReadonlyMap<string, AgentWithTools>;
  /** The app a run belongs to, if any. */
  appOf: (runId: string) => Promise<string | undefined>;
}

export function createPerAppAgent(options: PerAppAgentOptions): AgentWithTools {
  const choiceOf = async (runId: string): Promise<AgentWithTools> => {
    const app = await options.appOf(runId);
    return (app === undefined ? undefined : options.apps.get(app)) ?? options.fallback;
  };
  const all = [options.fallback, ...options.apps.values()];
  const agent: Agent = {
    name: options.fallback.agent.name,
    async run(context: AgentContext) {
      const choice = await choiceOf(context.runId);
      const own = new Map(choice.tools.map((tool) => [tool.definition.name, tool.definition]));
      // Kept in the order and under the session's filter the runner applied; each in its agent's own words.
      const tools = context.tools.flatMap((tool) => {
        if (tool.name === ASK_TOOL_NAME) return [tool];
        const mine = own.get(tool.name);
        return mine ? [mine] : [];
      });
      return choice.agent.run({ ...context, tools });
    },
    async close() {
      await Promise.all(all.map((choice) => choice.agent.close?.()));
    },
    async pinned(runId) {
      return (await (await choiceOf(runId)).agent.pinned?.(runId)) ?? false;
    },
  };
  const names = [...new Set(all.flatMap((choice) => choice.tools.map((tool) => tool.definition.name)))];
  const tools = names.map((name): ToolImpl => {
    const first = all.flatMap((choice) => choice.tools).find((tool) => tool.definition.name === name);
    return {
      // The dispatcher lists it under this definition; each agent is shown its own (`run` above).
      definition: (first as ToolImpl).definition,
      async execute(args, ctx, host) {
        const choice = await choiceOf(ctx.runId);
        const tool = choice.tools.find((candidate) => candidate.definition.name === name);
        if (!tool) throw new Error(`Unknown tool: ${name}`);
        const scoped: ToolHost = {
          definitions: () => choice.tools.map((candidate) => candidate.definition),
          dispatch: (called, calledArgs, calledCtx) => host.dispatch(called, calledArgs, calledCtx),
        };
        return tool.execute(args, ctx, scoped);
      },
    };
  });
  return { agent, tools };
}
