import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createLogger } from "../src/logger.ts";
import { fixtureAgent } from "./helpers/acp.ts";
import { ALICE, acpRigs, ask, BOB, cancelValue, settled, stepsIn } from "./helpers/acp-rig.ts";
import { cardText, formsOn, requestIdsOn } from "./helpers/feishu.ts";

const { closers, rig } = acpRigs();

describe("AGENT=acp behind the card (scripted ACP agent as a child process, emulator, SDK)", () => {
  it("shows the plan as a checklist, tool calls as steps with kind and summary, and the streamed answer, without thoughts", async () => {
    const r = await rig(fixtureAgent());
    const card = await settled(r, await ask(r, "改一下配置"));
    const text = cardText(card);
    expect(text).toContain("✅ 计划 1. 读取配置");
    expect(text).toContain("✅ 计划 3. 运行测试");
    expect(text).toContain("✅ 读取 · Read config.json · found 3 keys");
    // The frame is the bot's, the entries and titles the agent's: an English reader gets the English frame.
    const english = stepsIn(card, "en_us");
    expect(english).toContain("✅ Plan 1. 读取配置");
    expect(english).toContain("✅ read · Read config.json · found 3 keys");
    expect(text).toContain("改好了,测试全部通过。");
    expect(text).not.toContain("SECRET-THOUGHT");
  });

  it("shows the turn's tokens in the final card's footer when the agent reports them (issue 30)", async () => {
    const r = await rig(fixtureAgent());
    const cardId = await ask(r, "/usage");
    const card = await settled(r, cardId);
    // ACP names no model: the footer says what the agent said, and no more.
    expect(cardText(card)).toMatch(/用时 \d+ 秒 · ↑1,234 ↓266"/);
    const run = await r.core.runner.currentRun(`feishu-${r.emulator.appId}-private-${ALICE}`);
    expect(run?.usage).toEqual({ inputTokens: 1234, outputTokens: 266, cachedTokens: 1000 });
  });

  it("puts a permission request on the card as a form only the sender can answer, and hands the pick to the agent", async () => {
    const r = await rig(fixtureAgent());
    const cardId = await ask(r, "/perm", true);
    const card = await r.until(() => {
      const c = r.cardOf(cardId);
      return formsOn(c).length === 1 && c;
    }, "the permission form");
    const text = cardText(card);
    expect(text).toContain("智能体想要编辑：Edit notes.md。允许吗？");
    for (const label of ["Allow", "Always allow", "Reject"]) expect(text).toContain(label);
    expect(text).toContain("⬜ 编辑 · Edit notes.md");
    expect(stepsIn(card, "en_us")).toContain("⏳ Permission requested: Edit notes.md");

    const requestId = requestIdsOn(card)[0] ?? "";
    const sessionId = r.core.registry.get(requestId)?.sessionId ?? "";
    const click = (operator: string) =>
      r.click({
        messageId: cardId,
        operatorOpenId: operator,
        value: { kind: "feishu_ask", act: "submit", sessionId, requestId, sender: ALICE },
        name: "ask0_submit",
        formValue: { ask0_q0: "0", ask0_c0: "" },
      });
    expect((await click(BOB)).toast?.content).toBe("仅任务发起人可以回答此问题");
    expect(r.core.registry.get(requestId)).toBeDefined();
    expect((await click(ALICE)).toast?.content).toBe("已提交");
    const done = cardText(await settled(r, cardId));
    expect(done).toContain("权限结果: selected allow");
    expect(done).toContain("✅ 编辑 · Edit notes.md");
  });

  it("withdraws the permission form when the task is cancelled while it is open", async () => {
    const r = await rig(fixtureAgent());
    const cardId = await ask(r, "/perm");
    await r.until(() => formsOn(r.cardOf(cardId)).length === 1, "the permission form");
    const clicked = await r.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: cancelValue(r.cardOf(cardId)),
    });
    expect(clicked.toast?.type).not.toBe("error");
    const card = cardText(await settled(r, cardId, "grey"));
    expect(card).not.toContain("权限结果");
    expect(r.core.registry.size).toBe(0);
  });

  it("takes a withdrawn permission request's form off the card at once, while the run goes on", async () => {
    const r = await rig(fixtureAgent());
    const cardId = await ask(r, "/withdraw-then-work");
    await r.until(() => formsOn(r.cardOf(cardId)).length > 0, "the permission form");
    const after = await r.until(() => {
      const card = r.cardOf(cardId);
      return cardText(card).includes("撤回后: cancelled") && card;
    }, "the agent told cancelled");
    // Still running (blue), and the form is already gone: nobody can answer a request the agent dropped.
    expect(after.header?.template).toBe("blue");
    expect(formsOn(after)).toEqual([]);
    expect(r.core.registry.size).toBe(0);
    const done = await settled(r, cardId);
    expect(formsOn(done)).toEqual([]);
  });

  it("answers cancelled at once when the agent withdraws its permission request, and no ask is left", async () => {
    const r = await rig(fixtureAgent());
    const cardId = await ask(r, "/withdraw");
    const done = cardText(await settled(r, cardId));
    expect(done).toContain("撤回后: cancelled");
    expect(formsOn(r.cardOf(cardId))).toEqual([]);
    expect(r.core.registry.size).toBe(0);
  });

  it("sends session/cancel on 取消任务, and the same ACP session takes the next message", async () => {
    const r = await rig(fixtureAgent());
    const cardId = await ask(r, "/slow");
    await r.until(() => cardText(r.cardOf(cardId)).includes("Long job"), "the long step");
    const clicked = await r.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: cancelValue(r.cardOf(cardId)),
    });
    expect(clicked.toast?.type).not.toBe("error");
    await settled(r, cardId, "grey");
    const next = cardText(await settled(r, await ask(r, "/count")));
    // The process was not killed: its session counted both prompts.
    expect(next).toContain("第 2 次提问");
  });

  it("fails the run with a readable reason when the agent crashes, logs its stderr (never on the card), and restarts it", async () => {
    const lines: string[] = [];
    const logger = createLogger({
      level: "info",
      destination: { write: (line: string) => void lines.push(line) },
    });
    const r = await rig(fixtureAgent({ logger }));
    const failed = cardText(await settled(r, await ask(r, "/crash"), "red"));
    expect(failed).toContain("ACP 智能体进程意外退出（exit code 3）");
    expect(failed).not.toContain("crashing on purpose");
    expect(lines.join("\n")).toContain("fixture: crashing on purpose");
    const again = cardText(await settled(r, await ask(r, "/count")));
    expect(again).toContain("第 1 次提问");
  });

  it("fails with a reason to act on when ACP_COMMAND cannot be started, and does not crash the bot", async () => {
    const r = await rig(fixtureAgent({ command: "/nonexistent/acp-agent", args: [] }));
    const failed = cardText(await settled(r, await ask(r, "你好"), "red"));
    expect(failed).toContain("无法启动 ACP 智能体 /nonexistent/acp-agent");
    // (the card escapes markdown in error text: `_` is sent as &#95;)
    expect(failed).toContain("检查 ACP&#95;COMMAND / ACP&#95;ARGS");
    // The next message tries again (and fails the same way), rather than finding a dead process.
    expect(cardText(await settled(r, await ask(r, "再试"), "red"))).toContain("无法启动 ACP 智能体");
  });

  it("reads and writes inside the chat's workspace and refuses paths outside it, through .. and symlinks", async () => {
    const r = await rig(fixtureAgent());
    const workspace = path.join(r.dataDir, "workspaces", "feishu-private", ALICE);
    const note = path.join(workspace, "sub", "note.txt");
    expect(cardText(await settled(r, await ask(r, `/write ${note} 你好`)))).toContain("写好了");
    expect(fs.readFileSync(note, "utf8")).toBe("你好");
    expect(cardText(await settled(r, await ask(r, `/read ${note}`)))).toContain("读到: 你好");

    const outside = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "fpb-outside-")), "secret.txt");
    fs.writeFileSync(outside, "top secret");
    fs.symlinkSync(path.dirname(outside), path.join(workspace, "escape"));
    for (const target of [
      outside,
      path.join(workspace, "..", "..", "..", "bot.sqlite"),
      path.join(workspace, "escape", "secret.txt"),
    ]) {
      const text = cardText(await settled(r, await ask(r, `/read ${target}`)));
      expect(text).toContain("被拒绝");
      expect(text).toContain("outside this chat");
      expect(text).not.toContain("top secret");
    }
    const wrote = cardText(
      await settled(r, await ask(r, `/write ${path.join(workspace, "escape", "new.txt")} x`)),
    );
    expect(wrote).toContain("outside this chat");
    expect(fs.existsSync(path.join(path.dirname(outside), "new.txt"))).toBe(false);
  });

  it("refuses terminals unless ACP_TERMINAL=on, and runs them in the workspace when on", async () => {
    const off = await rig(fixtureAgent());
    expect(cardText(await settled(off, await ask(off, "/terminal")))).toContain("ACP_TERMINAL=on");
    const on = await rig(fixtureAgent({ terminal: true }));
    expect(cardText(await settled(on, await ask(on, "/terminal")))).toContain("终端输出: hi");
  });

  it("resumes the chat's ACP session with session/load after the bot restarts", async () => {
    const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-acp-state-"));
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-acp-data-"));
    const first = await rig(fixtureAgent({ stateDir, dataDir }));
    expect(cardText(await settled(first, await ask(first, "/count")))).toContain("第 1 次提问");
    for (const close of closers.splice(0).reverse()) await close();
    const second = await rig(fixtureAgent({ stateDir, dataDir }));
    expect(cardText(await settled(second, await ask(second, "/count")))).toContain("第 2 次提问(会话已恢复)");
  });
});
