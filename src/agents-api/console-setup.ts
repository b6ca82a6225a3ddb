import type { Express } from "express";
import { type ConnectRecipes, connectRecipes } from "./connect-recipes.ts";
import { AGENT_TOKEN_TTL_MS, signAgentToken } from "./token.ts";

/**
 * Local mode only: `GET /console/api/agent-setup` hands the console a ready agent token and the lines that
 * connect Claude Code, Codex and Gemini CLI to this bot (the recipes' one owner is connect-recipes.ts). The console already lets anyone at it act as Alice, Bob or
 * Carol, so a token that may ask them (and the local group) gives nothing the page does not.
 */

export const LOCAL_AGENT_NAME = "Local Agent";

export interface AgentSetup extends ConnectRecipes {
  agent: string;
  mayAsk: string[];
  token: string;
  expiresAt: number;
  mcpUrl: string;
  curl: string;
}

export function agentSetup(options: {
  authSecret: string;
  publicUrl: string;
  mayAsk: string[];
  now: number;
}): AgentSetup {
  const expiresAt = options.now + AGENT_TOKEN_TTL_MS;
  const token = signAgentToken(options.authSecret, {
    agent: LOCAL_AGENT_NAME,
    mayAsk: options.mayAsk,
    expiresAt,
  });
  const mcpUrl = `${options.publicUrl}/mcp`;
  return {
    agent: LOCAL_AGENT_NAME,
    mayAsk: options.mayAsk,
    token,
    expiresAt,
    mcpUrl,
    ...connectRecipes({ mcpUrl, token }),
    curl: `curl -X POST ${options.publicUrl}/api/tasks -H "Authorization: Bearer ${token}" -H "content-type: application/json" -d '{"to":"${options.mayAsk[0] ?? "ou_…"}","title":"Hello from curl"}'`,
  };
}

export function mountAgentSetup(
  app: Express,
  options: { authSecret: string; publicUrl: () => string; mayAsk: string[]; now: () => number },
): void {
  app.get("/console/api/agent-setup", (_req, res) => {
    res.set("Cache-Control", "no-store");
    res.json(
      agentSetup({
        authSecret: options.authSecret,
        publicUrl: options.publicUrl(),
        mayAsk: options.mayAsk,
        now: options.now(),
      }),
    );
  });
}
