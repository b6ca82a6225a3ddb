import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import { ENV_VARIABLES } from "./config-env.ts";
import { ConfigError } from "./errors.ts";

/**
 * The optional config file (issue 30, "several Feishu apps in one process"): `feishu-progress-bot.json`, or the
 * file `CONFIG_FILE` names. It holds two things, both optional:
 * - `env`: any of the service's variables by their usual names (`"AGENT": "openai"`); the real environment
 *   overrides each, so one deployment can keep its defaults in the file and its differences in the environment.
 * - `apps`: the Feishu apps the one process serves, each with its own credentials, transport, allow-list and,
 *   optionally, agent (config-agent.ts).
 *   Secrets may be written in place or as `{"env": "NAME"}`, read from the environment at start-up (and kept
 *   from the agents' child processes like every secret).
 *
 * Parsed once here, with zod, strictly: an unknown field is an error naming it (a typo such as `appSecert`
 * must not start an app without its secret). The file is read by main.ts (and the CLI); this module only parses.
 */

/** What the file may hold. `env` values are written as JSON scalars and read as the variable's text. */
export interface ConfigFile {
  env: Record<string, string>;
  apps: FileApp[] | undefined;
  /** Where it was read from (absolute): hidden from agents' child processes like DATA_DIR (it may hold secrets). */
  path?: string;
}

/** One app of the file, secrets still as written (a value or a reference to an environment variable). */
export interface FileApp {
  appId: string;
  appSecret: SecretRef;
  transport: "ws" | "webhook";
  encryptKey?: SecretRef;
  verificationToken?: SecretRef;
  domain?: string;
  allow?: { users?: string[]; chats?: string[] };
  /** The app's own agent (config-agent.ts): absent, the environment's AGENT and its variables. */
  agent?: FileAgent;
}

/** An app's `agent`, as written: each field stands for an environment variable (config-agent.ts AGENT_FIELDS). */
export interface FileAgent {
  kind: "demo" | "openai" | "acp";
  model?: string;
  baseUrl?: string;
  apiKey?: SecretRef;
  demoStepMs?: number;
  command?: string;
  args?: string | string[];
  env?: Record<string, string>;
  terminal?: boolean;
  idleTimeoutMs?: number;
  keepAliveMs?: number;
}

export type SecretRef = string | { env: string };

export const CONFIG_FILE_NAME = "feishu-progress-bot.json";

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const secret = z.union(
  [
    z.string().trim().min(1, "must not be empty"),
    z.strictObject({
      env: z.string().regex(ENV_NAME, "must name an environment variable (letters, digits, _)"),
    }),
  ],
  {
    error: (issue) =>
      issue.input === undefined ? "required" : 'must be a string or {"env": "VARIABLE_NAME"}',
  },
);

const idList = z.array(
  z.string().regex(/^[A-Za-z0-9_]+$/, "must be a Feishu id (open_id ou_… or chat_id oc_…)"),
);

/**
 * An app's agent: the JSON shape only. The values are checked by the environment's own schema (config-agent.ts),
 * so a model, a URL or an ACP argument list is accepted in the file exactly when it would be in the environment.
 */
const agentSchema = z.strictObject({
  kind: z.enum(["demo", "openai", "acp"], {
    error: (issue) =>
      issue.input === undefined ? "required (demo, openai or acp)" : "must be demo, openai or acp",
  }),
  model: z.string().optional(),
  baseUrl: z.string().optional(),
  apiKey: secret.optional(),
  demoStepMs: z.number({ message: "must be a number of milliseconds" }).optional(),
  command: z.string().optional(),
  args: z.union([z.string(), z.array(z.string())], { message: "must be a list of strings" }).optional(),
  env: z.record(z.string(), z.string(), { message: "must be an object of strings" }).optional(),
  terminal: z.boolean({ message: "must be true or false" }).optional(),
  idleTimeoutMs: z.number({ message: "must be a number of milliseconds" }).optional(),
  keepAliveMs: z.number({ message: "must be a number of milliseconds" }).optional(),
});

