import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { createAcpAgent } from "../src/harness/agents/acp/index.ts";
import { createLogger } from "../src/logger.ts";
import { startScriptedAnthropic } from "./helpers/anthropic-server.ts";
import { cardText, formsOn, requestIdsOn, startFeishuRig } from "./helpers/feishu.ts";

/**
 * The real Claude Code adapter (`@zed-industries/claude-code-acp`, which runs Claude Code itself) behind the
 * card, against a scripted Messages API on loopback: nothing leaves the machine.
 */

const ALICE = "ou_alice000000000000000000000000000";
const ADAPTER = fileURLToPath(
  new URL("../node_modules/@zed-industries/claude-code-acp/dist/index.js", import.meta.url),
);

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** The real adapter as the chat's ACP agent, its model the scripted API at `modelUrl`, behind the Feishu rig. */
async function rigWith(modelUrl: string, dataDir: string) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-cc-home-"));
  const agent = createAcpAgent({
    command: process.execPath,
    args: [ADAPTER],
    env: {
      PATH: process.env.PATH ?? "",
      HOME: home,
      ANTHROPIC_BASE_URL: modelUrl,
      ANTHROPIC_API_KEY: "sk-ant-test",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_TELEMETRY: "1",
      DISABLE_AUTOUPDATER: "1",
    },
    terminal: false,
    idleTimeoutMs: 60_000,
    dataDir,
    logger: createLogger({ level: "silent" }),
  });
  const r = await startFeishuRig({ agent, tools: [], dataDir });
  closers.push(() => agent.close());
  closers.push(() => r.stop());
  return r;
}

describe("AGENT=acp with Claude Code (claude-code-acp against a scripted Messages API)", () => {
  it("shows its todo list and its write, asks the sender's permission on the card, and writes inside the workspace", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-cc-"));
    const workspace = path.join(dataDir, "workspaces", "feishu-private", ALICE);
    const target = path.join(fs.realpathSync(dataDir), "workspaces", "feishu-private", ALICE, "hello.txt");
    const model = await startScriptedAnthropic([
      {
        toolUse: {
          name: "TodoWrite",
          input: {
            todos: [{ content: "写 hello.txt", status: "in_progress", activeForm: "正在写 hello.txt" }],
          },
        },
      },
      { toolUse: { name: "mcp__acp__Write", input: { file_path: target, content: "你好" } } },
      { text: "已写好 hello.txt。" },
    ]);
    closers.push(() => model.close());
    const r = await rigWith(model.url, dataDir);
    const cardId = await r.progressCard(
      await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "在工作区写一个 hello.txt" }),
    );
    const card = await r.until(
      () => {
        const c = r.cardOf(cardId);
        return formsOn(c).length === 1 && c;
      },
      "the permission form",
      40_000,
    );
    const text = cardText(card);
    // Its TodoWrite became the checklist; its write a step, paths shown relative to the chat's workspace.
    expect(text).toContain("⏳ 计划 1. 写 hello.txt");
    expect(text).toContain("编辑 · Write hello.txt · diff hello.txt");
    // The tool's name, which the adapter gives only in `_meta.claudeCode.toolName` (mcp__acp__Write), shown as
    // its titles show it.
    expect(text).toContain("智能体想要编辑（Write）：Write hello.txt。允许吗？");
    expect(fs.existsSync(path.join(workspace, "hello.txt"))).toBe(false);
    const requestId = requestIdsOn(card)[0] ?? "";
    const ask = r.core.registry.get(requestId);
    const allow = ask?.questions[0]?.options.findIndex(
      (o) => /allow/i.test(o.label) && !/always/i.test(o.label),
    );
    const clicked = await r.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: { kind: "feishu_ask", act: "submit", sessionId: ask?.sessionId ?? "", requestId, sender: ALICE },
      name: "ask0_submit",
      formValue: { ask0_q0: String(allow ?? 0), ask0_c0: "" },
    });
    expect(clicked.toast?.content).toBe("已提交");
    const done = await r.until(
      () => {
        const c = r.cardOf(cardId);
        return c.header?.template === "green" && c;
      },
      "the completed card",
      40_000,
    );
    expect(cardText(done)).toContain("已写好 hello.txt。");
    expect(fs.readFileSync(path.join(workspace, "hello.txt"), "utf8")).toBe("你好");
  }, 90_000);

  it("remembers 'Always Allow' on its Write for the session: its next Write is answered without a form", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-cc-always-"));
    const workspace = path.join(dataDir, "workspaces", "feishu-private", ALICE);
    const real = path.join(fs.realpathSync(dataDir), "workspaces", "feishu-private", ALICE);
    const model = await startScriptedAnthropic([
      { toolUse: { name: "mcp__acp__Write", input: { file_path: path.join(real, "a.txt"), content: "甲" } } },
      { toolUse: { name: "mcp__acp__Write", input: { file_path: path.join(real, "b.txt"), content: "乙" } } },
      { text: "两个文件都写好了。" },
    ]);
    closers.push(() => model.close());
    const r = await rigWith(model.url, dataDir);
    const cardId = await r.progressCard(
      await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "写 a.txt 和 b.txt" }),
    );
    const card = await r.until(
      () => {
        const c = r.cardOf(cardId);
        return formsOn(c).length === 1 && c;
      },
      "the permission form",
      40_000,
    );
    const requestId = requestIdsOn(card)[0] ?? "";
    const ask = r.core.registry.get(requestId);
    const always = ask?.questions[0]?.options.findIndex((o) => /always/i.test(o.label)) ?? -1;
    expect(always).toBeGreaterThanOrEqual(0);
    await r.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: { kind: "feishu_ask", act: "submit", sessionId: ask?.sessionId ?? "", requestId, sender: ALICE },
      name: "ask0_submit",
      formValue: { ask0_q0: String(always), ask0_c0: "" },
    });
    const done = await r.until(
      () => {
        const c = r.cardOf(cardId);
        return c.header?.template === "green" && c;
      },
      "the completed card",
      40_000,
    );
    const text = cardText(done);
    expect(text).toContain("以后本会话中的「编辑（Write）」操作都将自动允许");
    expect(text).toContain("已按之前的选择自动允许：编辑 · Write b.txt");
    expect(text).toContain("两个文件都写好了。");
    expect(fs.readFileSync(path.join(workspace, "a.txt"), "utf8")).toBe("甲");
    expect(fs.readFileSync(path.join(workspace, "b.txt"), "utf8")).toBe("乙");
  }, 90_000);
});
