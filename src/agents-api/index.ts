import type { Express } from "express";
import type { AskRegistry } from "../asks/registry.ts";
import type { Logger } from "../logger.ts";
import { mountAgentHttpApi } from "./http.ts";
import { mountMcp } from "./mcp.ts";
import { type AgentCardPort, AgentTasks, type AgentTasksOptions } from "./service.ts";

export type { AgentCardPort, AgentCardTarget } from "./service.ts";
export { AgentTasks } from "./service.ts";

/**
 * Any agent can ask a Feishu user (issue 17): the MCP server at /mcp and the HTTP API under /api, over one
 * AgentTasks. `cards` is the Feishu channel's agent-card hook; main.ts and the tests wire it the same way.
 */
export function createAgentsApi(options: {
  registry: AskRegistry;
  cards: AgentCardPort;
  authSecret: string;
  askTimeoutMs: number;
  now: () => number;
  logger: Logger;
  tuning?: Pick<AgentTasksOptions, "perAgent" | "perTarget" | "progressIntervalMs" | "nameOf" | "newId">;
}): { tasks: AgentTasks; mount: (app: Express) => void } {
  const tasks = new AgentTasks({
    registry: options.registry,
    cards: options.cards,
    now: options.now,
    askTimeoutMs: options.askTimeoutMs,
    ...options.tuning,
  });
  const deps = { tasks, authSecret: options.authSecret, now: options.now, logger: options.logger };
  return {
    tasks,
    mount(app) {
      mountMcp(app, deps);
      mountAgentHttpApi(app, deps);
    },
  };
}

/** The Feishu channel as the agents' card port (its openAgentCard / updateAgentRun hook). */
export function agentCardsOn(channel: {
  openAgentCard: AgentCardPort["open"];
  updateAgentRun: AgentCardPort["update"];
}): AgentCardPort {
  return {
    open: (run, where) => channel.openAgentCard(run, where),
    update: (run) => channel.updateAgentRun(run),
  };
}
