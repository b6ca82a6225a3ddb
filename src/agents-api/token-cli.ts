import { AGENT_TOKEN_TTL_MS, checkAgentClaims, signAgentToken } from "./token.ts";

/**
 * `npm run token -- --agent <name> [--may-ask <open_id|chat_id>,…] [--days N]`: the agent-token branch of
 * cli/token.ts. The token is the last line, so scripts can take it with `tail -1`.
 */

export const AGENT_USAGE =
  "usage: npm run token -- --agent <name> [--may-ask <open_id|chat_id>,…] [--days N]";

export interface AgentArgs {
  agent: string;
  mayAsk: string[];
  days: number | undefined;
}

export function parseAgentArgs(
  argv: readonly string[],
): { ok: true; value: AgentArgs } | { ok: false; error: string } {
  const [agent, ...rest] = argv;
  if (!agent || agent.startsWith("--")) return { ok: false, error: AGENT_USAGE };
  const mayAsk: string[] = [];
  let days: number | undefined;
  for (let i = 0; i < rest.length; i += 2) {
    const flag = rest[i];
    const value = rest[i + 1];
    if (value === undefined) return { ok: false, error: `${flag} needs a value\n${AGENT_USAGE}` };
    if (flag === "--may-ask") {
      mayAsk.push(
        ...value
          .split(",")
          .map((id) => id.trim())
          .filter((id) => id !== ""),
      );
    } else if (flag === "--days") {
      days = Number(value);
      if (!(Number.isFinite(days) && days > 0))
        return { ok: false, error: "--days must be a positive number" };
    } else {
      return { ok: false, error: `unknown option ${flag}\n${AGENT_USAGE}` };
    }
  }
  const problem = checkAgentClaims(agent, mayAsk);
  if (problem) return { ok: false, error: problem };
  return { ok: true, value: { agent, mayAsk: [...new Set(mayAsk)], days } };
}

export function agentTokenLines(args: AgentArgs, secret: string, publicUrl: string, now: number): string[] {
  const expiresAt = now + (args.days !== undefined ? args.days * 24 * 60 * 60 * 1000 : AGENT_TOKEN_TTL_MS);
  const token = signAgentToken(secret, { agent: args.agent, mayAsk: args.mayAsk, expiresAt });
  return [
    `Agent token for "${args.agent}" (valid until ${new Date(expiresAt).toISOString()}).`,
    args.mayAsk.length > 0
      ? `  May ask: ${args.mayAsk.join(", ")}`
      : "  May ask: nobody yet (add --may-ask <open_id|chat_id>,… to let it reach people)",
    `  MCP:  claude mcp add --transport http feishu ${publicUrl}/mcp --header "Authorization: Bearer <token>"`,
    `  HTTP: curl -H "Authorization: Bearer <token>" ${publicUrl}/api/tasks …`,
    "Token:",
    token,
  ];
}
