import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.ts";
import { parseConfigFile } from "../src/config-file.ts";
import { createAgentsFromConfig } from "../src/harness/agents/index.ts";
import { SUB_AGENT_PROMPT } from "../src/harness/agents/prompts.ts";
import { createLogger } from "../src/logger.ts";
import { buildCore, privateSession, type TestCore } from "./helpers/core.ts";
import {
  type RecordedRequest,
  type ScriptedModel,
  type ScriptedReply,
  startScriptedModel,
} from "./helpers/openai-server.ts";

/**
 * The per-app agent (harness/agents/per-app.ts) behind the runner: two OpenAI agents on two model servers, the
 * environment's and the first app's. Each run goes to the agent of the app its source names (a Feishu source
 * naming no app is the first app's, a run with no source the environment's), and each agent's `delegate` runs
 * its sub-agent on that agent's own model.
 */

const FIRST = "cli_f000000000000001";
const SECOND = "cli_s000000000000002";

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const thing of opened.splice(0).reverse()) await thing.close();
});

/** Every top-level request delegates once; the sub-agent and the turn after it answer in the server's name. */
function delegating(name: string) {
  return (request: RecordedRequest): ScriptedReply => {
    const messages = request.body.messages;
    if (messages[0]?.content === SUB_AGENT_PROMPT) return { text: [`sub-agent on ${name}`] };
    const last = messages[messages.length - 1];
    if (last?.role === "tool")
      return { text: [`${name} after ${(JSON.parse(last.content ?? "{}") as { result?: string }).result}`] };
    return { toolCalls: [{ name: "delegate", arguments: { task: "look it up" } }] };
  };
}

async function model(name: string): Promise<ScriptedModel> {
  const started = await startScriptedModel();
  started.script(...Array.from({ length: 40 }, () => delegating(name)));
  opened.push(started);
  return started;
}

describe("one agent per app behind the runner", () => {
  it("gives each run its app's agent, each agent its own delegate on its own model", async () => {
    const envModel = await model("env-model");
    const firstModel = await model("first-model");
    const file = parseConfigFile(
      JSON.stringify({
        apps: [
          {
            appId: FIRST,
            appSecret: "s1",
            agent: { kind: "openai", baseUrl: firstModel.baseUrl, model: "first-model", apiKey: "sk-first" },
          },
          { appId: SECOND, appSecret: "s2" },
        ],
      }),
      "bot.json",
    );
    const config = loadConfig(
      {
        AUTH_SECRET: "0123456789abcdef0123456789abcdef",
        AGENT: "openai",
        OPENAI_BASE_URL: envModel.baseUrl,
        OPENAI_MODEL: "env-model",
        OPENAI_API_KEY: "sk-env",
      },
      file,
    );
    let core: TestCore | undefined;
    const agents = createAgentsFromConfig(config, createLogger({ level: "silent" }), {}, async (runId) =>
      core?.store.runSource(runId),
    );
    core = await buildCore(agents);
    opened.push(core);

    const cases = [
      { user: "ou_second", source: { channel: "feishu", appId: SECOND, messageId: "om_1", chatId: "oc_1" } },
      { user: "ou_first", source: { channel: "feishu", appId: FIRST, messageId: "om_2", chatId: "oc_2" } },
      // A run recorded before there were several apps names none: it is the first app's, like its card.
      { user: "ou_earlier", source: { channel: "feishu", messageId: "om_3", chatId: "oc_3" } },
      // A run of no app at all (a browser session's) gets the environment's agent.
      { user: "ou_web", source: undefined },
    ];
    const runIds = await Promise.all(
      cases.map(async ({ user, source }) => {
        const session = await core.runner.ensureSession(privateSession(user));
        const submitted = await core.runner.submit({
          sessionId: session.id,
          senderId: user,
          text: `task of ${user}`,
          ...(source ? { source } : {}),
        });
        return "run" in submitted ? submitted.run.id : undefined;
      }),
    );
    await core.runner.idle();
    const finals = await Promise.all(runIds.map(async (id) => (await core.store.getRun(id ?? ""))?.text));
    expect(finals).toEqual([
      "env-model after sub-agent on env-model",
      "first-model after sub-agent on first-model",
      "first-model after sub-agent on first-model",
      "env-model after sub-agent on env-model",
    ]);
    // Each server heard only its own agent's runs, top-level and sub-agent requests, with its own key.
    const inputs = (m: ScriptedModel) =>
      m.requests
        .filter((r) => r.body.messages[0]?.content !== SUB_AGENT_PROMPT)
        .map((r) => r.body.messages.find((message) => message.role === "user")?.content);
    expect(new Set(inputs(envModel))).toEqual(new Set(["task of ou_second", "task of ou_web"]));
    expect(new Set(inputs(firstModel))).toEqual(new Set(["task of ou_first", "task of ou_earlier"]));
    expect(envModel.requests.filter((r) => r.body.messages[0]?.content === SUB_AGENT_PROMPT)).toHaveLength(2);
    expect(firstModel.requests.filter((r) => r.body.messages[0]?.content === SUB_AGENT_PROMPT)).toHaveLength(
      2,
    );
    expect(new Set(envModel.requests.map((r) => `${r.body.model} ${r.headers.authorization}`))).toEqual(
      new Set(["env-model Bearer sk-env"]),
    );
    expect(new Set(firstModel.requests.map((r) => `${r.body.model} ${r.headers.authorization}`))).toEqual(
      new Set(["first-model Bearer sk-first"]),
    );
  }, 30_000);
});
