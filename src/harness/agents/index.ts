import type { Config } from "../../config.ts";
import type { StandingPermissions } from "../../domain/standing-permissions.ts";
import { ConfigError } from "../../errors.ts";
import type { Logger } from "../../logger.ts";
import type { ToolImpl } from "../dispatcher.ts";
import { createAcpAgent } from "./acp/index.ts";
import type { Agent } from "./agent.ts";
import { createDemoAgent, createDemoTools } from "./demo.ts";
import type { Isolation } from "./isolation.ts";
import { createOpenAIAgent } from "./openai.ts";
import { currentTimeTool, ToolRegistry } from "./tool-registry.ts";

/**
 * The agent `AGENT` names, with the tools its dispatcher serves. Operators add their own tools to the
 * registry here (see tool-registry.ts); `ask_user_questions` is built in and never registered.
 */
export function createAgentFromConfig(
  config: Pick<Config, "agent" | "dataDir">,
  logger: Logger,
  extra: { tools?: readonly ToolImpl[]; isolation?: Isolation; standing?: StandingPermissions } = {},
): { agent: Agent; tools: ToolImpl[] } {
  const { agent } = config;
  if (agent.kind === "acp") {
    if (!agent.acp?.command) throw new ConfigError("AGENT=acp needs ACP_COMMAND");
    // The ACP agent brings its own tools; the dispatcher serves only ask_user_questions (its permission forms).
    const isolation = extra.isolation ? { isolation: extra.isolation } : {};
    // "Always allow" choices (issue 30), kept by the service's store so a restart keeps them.
    const standing = extra.standing ? { standing: extra.standing } : {};
    return {
      agent: createAcpAgent({ ...agent.acp, dataDir: config.dataDir, logger, ...isolation, ...standing }),
      tools: [],
    };
  }
  if (agent.kind === "demo")
    return { agent: createDemoAgent(), tools: createDemoTools({ stepMs: agent.demoStepMs }) };
  const { baseUrl, apiKey, model } = agent.openai;
  // loadConfig already insists on both; this keeps a hand-built Config honest too.
  if (!baseUrl || !model) throw new ConfigError("AGENT=openai needs OPENAI_BASE_URL and OPENAI_MODEL");
  const registry = new ToolRegistry().register(currentTimeTool());
  // MCP tools (mcp/servers.ts) before `delegate`, so sub-agents see them too (the usual filtering applies).
  for (const tool of extra.tools ?? []) registry.register(tool);
  // Registers `delegate` on the registry (it needs this agent's model), so list the tools after it.
  const openai = createOpenAIAgent({ baseUrl, apiKey, model, tools: registry, budget: agent.budget, logger });
  return { agent: openai, tools: registry.list() };
}
