import fs from "node:fs";
import type { Server } from "node:http";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../src/app.ts";
import { loadConfig } from "../src/config.ts";
import { parseConfigFile } from "../src/config-file.ts";
import { createCore } from "../src/core.ts";
import { feishuGroupSessionId } from "../src/domain/session-id.ts";
import { type FeishuApps, startFeishuApps } from "../src/feishu/index.ts";
import { createAgentsFromConfig } from "../src/harness/agents/index.ts";
import { SUB_AGENT_PROMPT } from "../src/harness/agents/prompts.ts";
import { type Emulator, type EmulatorApp, startEmulator } from "../src/local/emulator/index.ts";
import { createLogger } from "../src/logger.ts";
import { type Db, openDatabase } from "../src/store/db.ts";
import { zh } from "../src/strings/index.ts";
import { FAST_LONG_CONNECTION } from "./helpers/feishu.ts";
import {
  type RecordedRequest,
  type ScriptedModel,
  type ScriptedReply,
  startScriptedModel,
} from "./helpers/openai-server.ts";
import { until } from "./helpers/wait.ts";

/**
 * Per-app agents (issue 30): two apps of one emulated tenant in one process, wired as main.ts wires them
 * (config file → loadConfig → createAgentsFromConfig → createCore → startFeishuApps). App A has no agent of its
 * own and gets the environment's (AGENT=demo); app B's entry names an OpenAI-compatible agent on a scripted
 * model server. Every message must be answered by its own app's agent, with that agent's tools only.
 */

const A = "cli_a000000000000001";
const B = "cli_b000000000000002";
const KEY_B = "encrypt-key-of-b";
const CHATS = ["oc_shared_one", "oc_shared_two"] as const;

let emulator: Emulator;
let model: ScriptedModel;
let apps: FeishuApps;
let db: Db;
let server: Server;
let dataDir: string;
let core: Awaited<ReturnType<typeof createCore>>;

/** The scripted model of app B: a sub-agent answers its task; `/delegate` and `/steal` call a tool first. */
function modelOfB(request: RecordedRequest): ScriptedReply {
  const messages = request.body.messages;
  if (messages[0]?.content === SUB_AGENT_PROMPT)
    return { text: ["sub-agent of b did it"], model: "model-of-b" };
  const last = messages[messages.length - 1];
  const input = [...messages].reverse().find((m) => m.role === "user")?.content ?? "";
  if (last?.role === "tool") return { text: [`model-of-b after tool: ${last.content}`] };
  if (input.includes("/delegate"))
    return { toolCalls: [{ name: "delegate", arguments: { task: "sub-task" } }] };
  if (input.includes("/steal")) return { toolCalls: [{ name: "scan_workspace", arguments: {} }] };
  return { text: ["model-of-b answers: ", input] };
}

beforeAll(async () => {
  model = await startScriptedModel();
  model.script(...Array.from({ length: 200 }, () => modelOfB));
  emulator = await startEmulator({
    appId: A,
    longConnection: FAST_LONG_CONNECTION,
    otherApps: [{ appId: B, encryptKey: KEY_B, botName: "Second Bot" }],
  });
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-app-agents-"));
  const file = parseConfigFile(
    JSON.stringify({
      env: {
        AGENT: "demo",
        DEMO_STEP_MS: 2,
        CARD_PATCH_INTERVAL_MS: 200,
        FEISHU_CALLBACK_SETTLE_MS: 20,
        QUEUE_MAX: 100,
      },
      apps: [
        { appId: A, appSecret: emulator.appSecret, transport: "ws", domain: emulator.url },
        {
          appId: B,
          appSecret: emulator.app(B).appSecret,
          transport: "webhook",
          encryptKey: KEY_B,
          domain: emulator.url,
          agent: {
            kind: "openai",
            baseUrl: model.baseUrl,
            model: "model-of-b",
            apiKey: { env: "B_MODEL_KEY" },
          },
        },
      ],
    }),
    "feishu-progress-bot.json",
  );
  const config = loadConfig(
    { AUTH_SECRET: "0123456789abcdef0123456789abcdef", DATA_DIR: dataDir, B_MODEL_KEY: "sk-of-b" },
    file,
  );
  if (config.mode !== "feishu") throw new Error("expected feishu mode");
  const logger = createLogger({ level: "silent" });
  db = openDatabase(path.join(dataDir, "bot.sqlite"));
  const agent = createAgentsFromConfig(config, logger, {}, (runId) => core.store.runSource(runId));
  core = await createCore({
    db,
    logger,
    ...agent,
    askTimeoutMs: 60_000,
    authSecret: "0123456789abcdef0123456789abcdef",
    maxQueued: config.queueMax,
  });
  apps = await startFeishuApps({ config, core, logger, now: Date.now });
  server = createApp({ ...core, logger, routes: apps.routes }).server;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  emulator.subscribe({ mode: "long_connection" });
  emulator.app(B).subscribe({ mode: "webhook", url: `http://127.0.0.1:${port}/feishu/${B}/events` });
  await apps.ready;
}, 30_000);

