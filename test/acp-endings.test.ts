import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { fixtureAgent } from "./helpers/acp.ts";
import { ALICE, acpRigs, ask, cancelValue, settled, stepsIn } from "./helpers/acp-rig.ts";
import { cardText, type FeishuRig, formsOn, requestIdsOn } from "./helpers/feishu.ts";

/**
 * How an ACP run's card ends (issue 31): what the real agents left on it once the turn stopped. The scripted
 * agent (test/fixtures/acp-agent.ts) runs as a child process behind the emulator's card.
 */

const { rig } = acpRigs();

describe("the end of an ACP run on the card", () => {
  it("leaves plan entries as the agent last reported them and ends a completed run's unfinished call as done", async () => {
    const r = await rig(fixtureAgent());
    const card = await settled(r, await ask(r, "/unfinished"));
    const steps = stepsIn(card, "zh_cn");
    expect(steps).toContain("✅ 计划 1. 读取配置");
    expect(steps).toContain("⏳ 计划 2. 修改代码");
    expect(steps).toContain("⬜ 计划 3. 运行测试");
    expect(steps).toContain("✅ 执行命令 · Run tests");
    expect(cardText(card)).not.toContain("❌");
  });

  it("ends a cancelled run's call under way as stopped, not failed", async () => {
    const r = await rig(fixtureAgent());
    const cardId = await ask(r, "/slow");
    await r.until(() => cardText(r.cardOf(cardId)).includes("Long job"), "the long step");
    await r.click({ messageId: cardId, operatorOpenId: ALICE, value: cancelValue(r.cardOf(cardId)) });
    const card = await settled(r, cardId, "grey");
    expect(stepsIn(card, "zh_cn")).toContain("⏹️ 执行命令 · Long job · 已停止");
    expect(stepsIn(card, "en_us")).toContain("⏹️ run a command · Long job · Stopped");
    expect(cardText(card)).not.toContain("❌");
  });

  it("fails the calls under way only when the run itself failed", async () => {
    const r = await rig(fixtureAgent());
    const card = await settled(r, await ask(r, "/crash"), "red");
    expect(stepsIn(card, "zh_cn")).toContain("❌ 执行命令 · Build");
  });

  it("ends the card 已拒绝 when the person refused a permission and the agent stopped, with no failure and no 重试", async () => {
    const r = await rig(fixtureAgent());
    const cardId = await ask(r, "/perm-stop");
    const sessionId = await refuse(r, cardId);
    const card = await settled(r, cardId, "grey");
    const text = cardText(card);
    const tags = JSON.stringify(card.header?.i18n_text_tag_list);
    expect(tags).toContain('"content":"已拒绝"');
    expect(tags).toContain('"content":"Declined"');
    expect(stepsIn(card, "zh_cn")).toContain("⏹️ 编辑 · Edit notes.md · 已拒绝");
    expect(stepsIn(card, "en_us")).toContain("⏹️ edit · Edit notes.md · Declined");
    for (const word of ["失败", "智能体已停止", "cancelled", "重试", "❌", '"act":"retry"'])
      expect(text).not.toContain(word);
    // Nothing to retry: the person chose this.
    expect((await r.core.runner.currentRun(sessionId))?.status).toBe("rejected");
    expect(await r.core.runner.retry(sessionId, ALICE)).toEqual({ ok: false, reason: "not_retryable" });
  });

  it("marks the refused call 已拒绝 when the agent goes on and completes the turn", async () => {
    const r = await rig(fixtureAgent());
    const cardId = await ask(r, "/perm");
    await refuse(r, cardId);
    const card = await settled(r, cardId);
    expect(stepsIn(card, "zh_cn")).toContain("⏹️ 编辑 · Edit notes.md · 已拒绝");
    expect(cardText(card)).toContain("权限结果: selected reject");
    expect(cardText(card)).not.toContain("❌");
  });
});

describe("ACP step summaries", () => {
  it("summarise JSON by its shape and keep host paths off the card: relative in the workspace, elided outside", async () => {
    const r = await rig(fixtureAgent());
    const card = await settled(r, await ask(r, "/shapes"));
    const workspace = path.join(r.dataDir, "workspaces", "feishu-private", ALICE);
    const steps = stepsIn(card, "zh_cn");
    // (the card escapes markdown in step text: * [ ] are sent as entities)
    expect(steps).toContain(
      '✅ 执行命令 · ls -d "$PWD"/&#42; &#91;current working directory .&#93; · notes.md',
    );
    expect(steps).toContain("✅ 读取 · Read package.json · JSON 对象，4 个键：name、version、scripts…");
    expect(steps).toContain("✅ 获取网页 · List issues · JSON 数组，3 项");
    expect(steps).toContain("✅ 执行命令 · which node · …");
    expect(stepsIn(card, "en_us")).toContain("JSON object, 4 keys: name, version, scripts…");
    expect(stepsIn(card, "en_us")).toContain("JSON array, 3 items");
    const text = cardText(card);
    for (const host of [fs.realpathSync(workspace), workspace, r.dataDir, "/usr/local/bin"])
      expect(text).not.toContain(host);
  });
});

/** Picks the permission form's third option (the agent's Reject) as Alice; the run's session id. */
async function refuse(r: FeishuRig, cardId: string): Promise<string> {
  const card = await r.until(() => {
    const c = r.cardOf(cardId);
    return formsOn(c).length === 1 && c;
  }, "the permission form");
  const requestId = requestIdsOn(card)[0] ?? "";
  const sessionId = r.core.registry.get(requestId)?.sessionId ?? "";
  const clicked = await r.click({
    messageId: cardId,
    operatorOpenId: ALICE,
    value: { kind: "feishu_ask", act: "submit", sessionId, requestId, sender: ALICE },
    name: "ask0_submit",
    formValue: { ask0_q0: "2", ask0_c0: "" },
  });
  expect(clicked.toast?.content).toBe("已提交");
  return sessionId;
}
