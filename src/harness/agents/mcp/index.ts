import type { Config } from "../../../config.ts";
import type { Logger } from "../../../logger.ts";
import { loadMcpConfig } from "./config.ts";
import { connectMcpServers, type McpTools } from "./servers.ts";

export { type ElicitationHandler, MCP_TOOL_SEPARATOR, type McpTools } from "./servers.ts";

/** Starting a server includes `npx` fetching it on a first run, so this is generous. */
const CONNECT_TIMEOUT_MS = 60_000;

/**
 * `MCP_CONFIG` → connected servers and their tools, or undefined when it is not set. A file that cannot be
 * read or parsed throws a ConfigError (the bot does not start); a server that fails is only left out.
 */
export async function startMcpFromConfig(
  config: Pick<Config, "agent">,
  logger: Logger,
  options: { connectTimeoutMs?: number } = {},
): Promise<McpTools | undefined> {
  const { configFile, toolTimeoutMs } = config.agent.mcp;
  if (!configFile || config.agent.kind !== "openai") return undefined;
  const file = loadMcpConfig(configFile);
  return connectMcpServers(file, {
    logger,
    callTimeoutMs: toolTimeoutMs,
    connectTimeoutMs: options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
  });
}