afterAll(async () => {
  await core?.runner.stop();
  await apps?.close();
  await core?.hub.close();
  await new Promise((resolve) => server?.close(resolve));
  db?.close();
  await emulator?.close();
  await model?.close();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

async function deliver(app: EmulatorApp, chatId: string, text: string, sender: string): Promise<string> {
  const payload = app.userMessage({
    chatType: "group",
    chatId,
    senderOpenId: sender,
    text,
    mentionBot: true,
  });
  const result = await app.deliver(payload, { timeoutMs: 10_000 });
  if (result.status !== 200) throw new Error(`${app.appId} answered ${result.status}`);
  return payload.event.message.message_id;
}

type RunRow = {
  session_id: string;
  input: string;
  status: string;
  final_text: string | null;
  steps_json: string;
};

function runs(): RunRow[] {
  return db.prepare("SELECT session_id, input, status, final_text, steps_json FROM runs").all() as RunRow[];
}

function ended(count: number): boolean {
  const rows = runs();
  return rows.length >= count && rows.every((row) => !["running", "queued"].includes(row.status));
}

const userText = (request: RecordedRequest) =>
  [...request.body.messages].reverse().find((m) => m.role === "user")?.content ?? "";

describe("two apps, each with its own agent", () => {
  it("answers 40 interleaved messages each by its own app's agent, with 0 crossings", async () => {
    const sent: { app: string; text: string; id: string }[] = [];
    for (let i = 0; i < 40; i += 1) {
      const app = i % 2 === 0 ? A : B;
      const chat = CHATS[Math.floor(i / 2) % 2] ?? CHATS[0];
      const text = `/quick message ${i} for ${app}`;
      sent.push({
        app,
        text,
        id: await deliver(emulator.app(app), chat, text, `ou_person${i % 3}_${app.slice(4, 5)}`),
      });
    }
    await until(() => ended(40), "every run ended", 60_000);
    await Promise.all(apps.runtimes.map((runtime) => runtime.channel.idle()));

    const crossings: string[] = [];
    for (const run of runs()) {
      const mine = sent.find((m) => run.input.includes(m.text));
      if (!mine) continue;
      const inApp = run.session_id.startsWith(`feishu-${mine.app}-`);
      if (!inApp) crossings.push(`${run.input}: in ${run.session_id}`);
      const expected = mine.app === A ? zh.demo.quickDone : `model-of-b answers: ${run.input}`;
      if (run.status !== "completed" || run.final_text !== expected)
        crossings.push(`${run.input}: ${run.status} ${run.final_text}`);
      // App A's demo agent ran its own tool; app B's model never reached it.
      const tools = (JSON.parse(run.steps_json) as { tool: string }[]).map((step) => step.tool);
      if (mine.app === A && !tools.includes("scan_workspace")) crossings.push(`${run.input}: no demo step`);
      if (mine.app === B && tools.length > 0) crossings.push(`${run.input}: steps ${tools.join(",")}`);
    }
    // Only app B's messages reached app B's model, each once, with B's model name and key.
    const asked = model.requests.map(userText);
    for (const m of sent.filter((s) => s.app === A))
      if (asked.some((text) => text.includes(m.text))) crossings.push(`${m.text}: sent to model-of-b`);
    expect(crossings).toEqual([]);
    expect(asked.filter((text) => sent.some((m) => m.app === B && text.includes(m.text)))).toHaveLength(20);
    expect(new Set(model.requests.map((r) => r.body.model))).toEqual(new Set(["model-of-b"]));
    expect(new Set(model.requests.map((r) => r.headers.authorization))).toEqual(new Set(["Bearer sk-of-b"]));
    // B's model is offered B's agent's tools, never the demo agent's.
    const offered = model.requests[0]?.body.tools?.map((tool) => tool.function.name).sort();
    expect(offered).toEqual(["ask_user_questions", "current_time", "delegate"]);

    // Each card shows its own agent's answer, sent by the app that received the message.
    const cards = emulator.messages
      .listMessages()
      .filter((m) => m.senderType === "app" && m.msgType === "interactive");
    for (const m of sent) {
      const card = cards.find((c) => c.parentId === m.id);
      expect(card?.senderId).toBe(m.app);
      expect(card?.content).toContain(m.app === A ? "/quick` 的演示回复" : "model-of-b answers");
    }
  }, 120_000);

  it("runs app B's delegate on app B's model, its sub-agent seeing app B's tools only", async () => {
    const before = model.requests.length;
    await deliver(emulator.app(B), CHATS[0], "/delegate please", "ou_delegator_b");
    await until(() => ended(41), "the delegating run ended", 20_000);
    const sub = model.requests.slice(before).find((r) => r.body.messages[0]?.content === SUB_AGENT_PROMPT);
    expect(sub?.body.model).toBe("model-of-b");
    // A sub-agent never asks; the demo agent's tools are not B's.
    expect(sub?.body.tools?.map((tool) => tool.function.name).sort()).toEqual(["current_time", "delegate"]);
    const run = runs().find((row) => row.input.includes("/delegate please"));
    expect(run).toMatchObject({ session_id: feishuGroupSessionId(B, CHATS[0]), status: "completed" });
    expect(run?.final_text).toContain("sub-agent of b did it");
  }, 30_000);

  it("refuses app A's demo tool to app B's model as an unknown tool", async () => {
    await deliver(emulator.app(B), CHATS[1], "/steal the demo tool", "ou_thief_b");
    await until(() => ended(42), "the stealing run ended", 20_000);
    const run = runs().find((row) => row.input.includes("/steal"));
    expect(run?.status).toBe("completed");
    expect(run?.final_text).toContain("Unknown tool: scan_workspace");
    expect(run?.final_text).not.toContain(zh.demo.scanned(42));
  }, 30_000);
});
