import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.ts";
import { createAgentFromConfig } from "../src/harness/agents/index.ts";
import { elicitThrough } from "../src/harness/agents/mcp/index.ts";
import { createLogger } from "../src/logger.ts";
import { type FeishuRig, formsOn, requestIdsOn, startFeishuRig } from "./helpers/feishu.ts";
import { ALICE, EVERYTHING, mcpFrom } from "./helpers/mcp.ts";
import { type ScriptedModel, startScriptedModel } from "./helpers/openai-server.ts";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** main.ts's wiring: MCP tools into the OpenAI agent, elicitations through the dispatcher, on the emulator. */
async function rig(
  call: { name: string; arguments: unknown } | null = {
    name: "everything__trigger-elicitation-request",
    arguments: {},
  },
): Promise<{ r: FeishuRig; model: ScriptedModel }> {
  const mcp = await mcpFrom(closers, {
    everything: { command: process.execPath, args: [EVERYTHING, "stdio"] },
  });
  const model = await startScriptedModel();
  closers.push(() => model.close());
  const config = loadConfig({ AGENT: "openai", OPENAI_BASE_URL: model.baseUrl, OPENAI_MODEL: "scripted" });
  const logger = createLogger({ level: "silent" });
  const r = await startFeishuRig(createAgentFromConfig(config, logger, { tools: mcp.tools }));
  closers.push(() => r.stop());
  mcp.setElicitationHandler(elicitThrough(r.core.dispatcher, logger));
  if (call) model.script({ toolCalls: [{ id: "c_ask", ...call }] }, { text: ["收到"] });
  return { r, model };
}

type Node = Record<string, unknown>;
const nodes = (value: unknown): Node[] => {
  if (Array.isArray(value)) return value.flatMap(nodes);
  if (typeof value !== "object" || value === null) return [];
  return [Object.fromEntries(Object.entries(value)), ...Object.values(value).flatMap(nodes)];
};
const named = (form: unknown, name: string) => nodes(form).find((node) => node.name === name);
const optionIndex = (node: Node | undefined, label: string) =>
  nodes(node?.options).find((option) => nodes(option).some((n) => n.content === label))?.value;

async function formOnCard(r: FeishuRig) {
  const messageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "填个表" });
  const cardId = await r.progressCard(messageId);
  await r.until(() => formsOn(r.cardOf(cardId)).length > 0, "the MCP form on the card");
  const form = nodes(r.cardOf(cardId)).find((node) => node.tag === "form");
  const requestId = requestIdsOn(r.cardOf(cardId))[0] ?? "";
  const ask = r.core.registry.get(requestId);
  if (!ask) throw new Error("expected a pending elicitation");
  const click = (act: string, formValue: Record<string, unknown>) =>
    r.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: { kind: "feishu_ask", act, sessionId: ask.sessionId, requestId, sender: ALICE },
      name: `ask0_${act}`,
      formValue,
    });
  return { cardId, form, ask, click };
}

