import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { connectRecipes, README_RECIPE_INPUT } from "../src/agents-api/connect-recipes.ts";
import { agentSetup } from "../src/agents-api/console-setup.ts";
import { TOOL_DESCRIPTIONS } from "../src/agents-api/descriptions.ts";
import { DEFAULT_WAIT_S } from "../src/agents-api/schemas.ts";

/**
 * Each connect recipe read the way its client reads it: Codex's TOML (a strict reader of the subset a
 * server table uses, written here; no TOML library in the tree), the JSON of Claude Code's `.mcp.json` and
 * Gemini CLI's settings.json, Claude Code's command line as argv. The README and the console panel must carry
 * exactly these lines. Facts about the clients come from issue 31 (Codex CLI 0.171.0, Gemini CLI 0.61).
 */

const README = fs.readFileSync(path.resolve(import.meta.dirname, "..", "README.md"), "utf8");
// The panel is browser code (DOM types): its list of blocks is read as text, `["key", "title"]` each.
const PANEL = fs.readFileSync(
  path.resolve(import.meta.dirname, "..", "src/local/console/public/agent-panel.ts"),
  "utf8",
);
// Each block is `["key", title]`: the title a literal or the console's word for it.
const PANEL_KEYS = [...PANEL.matchAll(/^\s*\["(\w+)", [^\]]+\],$/gm)].map((m) => m[1]);
const LIVE = { mcpUrl: "http://localhost:4321/mcp", token: "tok.en-123" };

type TomlValue = string | number | boolean;
/** Tables of `key = value` lines, comments and blank lines; anything else is an error, as in Codex. */
function readToml(text: string): Record<string, Record<string, TomlValue>> {
  const tables: Record<string, Record<string, TomlValue>> = {};
  let current: Record<string, TomlValue> | undefined;
  for (const [index, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const table = /^\[([A-Za-z0-9_.-]+)\]$/.exec(line);
    if (table?.[1]) {
      if (tables[table[1]]) throw new Error(`line ${index + 1}: table ${table[1]} defined twice`);
      current = tables[table[1]] = {};
      continue;
    }
    const pair = /^([A-Za-z0-9_-]+)\s*=\s*(.+?)\s*(#.*)?$/.exec(line);
    if (!pair?.[1] || pair[2] === undefined || !current)
      throw new Error(`line ${index + 1}: not TOML: ${raw}`);
    if (pair[1] in current) throw new Error(`line ${index + 1}: key ${pair[1]} defined twice`);
    const value = pair[2];
    if (/^"([^"\\]|\\.)*"$/.test(value)) current[pair[1]] = JSON.parse(value) as string;
    else if (/^-?\d+$/.test(value)) current[pair[1]] = Number(value);
    else if (value === "true" || value === "false") current[pair[1]] = value === "true";
    else throw new Error(`line ${index + 1}: a value TOML does not have: ${value}`);
  }
  return tables;
}

/** A command line split as a POSIX shell would for double-quoted words (all the recipe uses). */
function argv(command: string): string[] {
  return [...command.matchAll(/"((?:[^"\\]|\\.)*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? "");
}

describe("connect recipes", () => {
  const recipes = connectRecipes(LIVE);

  it("gives Codex a server table it reads: url, the token's variable, tools pre-approved, a timeout above wait_s", () => {
    const toml = readToml(recipes.codexToml);
    expect(Object.keys(toml)).toEqual(["mcp_servers.feishu"]);
    const server = toml["mcp_servers.feishu"];
    expect(server).toEqual({
      url: LIVE.mcpUrl,
      bearer_token_env_var: "FEISHU_AGENT_TOKEN",
      // Without it `codex exec` refuses every call: "MCP tool call requires approval, but approval policy is never".
      default_tools_approval_mode: "approve",
      tool_timeout_sec: expect.any(Number),
    });
    expect(server?.tool_timeout_sec).toBeGreaterThan(DEFAULT_WAIT_S);
    expect(recipes.codexEnv).toBe(`export FEISHU_AGENT_TOKEN=${LIVE.token}`);
  });

  it("gives Claude Code a command and a .mcp.json with the URL and the Authorization header", () => {
    expect(argv(recipes.claudeCode)).toEqual([
      "claude",
      "mcp",
      "add",
      "--transport",
      "http",
      "feishu",
      LIVE.mcpUrl,
      "--header",
      `Authorization: Bearer ${LIVE.token}`,
    ]);
    expect(JSON.parse(recipes.claudeCodeJson)).toEqual({
      mcpServers: {
        feishu: { type: "http", url: LIVE.mcpUrl, headers: { Authorization: `Bearer ${LIVE.token}` } },
      },
    });
  });

  it("gives Gemini CLI a settings.json server over streamable HTTP with a timeout above wait_s", () => {
    const settings = JSON.parse(recipes.geminiJson);
    expect(settings).toEqual({
      mcpServers: {
        feishu: {
          httpUrl: LIVE.mcpUrl,
          headers: { Authorization: `Bearer ${LIVE.token}` },
          timeout: expect.any(Number),
        },
      },
    });
    expect(settings.mcpServers.feishu.timeout).toBeGreaterThan(DEFAULT_WAIT_S * 1000);
  });

  it("puts the same lines in the README, in fenced blocks of the client's language", () => {
    const forReadme = connectRecipes(README_RECIPE_INPUT);
    const fences = {
      claudeCode: "sh",
      claudeCodeJson: "json",
      codexToml: "toml",
      codexEnv: "sh",
      geminiJson: "json",
    };
    for (const [key, language] of Object.entries(fences)) {
      const text = forReadme[key as keyof typeof forReadme];
      expect(README, `README.md must carry the ${key} recipe`).toContain(
        `\`\`\`${language}\n${text}\n\`\`\``,
      );
    }
    expect(README).not.toContain("--experimental-acp");
    expect(README).not.toMatch(/Codex gives up on a tool call\s+after 60 s/);
  });

  it("shows every recipe in the console's panel, filled with the console's own token", () => {
    const setup = agentSetup({
      authSecret: "recipes-secret-0123456789-0123456789",
      publicUrl: "http://localhost:4321",
      mayAsk: ["ou_local_alice"],
      now: Date.now(),
    });
    const own = connectRecipes({ mcpUrl: setup.mcpUrl, token: setup.token });
    expect(setup).toMatchObject(own);
    for (const key of Object.keys(own)) expect(PANEL_KEYS, `the panel must show ${key}`).toContain(key);
  });

  it("tells models to keep wait_s under each client's own limit, naming the clients", () => {
    const description = TOOL_DESCRIPTIONS.ask_user_questions;
    for (const client of ["Claude Code", "MCP_TOOL_TIMEOUT", "Codex", "tool_timeout_sec", "Gemini CLI"])
      expect(description).toContain(client);
    expect(description).toMatch(/Keep wait_s under your client's own\s+limit/);
    expect(description).toContain("get_answers with the ask_id");
  });
});
