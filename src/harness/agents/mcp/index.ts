import { type ElicitationAsk, type ElicitResponse, elicitFields } from "../../../asks/elicitation.ts";
import type { Config } from "../../../config.ts";
import type { Logger } from "../../../logger.ts";
import type { ToolContext } from "../../dispatcher.ts";
import type { Isolation } from "../isolation.ts";
import { loadMcpConfig } from "./config.ts";
import { checkElicitUrl } from "./elicit-url.ts";
import { connectMcpServers, type ElicitationHandler, type McpTools } from "./servers.ts";

export { type ElicitationHandler, MCP_TOOL_SEPARATOR, type McpTools } from "./servers.ts";

/** Starting a server includes `npx` fetching it on a first run, so this is generous. */
const CONNECT_TIMEOUT_MS = 60_000;

/**
 * `MCP_CONFIG` → connected servers and their tools, or undefined when it is not set. A file that cannot be
 * read or parsed throws a ConfigError (the bot does not start); a server that fails is only left out.
 */
export async function startMcpFromConfig(
  config: Pick<Config, "agent"> & { apps?: readonly { agent?: { kind: string } }[] },
  logger: Logger,
  options: { connectTimeoutMs?: number; isolation?: Isolation } = {},
): Promise<McpTools | undefined> {
  const { configFile, toolTimeoutMs } = config.agent.mcp;
  // The servers are the process's: started when any OpenAI agent (the environment's or an app's) can use them.
  const openai = [config.agent, ...(config.apps ?? []).map((app) => app.agent)].some(
    (a) => a?.kind === "openai",
  );
  if (!configFile || !openai) return undefined;
  const file = loadMcpConfig(configFile);
  return connectMcpServers(file, {
    logger,
    callTimeoutMs: toolTimeoutMs,
    connectTimeoutMs: options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
    ...(options.isolation ? { isolation: options.isolation } : {}),
  });
}

/** What answers an elicitation: the dispatcher (harness/dispatcher.ts), which owns every ask. */
export interface ElicitationHost {
  elicit(elicitation: ElicitationAsk, ctx: ToolContext): Promise<ElicitResponse>;
}

/**
 * MCP `elicitation/create` → a form on the card, via the dispatcher and the ask registry. A schema the
 * card cannot show is declined (and logged); the server cancelling its request withdraws the form.
 */
export function elicitThrough(host: ElicitationHost, logger: Logger): ElicitationHandler {
  return async ({ server, urlHosts, params, ctx, signal }) => {
    const scoped: ToolContext = { ...ctx, signal: AbortSignal.any([ctx.signal, signal]) };
    if (params.mode === "url") {
      // https only, the host named on the card, and only the hosts MCP_CONFIG allows (elicit-url.ts).
      const url = checkElicitUrl(params.url, urlHosts);
      if (!url.ok) {
        logger.warn({ mcpServer: server, reason: url.reason }, "MCP elicitation declined: link refused");
        return { action: "decline" };
      }
      const ask = { server, message: params.message, fields: [], url: url.href, urlHost: url.host };
      return host.elicit(ask, scoped);
    }
    const fields = elicitFields(params.requestedSchema);
    if (!fields.ok) {
      logger.warn({ mcpServer: server, error: fields.error }, "MCP elicitation declined: form not supported");
      return { action: "decline" };
    }
    return host.elicit({ server, message: params.message, fields: fields.fields }, scoped);
  };
}
