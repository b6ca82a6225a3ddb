import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  type ElicitRequest,
  ElicitRequestSchema,
  type ElicitResult,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { describeError } from "../../../errors.ts";
import type { Logger } from "../../../logger.ts";
import type { ToolContext, ToolImpl } from "../../dispatcher.ts";
import { type Isolation, NO_ISOLATION } from "../isolation.ts";
import { CallTracker } from "./calls.ts";
import type { McpConfig, McpServerConfig } from "./config.ts";
import { mapToolResult } from "./result.ts";

/**
 * The MCP servers of `MCP_CONFIG`, connected with the official SDK client, and their tools as the bot's
 * own (`server__tool`). A server that fails to start is logged and left out: the bot runs with the others.
 */

export const MCP_TOOL_SEPARATOR = "__";

/** What an `elicitation/create` needs from the bot: a person to ask, found through the tool call behind it. */
export type ElicitationHandler = (request: {
  server: string;
  /** The server's `elicitationHosts` from MCP_CONFIG: where its URL-mode requests may send a person. */
  urlHosts?: string[];
  params: ElicitRequest["params"];
  ctx: ToolContext;
  signal: AbortSignal;
}) => Promise<ElicitResult>;

export interface McpServerStatus {
  name: string;
  ok: boolean;
  tools: number;
  error?: string;
}

export interface McpTools {
  tools: ToolImpl[];
  servers: McpServerStatus[];
  /** Plugged in once the ask registry exists (it is built after the tools); until then elicitations are declined. */
  setElicitationHandler(handler: ElicitationHandler): void;
  close(): Promise<void>;
}

export interface McpOptions {
  logger: Logger;
  /** A tool call that takes longer comes back to the model as an error (time spent waiting for the person to
   * answer an elicitation does not count). */
  callTimeoutMs: number;
  /** Starting a server and listing its tools. */
  connectTimeoutMs: number;
  /** Where stdio servers run (isolation.ts); default: as configured, no sandbox. */
  isolation?: Isolation;
}

interface Connected {
  name: string;
  client: Client;
  calls: CallTracker;
  /** The child's pid (stdio servers), for the log. */
  pid?: number;
}

export async function connectMcpServers(config: McpConfig, options: McpOptions): Promise<McpTools> {
  let elicit: ElicitationHandler | undefined;
  const connected: Connected[] = [];
  const statuses: McpServerStatus[] = [];
  const tools: ToolImpl[] = [];
  const entries = Object.entries(config.mcpServers);
  // Started side by side: one slow server does not hold up the others.
  const results = await Promise.all(
    entries.map(([name, server]) =>
      connectOne(name, server, options, (request) => elicit?.(request)).then(
        (value) => ({ name, value }),
        (error: unknown) => ({ name, error }),
      ),
    ),
  );
  for (const result of results) {
    if ("error" in result) {
      const error = describeError(result.error);
      options.logger.warn(
        { mcpServer: result.name, err: result.error },
        "MCP server failed to start; left out",
      );
      statuses.push({ name: result.name, ok: false, tools: 0, error });
      continue;
    }
    const { server, listed } = result.value;
    connected.push(server);
    const named = listed.flatMap((tool) => {
      const impl = toolImpl(server, tool, options);
      if (!impl) {
        options.logger.warn({ mcpServer: server.name, tool: tool.name }, "MCP tool name unusable; left out");
        return [];
      }
      if (tools.some((other) => other.definition.name === impl.definition.name)) {
        options.logger.warn({ mcpServer: server.name, tool: tool.name }, "MCP tool name taken; left out");
        return [];
      }
      return [impl];
    });
    tools.push(...named);
    statuses.push({ name: server.name, ok: true, tools: named.length });
    options.logger.info(
      { mcpServer: server.name, tools: named.length, ...(server.pid ? { pid: server.pid } : {}) },
      "MCP server connected",
    );
  }
  return {
    tools,
    servers: statuses,
    setElicitationHandler(handler) {
      elicit = handler;
    },
    async close() {
      await Promise.all(
        connected.map((server) =>
          server.client.close().catch((error: unknown) => {
            options.logger.warn({ mcpServer: server.name, err: error }, "MCP server did not close cleanly");
          }),
        ),
      );
    },
  };
}

