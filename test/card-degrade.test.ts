import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { buildProgressCard } from "../src/cards/progress.ts";
import type { ProgressView } from "../src/cards/progress-view.ts";
import { CARD_LIMITS, cardSize, validateCard } from "../src/cards/rules.ts";
import type { Agent } from "../src/harness/agents/agent.ts";
import { sampleAsk } from "./fixtures.ts";
import { type FakeChannelRig, startFakeChannel } from "./helpers/fake-channel.ts";
import { cardText } from "./helpers/feishu.ts";

/**
 * A card the platform refuses (230099 / 230025) must not freeze: the bot re-renders it degraded (the model's
 * text as escaped plain text, a tighter budget) and keeps publishing later states that way, so the final
 * state lands. The fake messenger (on fake time) stands in for Feishu refusing a construct our sanitizer does
 * not know about: a Feishu emoji shortcode with an unknown key, which sanitized markdown keeps and plain
 * text escapes.
 */

const ALICE = "ou_alice000000000000000000000000000";
const MARKER = ":NOSUCHEMOJI:";
const REFUSED = { code: 230099, msg: "Failed to create card content, ext=ErrCode: 200621" };

/** Streams a text with the marker once `streamNow` resolves, and answers with it once `finishNow` does. */
function gatedAgent() {
  let stream!: () => void;
  let finish!: () => void;
  const streamNow = new Promise<void>((resolve) => {
    stream = resolve;
  });
  const finishNow = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const agent: Agent = {
    name: "gated",
    async run(ctx) {
      await streamNow;
      ctx.reportText(`正在处理 ${MARKER}`);
      await finishNow;
      return { text: `**完成** ${MARKER} 全部就绪` };
    },
  };
  return { agent, stream, finish };
}

const rigs: FakeChannelRig[] = [];
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
  vi.useRealTimers();
});

describe("buildProgressCard degraded", () => {
  const view: ProgressView = {
    sessionId: "s1",
    runId: "run1",
    senderId: "ou_a",
    title: "部署",
    status: "completed",
    steps: [{ title: "扫描", status: "done" }],
    text: `**完成** ![图](https://example.com/a.png) ${"很长的回答。".repeat(4000)}`,
    startedAt: 0,
    endedAt: 1000,
  };

  it("shows the model's text as plain text, within a tighter budget at each level", () => {
    const sizes = ([0, 1, 2] as const).map((level) => {
      const card = buildProgressCard(view, [], { degraded: level });
      expect(validateCard(card)).toMatchObject({ ok: true });
      return cardSize(card);
    });
    expect(sizes[0]).toBeLessThanOrEqual(CARD_LIMITS.targetBytes);
    expect(sizes[1]).toBeLessThanOrEqual(CARD_LIMITS.degradedBytes);
    expect(sizes[2]).toBeLessThanOrEqual(CARD_LIMITS.degradedBytes / 2);
    const plain = JSON.stringify(buildProgressCard(view, [], { degraded: 1 }));
    expect(plain).toContain("&#42;&#42;完成&#42;&#42; !&#91;图&#93;(https&#58;//example.com/a.png)");
    expect(plain).toContain("…（内容过长，完整内容请在会话详情中查看）");
  });

  it("keeps the forms, without previews", () => {
    const ask = { requestId: "req-1", questions: sampleAsk().questions };
    const running = { ...view, status: "running" as const, text: "处理中" };
    const full = JSON.stringify(buildProgressCard(running, [ask]));
    const degraded = JSON.stringify(buildProgressCard(running, [ask], { degraded: 1 }));
    expect(degraded).toContain('"name":"ask0_submit"');
    expect(full).toContain("collapsible_panel");
    expect(degraded).not.toContain("collapsible_panel");
  });
});

describe("a card the platform refuses", () => {
  it("is re-rendered degraded on 230099, and every later state, the final one included, lands degraded", async () => {
    const gated = gatedAgent();
    const r = await startFakeChannel({ agent: gated.agent, cardPatchIntervalMs: 200 });
    rigs.push(r);
    r.fake.fail({ method: "patchCard", bodyIncludes: MARKER, times: 50, response: REFUSED });
    const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "开始" });
    const cardId = await r.progressCard(userMessageId);

    gated.stream();
    const streamed = await r.until(() => {
      const card = r.cardOf(cardId);
      return cardText(card).includes("&#58;NOSUCHEMOJI:") && card;
    }, "the streamed text, degraded");
    expect(streamed.header?.template).toBe("blue");

    gated.finish();
    const final = await r.until(() => {
      const card = r.cardOf(cardId);
      return card.header?.template === "green" && card;
    }, "the completed card");
    const result = cardText(final);
    // What a person sees: the answer as plain text (asterisks shown, not bold), nothing lost.
    expect(result).toContain("&#42;&#42;完成&#42;&#42; &#58;NOSUCHEMOJI: 全部就绪");
    expect(result).not.toContain(MARKER);
    // One refusal, then plain renders only: the refused text was never sent again.
    const patches = r.fake.codesOf("patchCard");
    expect(patches.filter((code) => code === 230099)).toHaveLength(1);
    expect(patches.at(-1)).toBe(0);
  });

  it("sends the first reply again degraded when the platform refuses it", async () => {
    const gated = gatedAgent();
    const r = await startFakeChannel({ agent: gated.agent });
    rigs.push(r);
    r.fake.fail({
      method: "replyCard",
      bodyIncludes: "开始",
      response: { code: 230025, msg: "card content too long" },
    });
    const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "开始" });
    const cardId = await r.progressCard(userMessageId);
    expect(r.fake.codesOf("replyCard")).toEqual([230025, 0]);
    gated.stream();
    gated.finish();
    const final = await r.until(() => {
      const card = r.cardOf(cardId);
      return card.header?.template === "green" && card;
    }, "the completed card");
    // The card stays degraded: the answer is plain text.
    expect(cardText(final)).toContain("&#42;&#42;完成&#42;&#42;");
  });

  it("gives up on a state only after the plainest render is refused too, and still lands a later state", async () => {
    const gated = gatedAgent();
    const r = await startFakeChannel({ agent: gated.agent, cardPatchIntervalMs: 200 });
    rigs.push(r);
    const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "开始" });
    const cardId = await r.progressCard(userMessageId);
    // Every render of the running state is refused: full, degraded, plainest.
    r.fake.fail({ method: "patchCard", bodyIncludes: "正在处理", times: 50, response: REFUSED });
    gated.stream();
    await r.until(
      () => r.fake.codesOf("patchCard").filter((code) => code === 230099).length === 3,
      "three refusals",
    );
    gated.finish();
    const final = await r.until(() => {
      const card = r.cardOf(cardId);
      return card.header?.template === "green" && card;
    }, "the completed card");
    expect(cardText(final)).toContain("全部就绪");
  });
});
