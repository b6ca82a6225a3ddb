import { AGENT_TOKEN_TTL_MS, checkAgentClaims, newAgentTokenId, signAgentToken } from "./token.ts";
import type { AgentTokenStore } from "./token-store.ts";

/**
 * `npm run token -- --agent <name> [--may-ask <open_id|chat_id>,…] [--days N]`: the agent-token branch of
 * cli/token.ts. The token is the last line, so scripts can take it with `tail -1`. Every token is recorded in
 * the bot's database (its id, name, allow-list and dates, never the token), so a revocation knows what it
 * revoked: `--revoke-agent <name>` or `--revoke-token <id>` (`agentRevokeLines`).
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

export async function agentTokenLines(
  args: AgentArgs,
  secret: string,
  publicUrl: string,
  now: number,
  store: Pick<AgentTokenStore, "record">,
): Promise<string[]> {
  const expiresAt = now + (args.days !== undefined ? args.days * 24 * 60 * 60 * 1000 : AGENT_TOKEN_TTL_MS);
  const tokenId = newAgentTokenId();
  // Recorded before it is printed: a token that exists is always one a revocation can find.
  await store.record({ tokenId, agent: args.agent, mayAsk: args.mayAsk, issuedAt: now, expiresAt });
  const token = signAgentToken(secret, {
    agent: args.agent,
    mayAsk: args.mayAsk,
    expiresAt,
    issuedAt: now,
    tokenId,
  });
  return [
    `Agent token for "${args.agent}" (valid until ${new Date(expiresAt).toISOString()}).`,
    `  Token id: ${tokenId} (revoke it with: npm run token -- --revoke-token ${tokenId})`,
    args.mayAsk.length > 0
      ? `  May ask: ${args.mayAsk.join(", ")}`
      : "  May ask: nobody yet (add --may-ask <open_id|chat_id>,… to let it reach people)",
    `  MCP:  claude mcp add --transport http feishu ${publicUrl}/mcp --header "Authorization: Bearer <token>"`,
    `  HTTP: curl -H "Authorization: Bearer <token>" ${publicUrl}/api/tasks …`,
    "Token:",
    token,
  ];
}

export const REVOKE_AGENT_USAGE =
  "usage: npm run token -- --revoke-agent <name> [--force] | --revoke-token <token id>";

/**
 * `--revoke-agent <name>` / `--revoke-token <id>`: the lines to print and the exit code. "revoked" only when
 * something was: an unknown id or a name with no live recorded token is exit 1 and says so. A name whose
 * tokens were never recorded (the local console's, or minted before tokens were recorded) takes `--force`,
 * which refuses every token of that name issued until now.
 */
export async function agentRevokeLines(
  argv: readonly string[],
  store: AgentTokenStore,
  now: number,
): Promise<{ lines: string[]; exitCode: number }> {
  const [flag, target, ...rest] = argv;
  const force = rest.length === 1 && rest[0] === "--force";
  if (
    !target ||
    target.startsWith("--") ||
    (rest.length > 0 && !force) ||
    (flag === "--revoke-token" && force)
  )
    return { lines: [REVOKE_AGENT_USAGE], exitCode: 2 };
  const at = new Date(now).toISOString();
  if (flag === "--revoke-token") {
    const known = await store.token(target);
    if (!known)
      return {
        lines: [`no agent token ${target} is recorded in this DATA_DIR; nothing changed`],
        exitCode: 1,
      };
    if (!(await store.revokeToken(target, now)))
      return {
        lines: [
          `agent token ${target} ("${known.agent}") was already revoked on ${new Date(known.revokedAt ?? now).toISOString()}; nothing changed`,
        ],
        exitCode: 0,
      };
    return { lines: [`revoked agent token ${target} ("${known.agent}") at ${at}`], exitCode: 0 };
  }
  const live = (await store.tokensOf(target)).filter((t) => t.revokedAt === undefined && t.expiresAt > now);
  if (live.length === 0 && !force) {
    const known = await store.agents();
    return {
      lines: [
        `no live agent token named "${target}" is recorded in this DATA_DIR; nothing changed.`,
        `  Recorded names: ${known.length > 0 ? known.map((name) => `"${name}"`).join(", ") : "none"}.`,
        "  A token this DATA_DIR never recorded (the local console's, or one minted before tokens were recorded)",
        `  is refused with: npm run token -- --revoke-agent "${target}" --force`,
      ],
      exitCode: 1,
    };
  }
  const revoked = await store.revokeAgent(target, now);
  return {
    lines: [
      `revoked every agent token named "${target}" issued until ${at}: ${revoked.length} recorded (${revoked.map((t) => t.tokenId).join(", ") || "none"})`,
    ],
    exitCode: 0,
  };
}
