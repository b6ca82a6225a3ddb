import { DEFAULT_WAIT_S } from "./schemas.ts";

/**
 * The one owner of how each MCP client is connected to this bot: the lines the console's 连接外部 Agent panel
 * shows (filled with a local token) and the README's blocks (filled with placeholders; test/connect-recipes
 * checks the README carries exactly these). What each client does with a long call is here too, because the
 * ask tool's description tells models to keep `wait_s` under it.
 *
 * Facts from issue 31, tried with the real clients from npm (Codex CLI 0.171.0, Gemini CLI 0.61, Claude Code
 * and MCP Inspector of the same day):
 * - Codex refuses every MCP call in `codex exec` (approval policy never) unless the server's tools are
 *   pre-approved: `default_tools_approval_mode = "approve"`.
 * - Claude Code ends a call at exactly `MCP_TOOL_TIMEOUT`; progress notifications do not extend it.
 * - Codex 0.171.0 completed a 70 s call without `tool_timeout_sec`; the recipe sets it anyway, so the limit is
 *   the one written here, not a default that moves between releases.
 */

/** Where the recipes point and with what: the real values in the console, placeholders in the README. */
export interface RecipeInput {
  mcpUrl: string;
  token: string;
}

/** Codex's tool timeout in the recipe: above the default wait_s with room for a slow answer to travel back. */
export const CODEX_TOOL_TIMEOUT_S = 120;
/** Gemini CLI's per-server `timeout` (milliseconds) in the recipe. */
export const GEMINI_TIMEOUT_MS = 120_000;

export interface ConnectRecipes {
  /** `claude mcp add …`: works verbatim (issue 31). */
  claudeCode: string;
  /** The same server as Claude Code's project file `.mcp.json` reads it. */
  claudeCodeJson: string;
  /** `~/.codex/config.toml`; the token comes from `FEISHU_AGENT_TOKEN`. */
  codexToml: string;
  codexEnv: string;
  /** Gemini CLI's `~/.gemini/settings.json` (or the project's `.gemini/settings.json`). */
  geminiJson: string;
}

export function connectRecipes({ mcpUrl, token }: RecipeInput): ConnectRecipes {
  const authorization = `Bearer ${token}`;
  return {
    claudeCode: `claude mcp add --transport http feishu ${mcpUrl} --header "Authorization: ${authorization}"`,
    claudeCodeJson: JSON.stringify(
      { mcpServers: { feishu: { type: "http", url: mcpUrl, headers: { Authorization: authorization } } } },
      null,
      2,
    ),
    codexToml: [
      "[mcp_servers.feishu]",
      `url = "${mcpUrl}"`,
      'bearer_token_env_var = "FEISHU_AGENT_TOKEN"',
      "# without it codex exec refuses every call (approval policy never)",
      'default_tools_approval_mode = "approve"',
      `# ask_user_questions waits up to wait_s (default ${DEFAULT_WAIT_S} s): keep the tool timeout above it`,
      `tool_timeout_sec = ${CODEX_TOOL_TIMEOUT_S}`,
    ].join("\n"),
    codexEnv: `export FEISHU_AGENT_TOKEN=${token}`,
    geminiJson: JSON.stringify(
      {
        mcpServers: {
          feishu: { httpUrl: mcpUrl, headers: { Authorization: authorization }, timeout: GEMINI_TIMEOUT_MS },
        },
      },
      null,
      2,
    ),
  };
}

/** The README's placeholders: what a reader replaces. */
export const README_RECIPE_INPUT: RecipeInput = { mcpUrl: "https://bot.example.com/mcp", token: "<token>" };

/**
 * Each client's limit on one tool call, as the ask tool's description tells it to models: a wait_s above it
 * means the client gives up first and the model never sees the ask id.
 */
export const CLIENT_TIMEOUTS = [
  "Claude Code ends a call at MCP_TOOL_TIMEOUT (milliseconds) and progress does not extend it",
  `Codex at tool_timeout_sec (${CODEX_TOOL_TIMEOUT_S} s in this bot's recipe)`,
  `Gemini CLI at the server's timeout (${GEMINI_TIMEOUT_MS / 1000} s in this bot's recipe, 10 minutes by default)`,
  "MCP Inspector at 10 s without progress and 60 s in all",
] as const;
