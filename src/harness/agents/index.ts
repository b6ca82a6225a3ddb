import path from "node:path";
import type { Config, FeishuSettings } from "../../config.ts";
import type { StandingPermissions } from "../../domain/standing-permissions.ts";
import { ConfigError } from "../../errors.ts";
import type { Logger } from "../../logger.ts";
import type { ToolImpl } from "../dispatcher.ts";
import { createAcpAgent } from "./acp/index.ts";
import type { Agent } from "./agent.ts";
import { createDemoAgent, createDemoTools } from "./demo.ts";
import type { Isolation } from "./isolation.ts";
import { createOpenAIAgent } from "./openai.ts";
import { type AgentWithTools, createPerAppAgent } from "./per-app.ts";
import { currentTimeTool, ToolRegistry } from "./tool-registry.ts";

type AgentExtras = { tools?: readonly ToolImpl[]; isolation?: Isolation; standing?: StandingPermissions };

/**
 * Every agent of the configuration as one (issue 30): the environment's, and each app's own (`apps[i].agent`),
 * chosen per run by the app its source names (per-app.ts). Without an app agent, just the environment's.
 * `runSource` reads a run's recorded source (the store's); a Feishu run naming no app is the first app's, as
 * its card is (feishu/apps.ts).
 */
export function createAgentsFromConfig(
  config: Pick<Config, "agent" | "dataDir"> & { apps?: readonly FeishuSettings[] },
  logger: Logger,
  extra: AgentExtras,
  runSource: (runId: string) => Promise<Record<string, unknown> | undefined>,
): AgentWithTools {
  const fallback = createAgentFromConfig(config, logger, extra);
  const own = (config.apps ?? []).filter((app) => app.agent !== undefined);
  if (own.length === 0) return fallback;
  const apps = new Map<string, AgentWithTools>();
  for (const app of own) {
    if (!app.agent) continue;
    // Each app's agent keeps its state (an ACP agent's session ids) apart, as its workspaces are.
    const dataDir = path.join(config.dataDir, "apps", app.appId);
    apps.set(
      app.appId,
      createAgentFromConfig({ agent: app.agent, dataDir }, logger.child({ appId: app.appId }), extra),
    );
  }
  const firstApp = config.apps?.[0]?.appId;
  return createPerAppAgent({
    fallback,
    apps,
    appOf: async (runId) => {
      const source = await runSource(runId);
      if (source?.channel !== "feishu") return undefined;
      return typeof source.appId === "string" ? source.appId : firstApp;
    },
  });
}

/**
 * The agent `AGENT` names, with the tools its dispatcher serves. Operators add their own tools to the
 * registry here (see tool-registry.ts); `ask_user_questions` is built in and never registered.
 */
export function createAgentFromConfig(
  config: Pick<Config, "agent" | "dataDir">,
  logger: Logger,
  extra: AgentExtras = {},
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
