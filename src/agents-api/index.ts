import type { Express } from "express";
import type { AskRegistry } from "../asks/registry.ts";
import type { JoinedFeed } from "../domain/run-feed.ts";
import type { Logger } from "../logger.ts";
import type { StoreSql } from "../store/sql.ts";
import { mountAgentHttpApi } from "./http.ts";
import { mountMcp } from "./mcp.ts";
import { agentRequestRate, type RequestRates } from "./request-rate.ts";
import { AgentTasks, type AgentTasksOptions } from "./service.ts";
import { AgentStore } from "./store.ts";
import { AgentTokenStore } from "./token-store.ts";

export { AgentTasks } from "./service.ts";

/**
 * Any agent can ask a Feishu user (issue 17): the MCP server at /mcp and the HTTP API under /api, over one
 * AgentTasks. Its tasks join `runs`, the feed the Feishu cards, the hub and the session pages read; main.ts
 * and the tests wire it the same way.
 */
export function createAgentsApi(options: {
  registry: AskRegistry;
  /** Keeps tasks, asks and agent tokens across restarts (the bot's store: the SQLite file or Postgres). */
  store?: StoreSql;
  authSecret: string;
  askTimeoutMs: number;
  now: () => number;
  logger: Logger;
  /** The run feed the cards, the hub and the session pages read (core.runs): the tasks join it. */
  runs: Pick<JoinedFeed, "add">;
  tuning?: Pick<
    AgentTasksOptions,
    | "perAgent"
    | "perTarget"
    | "progressIntervalMs"
    | "nameOf"
    | "newId"
    | "waits"
    | "maxLiveTasks"
    | "stepsCoalesceMs"
  >;
  /** Requests per agent token on /mcp and /api together (request-rate.ts). */
  requestRates?: RequestRates;
}): { tasks: AgentTasks; mount: (app: Express) => void } {
  const tasks = new AgentTasks({
    registry: options.registry,
    now: options.now,
    askTimeoutMs: options.askTimeoutMs,
    logger: options.logger.child({ module: "agents" }),
    ...(options.store ? { store: new AgentStore(options.store) } : {}),
    ...options.tuning,
  });
  options.runs.add(tasks.feed);
  const requestRate = agentRequestRate(options.now, options.requestRates);
  const deps = {
    tasks,
    authSecret: options.authSecret,
    now: options.now,
    logger: options.logger,
    requestRate,
    // Revocations written by `npm run token -- --revoke-agent|--revoke-token` into this DATA_DIR.
    ...(options.store ? { revocations: new AgentTokenStore(options.store) } : {}),
  };
  return {
    tasks,
    mount(app) {
      mountMcp(app, deps);
      mountAgentHttpApi(app, deps);
    },
  };
}
