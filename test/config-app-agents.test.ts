import { describe, expect, it } from "vitest";
import { type Config, loadConfig } from "../src/config.ts";
import { type ConfigFile, parseConfigFile } from "../src/config-file.ts";
import { ConfigError } from "../src/errors.ts";

/**
 * Per-app agent settings (issue 30, "each app its own … agent settings"): an app entry's `agent`, read with the
 * environment's own schema, starting from the environment's agent variables; AGENT is every other app's.
 */

const SECRET = "0123456789abcdef0123456789abcdef";
const A = "cli_a000000000000001";
const B = "cli_b000000000000002";

function parse(json: unknown): ConfigFile {
  return parseConfigFile(JSON.stringify(json), "bot.json");
}

function errorOf(load: () => unknown): string {
  try {
    load();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error("expected a ConfigError");
}

function apps(config: Config) {
  if (config.mode !== "feishu") throw new Error("expected feishu mode");
  return config.apps;
}

const twoApps = (agentOfB: unknown, env?: Record<string, unknown>) =>
  parse({
    ...(env ? { env } : {}),
    apps: [
      { appId: A, appSecret: "sa" },
      { appId: B, appSecret: "sb", agent: agentOfB },
    ],
  });

describe("an app's own agent", () => {
  it("gives the app its agent, the other apps the environment's", () => {
    const file = twoApps({
      kind: "openai",
      baseUrl: "http://127.0.0.1:9/v1",
      model: "model-of-b",
      apiKey: { env: "B_OPENAI_KEY" },
    });
    const config = loadConfig({ AUTH_SECRET: SECRET, B_OPENAI_KEY: "sk-b", DEMO_STEP_MS: "7" }, file);
    const [a, b] = apps(config);
    expect(config.agent).toMatchObject({ kind: "demo", demoStepMs: 7 });
    expect(a?.agent).toBeUndefined();
    expect(b?.agent).toMatchObject({
      kind: "openai",
      openai: { baseUrl: "http://127.0.0.1:9/v1", model: "model-of-b", apiKey: "sk-b" },
      // The run budget and MCP stay the process's.
      budget: config.agent.budget,
      mcp: config.agent.mcp,
    });
    // The key's variable is removed from the process like every secret's.
    expect(config.secretEnvNames).toContain("B_OPENAI_KEY");
  });

  it("reads an ACP agent's command, arguments, environment and switches like ACP_*", () => {
    const file = twoApps({
      kind: "acp",
      command: "codex-acp",
      args: ["--flag", "two words"],
      env: { MODE: "x" },
      terminal: true,
      idleTimeoutMs: 5000,
    });
    const b = apps(loadConfig({ AUTH_SECRET: SECRET, PATH: "/bin" }, file))[1];
    expect(b?.agent?.acp).toEqual({
      command: "codex-acp",
      args: ["--flag", "two words"],
      env: { PATH: "/bin", MODE: "x" },
      terminal: true,
      idleTimeoutMs: 5000,
      keepAliveMs: 1_800_000,
    });
    const words = twoApps({ kind: "acp", command: "npx", args: "a b" });
    expect(apps(loadConfig({ AUTH_SECRET: SECRET }, words))[1]?.agent?.acp?.args).toEqual(["a", "b"]);
  });

  it("starts from the environment's agent variables, but never sends the environment's key to its own URL", () => {
    const env = {
      AUTH_SECRET: SECRET,
      AGENT: "openai",
      OPENAI_BASE_URL: "http://env.example/v1",
      OPENAI_MODEL: "env-model",
      OPENAI_API_KEY: "sk-env",
    };
    const sameServer = apps(loadConfig(env, twoApps({ kind: "openai", model: "cheap" })))[1];
    expect(sameServer?.agent?.openai).toEqual({
      baseUrl: "http://env.example/v1",
      model: "cheap",
      apiKey: "sk-env",
    });
    const otherServer = apps(
      loadConfig(env, twoApps({ kind: "openai", baseUrl: "http://other.example/v1" })),
    )[1];
    expect(otherServer?.agent?.openai).toEqual({ baseUrl: "http://other.example/v1", model: "env-model" });
  });

  it("names the app and the field of a bad agent setting, in the environment's words", () => {
    expect(errorOf(() => twoApps({ kind: "openai", model: 4 }))).toContain("apps[1].agent.model:");
    expect(errorOf(() => twoApps({ kind: "claude" }))).toContain(
      "apps[1].agent.kind: must be demo, openai or acp",
    );
    expect(errorOf(() => twoApps({ model: "x" }))).toContain("apps[1].agent.kind: required");
    expect(errorOf(() => twoApps({ kind: "demo", modle: "x" }))).toContain(
      "apps[1].agent.modle: unknown field",
    );
    expect(
      errorOf(() => loadConfig({ AUTH_SECRET: SECRET }, twoApps({ kind: "openai", model: "m" }))),
    ).toContain('  apps[1].agent.baseUrl: required with "kind": "openai"');
    const acp = errorOf(() => loadConfig({ AUTH_SECRET: SECRET }, twoApps({ kind: "acp" })));
    expect(acp).toContain('  apps[1].agent.command: required with "kind": "acp"');
    expect(
      errorOf(() => loadConfig({ AUTH_SECRET: SECRET }, twoApps({ kind: "demo", demoStepMs: -1 }))),
    ).toContain("apps[1].agent.demoStepMs: DEMO_STEP_MS must be a whole number");
    expect(
      errorOf(() => loadConfig({ AUTH_SECRET: SECRET }, twoApps({ kind: "acp", command: "x", args: "[1" }))),
    ).toContain("apps[1].agent.args: ACP_ARGS must be words or a JSON array of strings");
    expect(
      errorOf(() =>
        loadConfig(
          { AUTH_SECRET: SECRET },
          twoApps({ kind: "openai", baseUrl: "u", model: "m", apiKey: { env: "NOPE" } }),
        ),
      ),
    ).toContain("apps[1].agent.apiKey: the environment variable NOPE is not set");
  });

  it("keeps the override rules: the environment over the file's `env`, an app's own agent over both", () => {
    const file = twoApps({ kind: "demo", demoStepMs: 3 }, { AGENT: "demo", DEMO_STEP_MS: 40 });
    const config = loadConfig(
      { AUTH_SECRET: SECRET, AGENT: "openai", OPENAI_BASE_URL: "http://env.example/v1", OPENAI_MODEL: "m" },
      file,
    );
    expect(config.agent).toMatchObject({ kind: "openai", demoStepMs: 40 });
    expect(apps(config)[1]?.agent).toMatchObject({ kind: "demo", demoStepMs: 3 });
    // The environment's app (FEISHU_APP_ID) keeps its file entry's agent too: FEISHU_* override, AGENT does not.
    const envApp = loadConfig(
      { AUTH_SECRET: SECRET, FEISHU_APP_ID: B, FEISHU_APP_SECRET: "from-env", AGENT: "demo" },
      twoApps({ kind: "acp", command: "x" }),
    );
    expect(apps(envApp).map((app) => [app.appId, app.appSecret, app.agent?.kind])).toEqual([
      [B, "from-env", "acp"],
      [A, "sa", undefined],
    ]);
  });

  it("lets MCP_CONFIG stand when only an app's agent is an OpenAI one", () => {
    const file = twoApps({ kind: "openai", baseUrl: "http://x.example/v1", model: "m" });
    expect(() => loadConfig({ AUTH_SECRET: SECRET, MCP_CONFIG: "mcp.json" }, file)).not.toThrow();
    expect(
      errorOf(() => loadConfig({ AUTH_SECRET: SECRET, MCP_CONFIG: "mcp.json" }, twoApps({ kind: "demo" }))),
    ).toContain("MCP_CONFIG: MCP tools are offered to the OpenAI agent");
  });
});
