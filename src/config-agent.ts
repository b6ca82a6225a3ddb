import { type Env, envSchema } from "./config-env.ts";
import { type FileAgent, resolveSecret } from "./config-file.ts";
import type { AcpConfig } from "./harness/agents/acp/config.ts";
import { acpConfigFrom } from "./harness/agents/acp/config.ts";

/**
 * The agent a run is given (issue 30: "each app its own … agent settings"): `AGENT` and its variables in the
 * environment, or an app's `agent` in the config file. Both are read by the one schema of config-env.ts: an app's
 * fields are written as the variables they stand for (`model` is OPENAI_MODEL) and parsed like them, so the file
 * accepts exactly what the environment does and says so in the same words, under the field's name.
 */
export interface AgentSettings {
  kind: "demo" | "openai" | "acp";
  demoStepMs: number;
  openai: { baseUrl?: string; apiKey?: string; model?: string };
  /** One run's budget, shared by all its sub-agents. */
  budget: { modelRequests: number; subAgents: number; depth: number };
  acp?: AcpConfig;
  /** `MCP_CONFIG`: the mcpServers file, and how long one MCP tool call may take. */
  mcp: { configFile?: string; toolTimeoutMs: number };
}

/** An app's `agent` field → the variable it stands for. The rest (budget, MCP, sandbox) stays the process's. */
export const AGENT_FIELDS = {
  kind: "AGENT",
  model: "OPENAI_MODEL",
  baseUrl: "OPENAI_BASE_URL",
  apiKey: "OPENAI_API_KEY",
  demoStepMs: "DEMO_STEP_MS",
  command: "ACP_COMMAND",
  args: "ACP_ARGS",
  env: "ACP_ENV",
  terminal: "ACP_TERMINAL",
  idleTimeoutMs: "ACP_IDLE_TIMEOUT_MS",
  keepAliveMs: "ACP_KEEP_ALIVE_MS",
} as const satisfies Record<keyof FileAgent, keyof Env>;

type AgentVariable = (typeof AGENT_FIELDS)[keyof typeof AGENT_FIELDS];

const AGENT_VARIABLES = Object.values(AGENT_FIELDS) as AgentVariable[];

/** The part of the environment's schema an agent is read with. */
const agentSchema = envSchema.pick(
  Object.fromEntries(AGENT_VARIABLES.map((name) => [name, true])) as { [K in AgentVariable]: true },
);

/**
 * The agent of parsed variables `e` (`raw`: the text they came from, for what ACP passes through). `name` says
 * how a variable is called in a problem: itself in the environment, `apps[1].agent.model` in the file.
 */
export function agentSettingsFrom(
  e: Env,
  raw: Record<string, string | undefined>,
  name: (variable: AgentVariable) => string = (variable) => variable,
): { settings: AgentSettings; problems: string[] } {
  const problems: string[] = [];
  const inEnv = name("AGENT") === "AGENT";
  const kindIs = inEnv ? `AGENT=${e.AGENT}` : `"kind": "${e.AGENT}"`;
  if (e.AGENT === "openai") {
    if (!e.OPENAI_BASE_URL) problems.push(`  ${name("OPENAI_BASE_URL")}: required with ${kindIs}`);
    if (!e.OPENAI_MODEL) problems.push(`  ${name("OPENAI_MODEL")}: required with ${kindIs}`);
  }
  if (e.AGENT === "acp" && !e.ACP_COMMAND)
    problems.push(
      `  ${name("ACP_COMMAND")}: required with ${kindIs} (e.g. ${inEnv ? "ACP_COMMAND=npx ACP_ARGS=@zed-industries/claude-code-acp" : '"command": "npx", "args": ["@zed-industries/claude-code-acp"]'})`,
    );
  const settings: AgentSettings = {
    kind: e.AGENT,
    demoStepMs: e.DEMO_STEP_MS,
    openai: { baseUrl: e.OPENAI_BASE_URL, apiKey: e.OPENAI_API_KEY, model: e.OPENAI_MODEL },
    budget: {
      modelRequests: e.MAX_MODEL_REQUESTS_PER_RUN,
      subAgents: e.MAX_SUBAGENTS_PER_RUN,
      depth: e.MAX_DELEGATE_DEPTH,
    },
    ...(e.AGENT === "acp" ? { acp: acpConfigFrom(e, raw) } : {}),
    mcp: { configFile: e.MCP_CONFIG, toolTimeoutMs: e.MCP_TOOL_TIMEOUT_MS },
  };
  return { settings, problems };
}

/**
 * An app's own agent (`where`: `apps[1].agent`). It starts from the environment's agent variables and its fields
 * replace them one by one, with one exception: an app that names its own `baseUrl` never inherits
 * OPENAI_API_KEY (the environment's key is not sent to another server). `apiKey` may be `{"env": NAME}`.
 */
export function appAgentFrom(
  agent: FileAgent,
  e: Env,
  raw: Record<string, string | undefined>,
  where: string,
): { settings?: AgentSettings; problems: string[]; secretEnvNames: string[] } {
  const problems: string[] = [];
  const secretEnvNames: string[] = [];
  const text: Record<string, string> = {};
  for (const variable of AGENT_VARIABLES) {
    const value = raw[variable];
    if (value !== undefined) text[variable] = value;
  }
  if (agent.baseUrl !== undefined) delete text.OPENAI_API_KEY;
  for (const [field, variable] of Object.entries(AGENT_FIELDS) as [keyof FileAgent, AgentVariable][]) {
    const value = agent[field];
    if (value === undefined) continue;
    if (field === "apiKey") {
      const resolved = resolveSecret(value as FileAgent["apiKey"] & {}, raw, `${where}.apiKey`);
      if ("problem" in resolved) problems.push(resolved.problem);
      else {
        text[variable] = resolved.value;
        if (resolved.fromEnv) secretEnvNames.push(resolved.fromEnv);
      }
    } else text[variable] = asText(value);
  }
  const fieldOf = (variable: AgentVariable) => {
    const field = Object.entries(AGENT_FIELDS).find(([, v]) => v === variable)?.[0] ?? variable;
    return `${where}.${field}`;
  };
  const parsed = agentSchema.safeParse(text);
  if (!parsed.success) {
    for (const issue of parsed.error.issues)
      problems.push(`  ${fieldOf(issue.path[0] as AgentVariable)}: ${issue.message}`);
    return { problems, secretEnvNames };
  }
  // Every agent variable from the app's text alone: one it left unset is unset, not the environment's parsed value.
  const own = Object.fromEntries(AGENT_VARIABLES.map((variable) => [variable, parsed.data[variable]]));
  const built = agentSettingsFrom({ ...e, ...own } as Env, { ...raw, ...text }, fieldOf);
  problems.push(...built.problems);
  return { settings: built.settings, problems, secretEnvNames };
}

/** A JSON value as the variable's text: switches as on/off, lists and maps as JSON (ACP_ARGS and ACP_ENV read it). */
function asText(value: unknown): string {
  if (typeof value === "boolean") return value ? "on" : "off";
  if (typeof value === "string" || typeof value === "number") return String(value);
  return JSON.stringify(value);
}
