import { afterEach, describe, expect, it } from "vitest";
import type { Agent } from "../src/harness/agents/agent.ts";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";
import type { RecordedCall } from "../src/local/emulator/types.ts";
import { createLogger } from "../src/logger.ts";
import { cardText, type FeishuRig, formsOn, requestIdsOn, startFeishuRig } from "./helpers/feishu.ts";

/**
 * FEISHU_CARD_TRANSPORT=cardkit (issue 29), end to end: the SDK over HTTP to the emulator, whose CardKit
 * refuses what Feishu refuses (sequences that do not grow, 10 ops/s, streaming closed after 600 s, 200810
 * during a callback). The answer types out through element updates; forms are never streamed into; a refused
 * CardKit degrades to IM PATCH and the run goes on.
 */

const ALICE = "ou_alice000000000000000000000000000";
const rigs: FeishuRig[] = [];
const emus: Emulator[] = [];
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
  for (const e of emus.splice(0)) await e.close();
});

async function rig(options: Parameters<typeof startFeishuRig>[0] = {}): Promise<FeishuRig> {
  const started = await startFeishuRig({ cardTransport: "cardkit", ...options });
  rigs.push(started);
  return started;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ANSWER = "部署完成：服务已上线，监控正常，回滚脚本已就绪。".repeat(2);

/** Types the answer out in `chunks` pieces, `gapMs` apart; `pause` is awaited halfway (a test's hook). */
function typist(chunks = 24, gapMs = 50, pause?: () => Promise<void>): Agent {
  return {
    name: "typist",
    async run(ctx) {
      for (let i = 1; i <= chunks; i += 1) {
        ctx.reportText(ANSWER.slice(0, Math.ceil((ANSWER.length * i) / chunks)));
        await sleep(gapMs);
        if (i === Math.floor(chunks / 2) && pause) await pause();
      }
      return { text: ANSWER };
    },
  };
}

/** Streams, asks one question, streams the rest once answered. */
const asker: Agent = {
  name: "asker",
  async run(ctx) {
    for (let i = 1; i <= 12; i += 1) {
      ctx.reportText(`正在分析${"…".repeat(i)}`);
      await sleep(60);
    }
    const answer = await ctx.callTool("ask_user_questions", {
      questions: [
        {
          question: "部署到哪个环境？",
          header: "环境",
          multiSelect: false,
          options: [
            { label: "测试", description: "先在测试环境" },
            { label: "生产", description: "直接上线" },
          ],
        },
      ],
    });
    for (let i = 1; i <= 4; i += 1) {
      ctx.reportText(`已选择，正在部署${"…".repeat(i)}`);
      await sleep(60);
    }
    return { text: `完成：${answer.includes("生产") ? "生产" : "测试"}环境已部署` };
  },
};

const cardkitCalls = (emu: Emulator): RecordedCall[] =>
  emu.calls.filter((c) => c.path.startsWith("/open-apis/cardkit/v1/cards"));
const imPatches = (emu: Emulator, messageId: string): RecordedCall[] =>
  emu.calls.filter((c) => c.method === "PATCH" && c.path === `/open-apis/im/v1/messages/${messageId}`);
const isContent = (c: RecordedCall) => c.path.includes("/elements/");
const isFull = (c: RecordedCall) => c.method === "PUT" && /\/cards\/[^/]+$/.test(c.path);
const isSettings = (c: RecordedCall) => c.path.endsWith("/settings");
const isCompleted = (card: { header?: { template: string } }) => card.header?.template === "green";

async function finalCard(r: FeishuRig, messageId: string) {
  return r.until(() => {
    const card = r.cardOf(messageId);
    return isCompleted(card) && card;
  }, "the completed card");
}

describe("FEISHU_CARD_TRANSPORT=cardkit", () => {
  it("streams the answer through element updates with growing sequences and lands the final state on the entity", async () => {
    const r = await rig({ agent: typist() });
    const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "部署" });
    const messageId = await r.progressCard(userMessageId);
    const final = await finalCard(r, messageId);
    await r.channel.idle();
    expect(cardText(final)).toContain("回滚脚本已就绪");
    const calls = cardkitCalls(r.emulator);
    expect(calls[0]?.method).toBe("POST"); // created, then sent by card_id
    // About 5 content updates a second while the text grows (1.2 s of typing).
    expect(calls.filter(isContent).length).toBeGreaterThanOrEqual(4);
    // Every operation answered 0: no sequence ever failed to grow (300317), no rate limit, no fallback.
    expect(calls.map((c) => c.code).filter((code) => code !== 0)).toEqual([]);
    expect(imPatches(r.emulator, messageId)).toEqual([]);
    // The final state is a full update that leaves streaming mode.
    expect(isFull(calls.at(-1)!)).toBe(true);
    expect((final as { config?: { streaming_mode?: boolean } }).config?.streaming_mode).toBe(false);
    // Never over 10 operations in any second.
    const times = calls.map((c) => c.at);
    for (const t of times) expect(times.filter((u) => u >= t && u < t + 1000).length).toBeLessThanOrEqual(10);
  });

  it("leaves streaming before a form, sends nothing while it is open, and completes once answered", async () => {
    const r = await rig({ agent: asker });
    const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "部署" });
    const messageId = await r.progressCard(userMessageId);
    const card = await r.until(() => {
      const c = r.cardOf(messageId);
      return formsOn(c).length > 0 && c;
    }, "a form on the card");
    await r.channel.idle();
    const before = cardkitCalls(r.emulator);
    // The form came by a full update, right after streaming was switched off by settings.
    const formAt = before.length - 1;
    expect(isFull(before[formAt]!)).toBe(true);
    expect(isSettings(before[formAt - 1]!)).toBe(true);
    expect(before.slice(0, formAt - 1).some(isContent)).toBe(true);
    expect((card as { config?: { streaming_mode?: boolean } }).config?.streaming_mode).toBe(false);
    await sleep(800);
    expect(cardkitCalls(r.emulator)).toHaveLength(before.length); // 0 updates while the form is open
    const requestId = requestIdsOn(card)[0]!;
    const ask = r.core.registry.get(requestId);
    const response = await r.click({
      messageId,
      operatorOpenId: ALICE,
      value: { kind: "feishu_ask", act: "submit", sessionId: ask?.sessionId ?? "", requestId, sender: ALICE },
      name: "ask0_submit",
      formValue: { ask0_q0: "1", ask0_c0: "" },
    });
    expect(response.toast).toEqual({ type: "success", content: "已提交" });
    const final = await finalCard(r, messageId);
    await r.channel.idle();
    expect(cardText(final)).toContain("生产环境已部署");
    const after = cardkitCalls(r.emulator).slice(before.length);
    expect(after.map((c) => c.code).filter((code) => code !== 0)).toEqual([]);
    expect(isFull(after.at(-1)!)).toBe(true);
  });

  it("holds its updates while a click on a streaming card is answered, then lands the state of now", async () => {
    const r = await rig({ agent: typist(40, 60) });
    const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "部署" });
    const messageId = await r.progressCard(userMessageId);
    await r.until(() => cardkitCalls(r.emulator).filter(isContent).length >= 2, "the answer streaming");
    const runId = r.core.runner.activeRun(`feishu-${r.emulator.appId}-private-${ALICE}`)?.id ?? "";
    const response = await r.click({
      messageId,
      operatorOpenId: ALICE,
      value: { kind: "progress", act: "cancel", sessionId: "", runId, sender: ALICE },
    });
    expect(response.toast?.type).not.toBe("error");
    const ended = await r.until(() => {
      const card = r.cardOf(messageId);
      const streaming = (card as { config?: { streaming_mode?: boolean } }).config?.streaming_mode;
      return card.header?.template !== "blue" && streaming === false && card;
    }, "the cancelled card, out of streaming");
    await r.channel.idle();
    expect(cardText(ended)).not.toContain("取消任务"); // no live button left for anyone
    // Nothing was sent while the callback was answered: no 200810, no fallback to PATCH.
    expect(cardkitCalls(r.emulator).filter((c) => c.code !== 0)).toEqual([]);
    expect(imPatches(r.emulator, messageId)).toEqual([]);
  });

  it("sends the card the IM way when CardKit refuses to create it, with one warning line", async () => {
    const lines: string[] = [];
    const logger = createLogger({
      level: "warn",
      destination: { write: (line: string) => lines.push(line) },
    });
    const emulator = await startEmulator();
    emus.push(emulator);
    // The app was not granted cardkit:card:write: every CardKit call gets 99991672.
    emulator.setGrantedScopes(["im:message", "im:message:send_as_bot"]);
    const r = await rig({ agent: typist(6, 40), emulator, logger });
    for (const text of ["部署", "再部署一次"]) {
      const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text });
      const messageId = await r.progressCard(userMessageId);
      const final = await finalCard(r, messageId);
      await r.channel.idle();
      expect(cardText(final)).toContain("回滚脚本已就绪");
      expect(imPatches(emulator, messageId).length).toBeGreaterThan(0);
    }
    // Tried once: without the scope no later card asks CardKit again.
    expect(cardkitCalls(emulator).map((c) => [c.method, c.code])).toEqual([["POST", 99991672]]);
    const warnings = lines.filter((line) => line.includes("CardKit"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).not.toContain("    at "); // a line, not a stack
  });

  it("degrades to IM PATCH within one update when CardKit refuses an update, and the run completes", async () => {
    const r = await rig({ agent: typist(10, 60) });
    const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "部署" });
    const messageId = await r.progressCard(userMessageId);
    await r.until(() => cardkitCalls(r.emulator).some(isContent), "a streamed update");
    r.emulator.injectFault({
      match: { path: /^\/open-apis\/cardkit\/v1\/cards\// },
      times: 1,
      response: { httpStatus: 400, code: 99991672, msg: "Access denied" },
    });
    const final = await finalCard(r, messageId);
    await r.channel.idle();
    const calls = cardkitCalls(r.emulator);
    const refused = calls.findIndex((c) => c.code === 99991672);
    expect(refused).toBeGreaterThan(0);
    expect(calls.slice(refused + 1)).toEqual([]); // CardKit is not tried again
    const patches = imPatches(r.emulator, messageId);
    expect(patches.length).toBeGreaterThan(0);
    expect(patches[0]!.at).toBeGreaterThanOrEqual(calls[refused]!.at);
    expect(cardText(final)).toContain("回滚脚本已就绪");
  });

  it("waits out a callback in progress (200810) and sends the latest state again, without falling back", async () => {
    const r = await rig({ agent: typist(20, 60) });
    const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "部署" });
    const messageId = await r.progressCard(userMessageId);
    await r.until(() => cardkitCalls(r.emulator).some(isContent), "a streamed update");
    // Another instance's click (or one the bot has not seen yet) is being answered: the platform refuses.
    r.emulator.injectFault({
      match: { path: /^\/open-apis\/cardkit\/v1\/cards\// },
      times: 1,
      response: { httpStatus: 200, code: 200810, msg: "card is in callback interaction" },
    });
    const final = await finalCard(r, messageId);
    await r.channel.idle();
    const calls = cardkitCalls(r.emulator);
    const held = calls.findIndex((c) => c.code === 200810);
    expect(held).toBeGreaterThan(0);
    // Retried once, about a second later (never at once, never in a loop), and on the entity.
    expect(calls[held + 1]!.at - calls[held]!.at).toBeGreaterThanOrEqual(900);
    expect(calls.slice(held + 1).every((c) => c.code === 0)).toBe(true);
    expect(imPatches(r.emulator, messageId)).toEqual([]);
    expect(cardText(final)).toContain("回滚脚本已就绪");
  });

  it("after streaming closed at 600 s, sends exactly one full update and streams on", async () => {
    let emulator!: Emulator;
    const pause = async () => {
      // Ten minutes pass on the platform mid-answer: its streaming mode closes itself.
      emulator.clock.advance(600_000);
    };
    const r = await rig({ agent: typist(12, 80, pause) });
    emulator = r.emulator;
    const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "部署" });
    const messageId = await r.progressCard(userMessageId);
    await finalCard(r, messageId);
    await r.channel.idle();
    const calls = cardkitCalls(emulator);
    const closed = calls.filter((c) => c.code === 200850 || c.code === 300309);
    expect(closed).toHaveLength(1);
    const at = calls.indexOf(closed[0]!);
    expect(isFull(calls[at + 1]!)).toBe(true);
    expect(calls[at + 1]!.code).toBe(0);
    expect(calls.filter((c) => c.code !== 0)).toHaveLength(1);
    expect(calls.slice(at + 2).some(isContent)).toBe(true); // streaming is open again
    expect(imPatches(emulator, messageId)).toEqual([]);
  });
});
