import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.ts";
import { type ConfigFile, parseConfigFile, readConfigFile } from "../src/config-file.ts";
import { feishuGroupSessionId, feishuPrivateSessionId } from "../src/domain/session-id.ts";
import { ConfigError } from "../src/errors.ts";

/** The config file (issue 30, several apps in one process): parsing, the environment over it, the apps it yields. */

const SECRET = "0123456789abcdef0123456789abcdef";
const A = "cli_a000000000000001";
const B = "cli_b000000000000002";

function parse(json: unknown): ConfigFile {
  return parseConfigFile(typeof json === "string" ? json : JSON.stringify(json), "bot.json");
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

describe("the config file", () => {
  it("says a file that is not JSON is not JSON, naming the file", () => {
    expect(errorOf(() => parse("{ apps: [] "))).toMatch(/^Invalid configuration file bot\.json: not JSON/);
  });

  it("names every bad field by its path, all at once", () => {
    const message = errorOf(() =>
      parse({
        apps: [
          { appId: A, appSecret: "s", transport: "http" },
          { appId: "not-an-app", appSecret: "" },
        ],
      }),
    );
    expect(message).toContain("apps[0].transport: must be ws or webhook");
    expect(message).toContain("apps[1].appId: must be a Feishu app id");
    expect(message).toContain("apps[1].appSecret: must not be empty");
    expect(errorOf(() => parse({ apps: [{ appId: A }] }))).toContain("apps[0].appSecret: required");
    expect(errorOf(() => parse({ apps: [{ appId: A, appSecret: 42 }] }))).toContain(
      'apps[0].appSecret: must be a string or {"env": "VARIABLE_NAME"}',
    );
  });

  it("refuses an unknown field, a typo included, instead of starting without it", () => {
    expect(errorOf(() => parse({ apps: [{ appId: A, appSecert: "s" }] }))).toContain(
      "apps[0].appSecert: unknown field",
    );
    expect(errorOf(() => parse({ app: [] }))).toContain("app: unknown field");
    expect(errorOf(() => parse({ apps: [{ appId: A, appSecret: "s", allow: { user: [] } }] }))).toContain(
      "apps[0].allow.user: unknown field",
    );
    expect(
      errorOf(() => parse({ apps: [{ appId: A, appSecret: "s", agent: { kind: "demo", modle: "x" } }] })),
    ).toContain("apps[0].agent.modle: unknown field");
  });

  it("refuses a variable the service does not read in `env`, and a webhook app without its key", () => {
    expect(errorOf(() => parse({ env: { PROT: 3000 } }))).toContain(
      "env.PROT: not a variable the service reads",
    );
    expect(errorOf(() => parse({ apps: [{ appId: A, appSecret: "s", transport: "webhook" }] }))).toContain(
      'apps[0].encryptKey: required with "transport": "webhook"',
    );
    expect(
      errorOf(() =>
        parse({
          apps: [
            { appId: A, appSecret: "s" },
            { appId: A, appSecret: "t" },
          ],
        }),
      ),
    ).toContain(`apps[1].appId: ${A} is listed twice`);
  });

  it("takes `env` as defaults the environment overrides, variable by variable", () => {
    const file = parse({ env: { PORT: 4000, AGENT: "demo", DEMO_STEP_MS: 20, FEISHU_ASK_PING: false } });
    const config = loadConfig({ PORT: "5000" }, file);
    expect(config.port).toBe(5000);
    expect(config.agent.demoStepMs).toBe(20);
    expect(config.feishu.askPing).toBe(false);
    // A bad value from the file is named like one from the environment.
    expect(errorOf(() => loadConfig({}, parse({ env: { PORT: "many" } })))).toContain(
      "PORT: PORT must be a whole number",
    );
  });

  it("builds one settings entry per app, each with its own credentials, transport and allow-list", () => {
    const file = parse({
      apps: [
        { appId: A, appSecret: "sa", transport: "ws", allow: { users: ["ou_1"] } },
        {
          appId: B,
          appSecret: { env: "B_SECRET" },
          transport: "webhook",
          encryptKey: { env: "B_KEY" },
          verificationToken: "vt",
          domain: "lark",
        },
      ],
    });
    const config = loadConfig({ AUTH_SECRET: SECRET, B_SECRET: "sb", B_KEY: "kb" }, file);
    if (config.mode !== "feishu") throw new Error("expected feishu mode");
    expect(config.apps.map((app) => [app.appId, app.appSecret, app.transport, app.domain])).toEqual([
      [A, "sa", "ws", "feishu"],
      [B, "sb", "webhook", "lark"],
    ]);
    expect(config.apps[0]?.allow).toEqual({ users: ["ou_1"], chats: [] });
    expect(config.apps[1]).toMatchObject({ encryptKey: "kb", verificationToken: "vt" });
    expect(config.feishu).toBe(config.apps[0]);
    // Variables secrets came from are removed from the process by main.ts, like FEISHU_APP_SECRET.
    expect(config.secretEnvNames.sort()).toEqual(["B_KEY", "B_SECRET"]);
  });

  it("names a secret reference whose variable is not set", () => {
    const file = parse({ apps: [{ appId: A, appSecret: { env: "A_SECRET" } }] });
    expect(errorOf(() => loadConfig({ AUTH_SECRET: SECRET }, file))).toContain(
      "apps[0].appSecret: the environment variable A_SECRET is not set",
    );
  });

  it("puts the environment's app first, its FEISHU_* values over the file's entry of the same id", () => {
    const file = parse({
      apps: [
        { appId: B, appSecret: "sb" },
        {
          appId: A,
          appSecret: "from-file",
          transport: "webhook",
          encryptKey: "ka",
          allow: { chats: ["oc_1"] },
        },
      ],
    });
    const config = loadConfig(
      { AUTH_SECRET: SECRET, FEISHU_APP_ID: A, FEISHU_APP_SECRET: "from-env", FEISHU_TRANSPORT: "ws" },
      file,
    );
    if (config.mode !== "feishu") throw new Error("expected feishu mode");
    expect(config.apps.map((app) => app.appId)).toEqual([A, B]);
    expect(config.apps[0]).toMatchObject({ appSecret: "from-env", transport: "ws", encryptKey: "ka" });
    expect(config.apps[0]?.allow).toEqual({ users: [], chats: ["oc_1"] });
  });

  it("reads ./feishu-progress-bot.json when present, CONFIG_FILE when named, and says when CONFIG_FILE is missing", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-config-"));
    try {
      expect(readConfigFile({}, dir)).toBeUndefined();
      fs.writeFileSync(path.join(dir, "feishu-progress-bot.json"), JSON.stringify({ env: { PORT: 1 } }));
      const found = readConfigFile({}, dir);
      expect(found?.env).toEqual({ PORT: "1" });
      // It may hold secrets: agents' child processes do not see it (isolation's hidden paths).
      const hidden = loadConfig({}, found).isolation.hidden;
      expect(hidden).toContain(path.join(dir, "feishu-progress-bot.json"));
      fs.writeFileSync(path.join(dir, "other.json"), JSON.stringify({ env: { PORT: 2 } }));
      expect(readConfigFile({ CONFIG_FILE: "other.json" }, dir)?.env).toEqual({ PORT: "2" });
      expect(errorOf(() => readConfigFile({ CONFIG_FILE: "gone.json" }, dir))).toMatch(
        /CONFIG_FILE: .*gone\.json does not exist/,
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the README's example file", () => {
  it("parses and loads as the two apps it describes", () => {
    const readme = fs.readFileSync(path.join(import.meta.dirname, "..", "README.md"), "utf8");
    const section = readme.split("## Several Feishu apps in one process")[1] ?? "";
    const json = /```json\n([\s\S]*?)```/.exec(section)?.[1];
    expect(json).toBeDefined();
    const file = parseConfigFile(json ?? "", "README.md");
    const env = {
      AUTH_SECRET: SECRET,
      SALES_APP_SECRET: "s1",
      OPS_APP_SECRET: "s2",
      OPS_ENCRYPT_KEY: "k2",
      OPS_VERIFICATION_TOKEN: "v2",
      OPS_MODEL_KEY: "sk-ops",
    };
    const config = loadConfig(env, file);
    if (config.mode !== "feishu") throw new Error("expected feishu mode");
    expect(config.apps.map((app) => [app.transport, app.domain])).toEqual([
      ["ws", "feishu"],
      ["webhook", "lark"],
    ]);
    expect(config.agent.kind).toBe("openai");
    // The first app takes the environment's agent; the second its own, on its own server with its own key.
    expect(config.apps[0]?.agent).toBeUndefined();
    expect(config.apps[1]?.agent?.openai).toEqual({
      baseUrl: "https://llm.internal.example/v1",
      model: "qwen3-32b",
      apiKey: "sk-ops",
    });
  });
});

describe("a single app by environment variables", () => {
  it("loads as it always has: one app, the same session ids", () => {
    const config = loadConfig({ FEISHU_APP_ID: A, FEISHU_APP_SECRET: "s", AUTH_SECRET: SECRET });
    if (config.mode !== "feishu") throw new Error("expected feishu mode");
    expect(config.apps).toEqual([config.feishu]);
    expect(config.feishu).toMatchObject({ appId: A, appSecret: "s", transport: "ws" });
    expect(config.feishu.allow).toBeUndefined();
    expect(config.secretEnvNames).toEqual([]);
    // Byte-identical to what earlier versions stored (domain/session-id.ts).
    expect(feishuPrivateSessionId(config.feishu.appId, "ou_u")).toBe(`feishu-${A}-private-ou_u`);
    expect(feishuGroupSessionId(config.feishu.appId, "oc_g")).toBe(`feishu-${A}-group-oc_g`);
  });

  it("takes an allow-list from FEISHU_ALLOWED_USERS and FEISHU_ALLOWED_CHATS", () => {
    const config = loadConfig({
      FEISHU_APP_ID: A,
      FEISHU_APP_SECRET: "s",
      AUTH_SECRET: SECRET,
      FEISHU_ALLOWED_USERS: "ou_1, ou_2,",
      FEISHU_ALLOWED_CHATS: "oc_9",
    });
    expect(config.mode === "feishu" && config.feishu.allow).toEqual({
      users: ["ou_1", "ou_2"],
      chats: ["oc_9"],
    });
    expect(errorOf(() => loadConfig({ FEISHU_ALLOWED_USERS: "ou-1" }))).toContain(
      "FEISHU_ALLOWED_USERS lists Feishu ids",
    );
  });

  it("still refuses an app id without its secret", () => {
    expect(errorOf(() => loadConfig({ FEISHU_APP_ID: A, AUTH_SECRET: SECRET }))).toContain(
      "FEISHU_APP_SECRET: required when FEISHU_APP_ID is set",
    );
  });
});
