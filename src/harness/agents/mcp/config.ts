import { readFileSync } from "node:fs";
import { z } from "zod";
import { formatIssues } from "../../../asks/schema.ts";
import { ConfigError, describeError } from "../../../errors.ts";
import { normalizeHost } from "./elicit-url.ts";

/**
 * `MCP_CONFIG`: the `{"mcpServers": {...}}` file Claude Desktop and Claude Code read, so people can reuse the
 * one they have. A server is either a command to start (stdio) or a URL (Streamable HTTP). Checked once, at
 * start-up; a bad file stops the bot with one message naming every bad field (it is the operator's typo, and
 * running without the tools they asked for would hide it).
 */

/** Server names become the `name__` prefix of tool names, so they keep to the chat API's tool-name letters. */
function serverNameProblem(name: string): string | undefined {
  if (!/^[a-zA-Z0-9_-]{1,30}$/.test(name)) return "server names must be 1-30 letters, digits, _ or -";
  if (name.includes("__")) return "server names must not contain __ (it separates server and tool)";
  return undefined;
}

const stringMap = z.record(z.string(), z.string({ error: "values must be strings" }));

/**
 * Not part of the shared file format: the hosts this server's URL-mode elicitations may send a person to
 * (`auth.example.com`, or `*.example.com` for its subdomains). Without it any https host may be shown, always
 * named beside the link (elicit-url.ts).
 */
const elicitationHosts = z
  .array(
    z.string().refine((host) => normalizeHost(host.startsWith("*.") ? host.slice(2) : host) !== undefined, {
      message: "elicitationHosts: each entry is a host name such as auth.example.com or *.example.com",
    }),
    { error: "elicitationHosts must be an array of host names" },
  )
  .optional();

const stdioServer = z.strictObject({
  type: z.literal("stdio").optional(),
  command: z.string({ error: "command must be a string" }).trim().min(1, "command must not be empty"),
  args: z.array(z.string(), { error: "args must be an array of strings" }).default([]),
  env: stringMap.optional(),
  cwd: z.string().optional(),
  elicitationHosts,
});

const httpServer = z.strictObject({
  type: z.enum(["http", "streamable-http", "streamableHttp"]).optional(),
  url: z.url({ message: "url must be an absolute http(s) URL" }).refine((url) => /^https?:/.test(url), {
    message: "url must start with http:// or https://",
  }),
  headers: stringMap.optional(),
  elicitationHosts,
});

const serverSchema = z.union([stdioServer, httpServer], {
  error: "each server needs either command (and args, env) or url (and headers)",
});

export const mcpConfigSchema = z
  .strictObject({ mcpServers: z.record(z.string(), serverSchema) })
  .superRefine((config, ctx) => {
    for (const name of Object.keys(config.mcpServers)) {
      const message = serverNameProblem(name);
      if (message) ctx.addIssue({ code: "custom", path: ["mcpServers", name], message });
    }
  });

export type McpServerConfig = z.infer<typeof serverSchema>;
export type McpConfig = z.infer<typeof mcpConfigSchema>;

/** Parse the file's text; throws a ConfigError naming the file and each bad field. */
export function parseMcpConfig(text: string, file: string): McpConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`MCP_CONFIG ${file}: not valid JSON (${describeError(error)})`);
  }
  const parsed = mcpConfigSchema.safeParse(raw);
  if (!parsed.success) throw new ConfigError(`MCP_CONFIG ${file}: ${formatIssues(parsed.error.issues)}`);
  return parsed.data;
}

export function loadMcpConfig(file: string): McpConfig {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new ConfigError(`MCP_CONFIG ${file}: cannot be read (${describeError(error)})`);
  }
  return parseMcpConfig(text, file);
}