async function connectOne(
  name: string,
  config: McpServerConfig,
  options: McpOptions,
  elicit: (request: Parameters<ElicitationHandler>[0]) => Promise<ElicitResult> | undefined,
): Promise<{ server: Connected; listed: Tool[] }> {
  const client = new Client(
    { name: "feishu-progress-bot", version: "1.0.0" },
    { capabilities: { elicitation: { form: {}, url: {} } } },
  );
  const calls = new CallTracker();
  const server: Connected = { name, client, calls };
  client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
    const call = calls.current();
    // No tool call of ours is running (or a sub-agent's is: only the session's agent talks to the person).
    if (!call || call.ctx.subAgent) return { action: "decline" };
    const done = call.pause();
    try {
      const answer = await elicit({
        server: name,
        ...(config.elicitationHosts ? { urlHosts: config.elicitationHosts } : {}),
        params: request.params,
        ctx: call.ctx,
        signal: extra.signal,
      });
      return answer ?? { action: "decline" };
    } finally {
      done();
    }
  });
  const transport =
    "command" in config
      ? stdioTransport(config, options.isolation ?? NO_ISOLATION)
      : new StreamableHTTPClientTransport(new URL(config.url), {
          ...(config.headers ? { requestInit: { headers: config.headers } } : {}),
        });
  if (transport instanceof StdioClientTransport) pipeStderr(transport, name, options.logger);
  try {
    await client.connect(transport, { timeout: options.connectTimeoutMs });
    const listed: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined, {
        timeout: options.connectTimeoutMs,
      });
      listed.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    if (transport instanceof StdioClientTransport && transport.pid !== null) server.pid = transport.pid;
    return { server, listed };
  } catch (error) {
    await client.close().catch((closeError: unknown) => {
      options.logger.debug({ mcpServer: name, err: closeError }, "MCP client close after failure");
    });
    throw error;
  }
}

function toolImpl(server: Connected, tool: Tool, options: McpOptions): ToolImpl | undefined {
  const name = exposedName(server.name, tool.name);
  if (!name) return undefined;
  const description = tool.description ?? tool.title ?? tool.name;
  return {
    definition: {
      name,
      description: `[MCP ${server.name}] ${description}`,
      // Passed through as the server wrote it: the model reads the server's own schema.
      parameters: { ...tool.inputSchema },
    },
    async execute(args, ctx) {
      let value: unknown = args ?? {};
      if (typeof args === "string") {
        try {
          value = args.trim() === "" ? {} : JSON.parse(args);
        } catch {
          return JSON.stringify({ error: "Invalid arguments: not valid JSON" });
        }
      }
      if (typeof value !== "object" || value === null || Array.isArray(value))
        return JSON.stringify({ error: "Invalid arguments: must be a JSON object" });
      const call = server.calls.start(ctx, options.callTimeoutMs);
      try {
        const result = await server.client.callTool(
          { name: tool.name, arguments: Object.fromEntries(Object.entries(value)) },
          undefined,
          // The SDK's own timer cannot pause while the person answers an elicitation; ours (CallTracker) can.
          { signal: call.signal, timeout: 2_147_483_647 },
        );
        return mapToolResult(result);
      } catch (error) {
        if (ctx.signal.aborted) throw error;
        if (call.timedOut)
          return JSON.stringify({ error: `MCP tool ${name} timed out after ${options.callTimeoutMs} ms` });
        return JSON.stringify({ error: `MCP tool ${name} failed: ${describeError(error)}` });
      } finally {
        call.end();
      }
    },
  };
}

/**
 * `server__tool` as the chat API allows tool names (1-64 of letters, digits, _ and -): other characters
 * (a dot, a space) become `_`; a name still too long is left out rather than cut into a look-alike.
 * The server is always called by the tool's own name.
 */
export function exposedName(server: string, tool: string): string | undefined {
  const name = `${server}${MCP_TOOL_SEPARATOR}${tool.replace(/[^a-zA-Z0-9_-]/g, "_")}`;
  return name.length <= 64 && tool.length > 0 ? name : undefined;
}

/**
 * A stdio server's process. In the sandbox it sees no DATA_DIR and no other process (isolation.ts); its cwd
 * is the one configured, or ours.
 */
function stdioTransport(
  config: Extract<McpServerConfig, { command: string }>,
  isolation: Isolation,
): StdioClientTransport {
  const launch = isolation.wrap({
    command: config.command,
    args: config.args ?? [],
    cwd: config.cwd ?? process.cwd(),
  });
  return new StdioClientTransport({
    command: launch.command,
    args: launch.args,
    // The SDK's default environment (PATH, HOME…) plus the file's; secrets of the bot stay out.
    ...(config.env ? { env: { ...getDefaultEnvironment(), ...config.env } } : {}),
    ...(config.cwd ? { cwd: config.cwd } : {}),
    stderr: "pipe",
  });
}

function pipeStderr(transport: StdioClientTransport, name: string, logger: Logger): void {
  transport.stderr?.on("data", (chunk: Buffer) => {
    for (const line of chunk.toString("utf8").split("\n")) {
      if (line.trim() !== "")
        logger.debug({ mcpServer: name, stderr: line.slice(0, 500) }, "MCP server stderr");
    }
  });
}