const appSchema = z.strictObject({
  // The SDK's long connection refuses other app ids (feishu-platform Addendum §2.1, point 4), and session ids
  // are built from it (domain/session-id.ts): letters, digits and `_` only, as Feishu issues them.
  appId: z.string().regex(/^cli_[0-9A-Za-z]+$/, "must be a Feishu app id such as cli_a1b2c3d4e5f6a7b8"),
  appSecret: secret,
  transport: z.enum(["ws", "webhook"], { message: "must be ws or webhook" }).default("ws"),
  encryptKey: secret.optional(),
  verificationToken: secret.optional(),
  domain: z
    .string()
    .refine(
      (value) => value === "feishu" || value === "lark" || /^https?:\/\/[^\s/]+(:\d+)?\/?$/.test(value),
      {
        message: 'must be "feishu", "lark" or a base URL such as http://127.0.0.1:9999',
      },
    )
    .optional(),
  allow: z.strictObject({ users: idList.optional(), chats: idList.optional() }).optional(),
  agent: agentSchema.optional(),
});

const fileSchema = z.strictObject({
  env: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
  apps: z.array(appSchema).min(1, "lists no app (leave `apps` out to use FEISHU_APP_ID)").optional(),
});

/**
 * The file's text, parsed and checked. `source` names the file in errors. Every problem is one line naming the
 * field (`apps[1].transport: must be ws or webhook`), all of them in one ConfigError.
 */
export function parseConfigFile(text: string, source: string): ConfigFile {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ConfigError(`Invalid configuration file ${source}: not JSON (${reason})`);
  }
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${fieldOf(issue)}: ${describe(issue)}`);
    throw new ConfigError(`Invalid configuration file ${source}:\n${lines.join("\n")}`);
  }
  const problems: string[] = [];
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(parsed.data.env ?? {})) {
    if (!ENV_VARIABLES.includes(name) && name !== "CONFIG_FILE")
      problems.push(`  env.${name}: not a variable the service reads (see the README's configuration table)`);
    else if (name === "CONFIG_FILE")
      problems.push("  env.CONFIG_FILE: names this file; set it in the environment");
    else env[name] = String(value);
  }
  const apps = parsed.data.apps;
  const seen = new Set<string>();
  for (const [i, app] of (apps ?? []).entries()) {
    if (seen.has(app.appId)) problems.push(`  apps[${i}].appId: ${app.appId} is listed twice`);
    seen.add(app.appId);
    if (app.transport === "webhook" && app.encryptKey === undefined)
      problems.push(
        `  apps[${i}].encryptKey: required with "transport": "webhook" (bodies are decrypted and signed with it)`,
      );
  }
  if (problems.length > 0)
    throw new ConfigError(`Invalid configuration file ${source}:\n${problems.join("\n")}`);
  return { env, apps };
}

/** `apps[1].appSecret`, from zod's path. */
function fieldOf(issue: z.core.$ZodIssue): string {
  let out = "";
  for (const part of issue.path) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out === "" ? String(part) : `.${String(part)}`;
  }
  if (issue.code === "unrecognized_keys") {
    const keys = issue.keys.map((key) => (out === "" ? key : `${out}.${key}`));
    return keys.join(", ");
  }
  return out === "" ? "file" : out;
}

function describe(issue: z.core.$ZodIssue): string {
  if (issue.code === "unrecognized_keys") return "unknown field";
  return issue.message;
}

/** A secret's value: as written, or the environment variable it names (which must be set). */
export function resolveSecret(
  ref: SecretRef,
  env: Record<string, string | undefined>,
  field: string,
): { value: string; fromEnv?: string } | { problem: string } {
  if (typeof ref === "string") return { value: ref };
  const value = env[ref.env]?.trim();
  if (!value) return { problem: `  ${field}: the environment variable ${ref.env} is not set` };
  return { value, fromEnv: ref.env };
}

/** A file the size of a config file: a bigger one is a mistake (a log, a database) and is refused unread. */
const MAX_FILE_BYTES = 256 * 1024;

/**
 * The config file, if there is one: the file `CONFIG_FILE` names (which must exist), else
 * `feishu-progress-bot.json` in the working directory (absent: none, everything comes from the environment).
 */
export function readConfigFile(
  env: Record<string, string | undefined>,
  cwd: string = process.cwd(),
): ConfigFile | undefined {
  const named = env.CONFIG_FILE?.trim();
  const file = path.resolve(cwd, named || CONFIG_FILE_NAME);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    if (named) throw new ConfigError(`CONFIG_FILE: ${file} does not exist`);
    return undefined;
  }
  if (!stat.isFile()) throw new ConfigError(`Invalid configuration file ${file}: not a regular file`);
  if (stat.size > MAX_FILE_BYTES)
    throw new ConfigError(`Invalid configuration file ${file}: over ${MAX_FILE_BYTES / 1024} KiB`);
  return { ...parseConfigFile(fs.readFileSync(file, "utf8"), file), path: file };
}