describe("MCP elicitation → a form on the Feishu card (server-everything over stdio)", () => {
  it("shows the server's fields, checks a number on submit, and sends the answer back in the schema's shape", async () => {
    const { r, model } = await rig();
    const { form, ask, click } = await formOnCard(r);
    expect(JSON.stringify(form)).toContain("MCP 服务「everything」请你填写");
    const fields = ask.elicitation?.fields ?? [];
    const index = (key: string) => fields.findIndex((field) => field.key === key);
    expect(named(form, `ask0_f${index("name")}`)?.tag).toBe("input");
    expect(named(form, `ask0_f${index("check")}`)?.tag).toBe("select_static");
    expect(named(form, `ask0_f${index("untitledSingleSelectEnum")}`)?.tag).toBe("select_static");
    expect(named(form, `ask0_f${index("titledMultipleSelectEnum")}`)?.tag).toBe("multi_select_static");
    expect(named(form, `ask0_f${index("integer")}`)?.tag).toBe("input");
    for (const button of ["ask0_submit", "ask0_decline", "ask0_cancel"])
      expect(named(form, button)).toBeDefined();
    // The schema's defaults are filled in.
    expect(named(form, `ask0_f${index("firstLine")}`)?.default_value).toBe("It was a dark and stormy night.");
    expect(named(form, `ask0_f${index("integer")}`)?.default_value).toBe("42");
    expect(named(form, `ask0_f${index("untitledSingleSelectEnum")}`)?.initial_index).toBe(1);

    const hero = named(form, `ask0_f${index("titledSingleSelectEnum")}`);
    const fish = named(form, `ask0_f${index("titledMultipleSelectEnum")}`);
    const value = {
      [`ask0_f${index("name")}`]: "王小明",
      [`ask0_f${index("check")}`]: "yes",
      [`ask0_f${index("integer")}`]: "四十二",
      [`ask0_f${index("titledSingleSelectEnum")}`]: optionIndex(hero, "Wonder Woman"),
      [`ask0_f${index("titledMultipleSelectEnum")}`]: [optionIndex(fish, "Tuna"), optionIndex(fish, "Trout")],
    };
    const bad = await click("submit", value);
    expect(bad.toast?.content).toBe("「Integer」需要填写数字");
    expect(r.core.registry.get(ask.requestId)).toBeDefined();

    const good = await click("submit", { ...value, [`ask0_f${index("integer")}`]: "42" });
    expect(good.toast?.content).toBe("已提交");
    const result =
      (await model.request(2)).body.messages.find((m) => m.tool_call_id === "c_ask")?.content ?? "";
    const raw = JSON.parse(result.slice(result.indexOf("{")));
    expect(raw).toEqual({
      action: "accept",
      content: {
        name: "王小明",
        check: true,
        integer: 42,
        titledSingleSelectEnum: "hero-3",
        titledMultipleSelectEnum: ["fish-1", "fish-3"],
      },
    });
  });

  it("拒绝 declines without filling anything in, and only the sender may answer", async () => {
    const { r, model } = await rig();
    const { cardId, ask, click } = await formOnCard(r);
    const other = await r.click({
      messageId: cardId,
      operatorOpenId: "ou_bob00000000000000000000000000000",
      value: {
        kind: "feishu_ask",
        act: "decline",
        sessionId: ask.sessionId,
        requestId: ask.requestId,
        sender: ALICE,
      },
      name: "ask0_decline",
      formValue: {},
    });
    expect(r.core.registry.get(ask.requestId)).toBeDefined();
    expect(other.toast?.content).not.toBe("已拒绝");
    const declined = await click("decline", {});
    expect(declined.toast?.content).toBe("已拒绝");
    const result =
      (await model.request(2)).body.messages.find((m) => m.tool_call_id === "c_ask")?.content ?? "";
    expect(JSON.parse(result.slice(result.indexOf("{")))).toEqual({ action: "decline" });
  });

  it("URL mode shows the link and 完成, which accepts", async () => {
    const { r, model } = await rig({
      name: "everything__trigger-url-elicitation",
      arguments: { url: "https://example.com/authorize?x=1", message: "请授权访问" },
    });
    const { form, click } = await formOnCard(r);
    const text = JSON.stringify(form);
    expect(text).toContain("MCP 服务「everything」请你打开链接完成操作");
    expect(text).toContain("https://example.com/authorize?x=1");
    expect(text).toContain("请授权访问");
    expect(named(form, "ask0_submit")).toMatchObject({ text: { content: "完成" } });
    expect((await click("submit", {})).toast?.content).toBe("已提交");
    const result =
      (await model.request(2)).body.messages.find((m) => m.tool_call_id === "c_ask")?.content ?? "";
    expect(result).toContain('"action": "accept"');
  });

  it("取消任务 while the form is up withdraws the form and settles the elicitation", async () => {
    const { r } = await rig();
    const { cardId, ask } = await formOnCard(r);
    const cancelled = await r.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: { kind: "progress", act: "cancel", sessionId: ask.sessionId, runId: ask.runId, sender: ALICE },
    });
    expect(cancelled.toast?.content).toBe("已取消任务");
    expect(r.core.registry.get(ask.requestId)).toBeUndefined();
    await r.until(() => formsOn(r.cardOf(cardId)).length === 0, "the form withdrawn");
  });

  it("a sub-agent sees the MCP tools, but its call's elicitation is declined without a form", async () => {
    const { r, model } = await rig(null);
    model.script(
      { toolCalls: [{ id: "c_d", name: "delegate", arguments: { task: "填表" } }] },
      { toolCalls: [{ id: "c_sub", name: "everything__trigger-elicitation-request", arguments: {} }] },
      { text: ["子代理：被拒绝了"] },
      { text: ["完成"] },
    );
    const asked: string[] = [];
    r.core.registry.on("registered", (ask) => asked.push(ask.requestId));
    const messageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "让子代理填表" });
    const cardId = await r.progressCard(messageId);
    const sub = (await model.request(2)).body;
    expect((sub.tools ?? []).map((tool) => tool.function.name)).toContain("everything__echo");
    const result =
      (await model.request(3)).body.messages.find((m) => m.tool_call_id === "c_sub")?.content ?? "";
    expect(JSON.parse(result.slice(result.indexOf("{")))).toEqual({ action: "decline" });
    await model.request(4);
    expect(formsOn(r.cardOf(cardId))).toEqual([]);
    expect(asked).toEqual([]);
  });

  it("in a group, the form names the sender it waits for, and a click by another member is refused", async () => {
    const { r } = await rig();
    const messageId = await r.send({
      chatType: "group",
      senderOpenId: ALICE,
      text: "填个表",
      chatId: "oc_mcpgroup000000000000000000000000",
      mentionBot: true,
    });
    const cardId = await r.progressCard(messageId);
    await r.until(() => formsOn(r.cardOf(cardId)).length > 0, "the MCP form on the group card");
    expect(JSON.stringify(r.cardOf(cardId))).toContain(`<at id=${ALICE}></at>`);
    const requestId = requestIdsOn(r.cardOf(cardId))[0] ?? "";
    const ask = r.core.registry.get(requestId);
    const refused = await r.click({
      messageId: cardId,
      operatorOpenId: "ou_bob00000000000000000000000000000",
      value: {
        kind: "feishu_ask",
        act: "decline",
        sessionId: ask?.sessionId ?? "",
        requestId,
        sender: ALICE,
      },
      name: "ask0_decline",
      formValue: {},
    });
    expect(refused.toast?.content).toBe("仅任务发起人可以回答此问题");
    expect(r.core.registry.get(requestId)).toBeDefined();
  });
});
