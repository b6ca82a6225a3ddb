import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Agent } from "../src/harness/agents/agent.ts";
import { FakeMessenger } from "../src/testing/fake-messenger.ts";
import { eachTransport, type FakeChannelRig, startFakeChannel } from "./helpers/fake-channel.ts";
import { cardText, formsOn, requestIdsOn } from "./helpers/feishu.ts";

/**
 * Answering by replying to the card (issue 30), on the fake messenger and fake time: a text reply quoting
 * the card settles its question through the registry, as a click would; every other reply is refused in a
 * reply of its own and settles nothing. Each scenario ends with exactly one settlement or a refusal.
 */

const ALICE = "ou_alice000000000000000000000000000";
const BOB = "ou_bob00000000000000000000000000000";
const GROUP = "oc_team";

const TARGET = {
  question: "Where should it go?",
  header: "Target",
  multiSelect: false,
  options: [
    { label: "staging", description: "The test cluster" },
    { label: "prod", description: "Production" },
  ],
};

/** Asks one question, then waits for `finish` before it ends: the run still runs after the answer. */
function oneQuestionAgent() {
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const agent: Agent = {
    name: "one-question",
    async run(ctx) {
      const result = await ctx.callTool("ask_user_questions", { questions: [TARGET] });
      // Until the test lets it end, or the rig stops the run.
      const stopped = new Promise<void>((resolve) =>
        ctx.signal.addEventListener("abort", () => resolve(), { once: true }),
      );
      await Promise.race([finished, stopped]);
      return { text: `result ${result}` };
    },
  };
  return { agent, finish: () => finish() };
}

const rigs: FakeChannelRig[] = [];
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
  vi.useRealTimers();
});
async function rig(options: Parameters<typeof startFakeChannel>[0] = {}): Promise<FakeChannelRig> {
  const started = await startFakeChannel({ askPing: false, ...options });
  rigs.push(started);
  return started;
}

/** A task from Alice (in a group when `group`), its card once the form is on it, and the ask's id. */
async function asked(r: FakeChannelRig, group = false, text = "部署") {
  const where = group
    ? ({ chatType: "group", chatId: GROUP, mentionBot: true } as const)
    : ({ chatType: "p2p" } as const);
  const userMessageId = r.send({ ...where, senderOpenId: ALICE, text });
  const cardId = await r.progressCard(userMessageId);
  const card = await r.until(() => {
    const c = r.cardOf(cardId);
    return formsOn(c).length > 0 && c;
  }, "a form on the card");
  return { cardId, card, requestId: requestIdsOn(card)[0] ?? "" };
}

/** The bot's text messages (not cards) that reply to `messageId`. */
function textsReplyingTo(r: FakeChannelRig, messageId: string): string[] {
  return r
    .fromBot()
    .filter((m) => m.msgType === "text" && m.parentId === messageId)
    .map((m) => String((JSON.parse(m.content) as { text?: unknown }).text));
}

/** How the ask ended, once it has: its answer and the surface, from the registry (the ask's row). */
async function settled(r: FakeChannelRig, requestId: string) {
  const outcome = await r.until(
    async () => (await r.core.registry.state(requestId))?.outcome,
    `ask ${requestId} to settle`,
  );
  return outcome?.kind === "answered"
    ? { surface: outcome.surface, userId: outcome.userId, answers: outcome.answers }
    : outcome;
}

eachTransport(() => {
  describe("answering a card's question by replying to the card", () => {
    it("takes an option's number, shows the hint before and who answered after, and answers a redelivery nothing", async () => {
      const { agent } = oneQuestionAgent();
      const r = await rig({ agent, tools: [] });
      const { cardId, card, requestId } = await asked(r);
      expect(cardText(card)).toContain("也可以直接回复本卡片作答");
      const reply = r.message({ chatType: "p2p", senderOpenId: ALICE, text: "2", parentId: cardId });
      await r.deliver(reply.data);
      await r.deliver(reply.data); // Feishu redelivers what it thinks was not acknowledged
      expect(await settled(r, requestId)).toEqual({
        surface: "reply",
        userId: ALICE,
        answers: [{ question: TARGET.question, selectedLabels: ["prod"], customInput: null }],
      });
      const after = await r.until(() => {
        const c = r.cardOf(cardId);
        return formsOn(c).length === 0 && c;
      }, "the card without its form");
      expect(cardText(after)).toContain("已回复卡片作答");
      expect(cardText(after)).not.toContain("也可以直接回复本卡片作答");
      await r.idle();
      expect(textsReplyingTo(r, reply.messageId)).toEqual([]);
      // The reply started no task of its own: the only card is the first one.
      expect(r.fromBot().filter((m) => m.msgType === "interactive")).toHaveLength(1);
    });

    it("takes an option's label in any case", async () => {
      const { agent } = oneQuestionAgent();
      const r = await rig({ agent, tools: [] });
      const { cardId, requestId } = await asked(r);
      r.send({ chatType: "p2p", senderOpenId: ALICE, text: "PROD", parentId: cardId });
      expect(await settled(r, requestId)).toMatchObject({
        answers: [{ selectedLabels: ["prod"], customInput: null }],
      });
    });

    it("puts free text into 其他", async () => {
      const { agent } = oneQuestionAgent();
      const r = await rig({ agent, tools: [] });
      const { cardId, requestId } = await asked(r);
      r.send({ chatType: "p2p", senderOpenId: ALICE, text: "先部署到香港节点", parentId: cardId });
      expect(await settled(r, requestId)).toMatchObject({
        answers: [{ selectedLabels: [], customInput: "先部署到香港节点" }],
      });
    });

    it("answers several questions with numbered parts, and refuses a reply that leaves one open", async () => {
      const r = await rig();
      const { cardId, requestId } = await asked(r);
      const short = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "2", parentId: cardId });
      await r.idle();
      // The card's own refusal for an empty answer, naming the question.
      expect(textsReplyingTo(r, short)).toEqual(["第 2 题「附加功能」：请至少选择一项或填写其他"]);
      expect(r.core.registry.get(requestId)).toBeDefined();
      r.send({ chatType: "p2p", senderOpenId: ALICE, text: "1：2 2:暗色模式、3", parentId: cardId });
      expect(await settled(r, requestId)).toMatchObject({
        surface: "reply",
        answers: [
          { selectedLabels: ["Kubernetes"], customInput: null },
          { selectedLabels: ["暗色模式", "导出 PDF"], customInput: null },
        ],
      });
      const final = await r.until(() => {
        const c = r.cardOf(cardId);
        return c.header?.template === "green" && c;
      }, "the completed card");
      expect(cardText(final)).toContain("Kubernetes");
    });

    it("refuses anyone but the sender, in a reply naming who may answer, and settles nothing", async () => {
      const fake = new FakeMessenger({ timeoutMs: 5000, userNames: { [ALICE]: "Alice" } });
      const { agent } = oneQuestionAgent();
      const r = await rig({ agent, tools: [], fake });
      const { cardId, requestId } = await asked(r, true);
      // No @-mention: a reply quoting a card that asks something is for the bot anyway.
      const bob = r.send({ chatType: "group", senderOpenId: BOB, text: "1", parentId: cardId });
      await r.idle();
      expect(textsReplyingTo(r, bob)).toEqual(["仅 @Alice 可以回答此问题"]);
      expect(r.core.registry.get(requestId)).toBeDefined();
      expect(formsOn(r.cardOf(cardId))).toHaveLength(1);
    });

    it("refuses the sender's reply from a thread opened under the card", async () => {
      const { agent } = oneQuestionAgent();
      const r = await rig({ agent, tools: [] });
      const { cardId, requestId } = await asked(r, true);
      const inThread = r.send({
        chatType: "group",
        senderOpenId: ALICE,
        text: "2",
        parentId: cardId,
        inThread: true,
      });
      await r.idle();
      expect(textsReplyingTo(r, inThread)).toEqual([
        "请在卡片所在的对话里直接回复卡片作答，这条回复没有作为回答",
      ]);
      expect(r.core.registry.get(requestId)).toBeDefined();
    });

    it("says a question answered on the card first is gone, while the run goes on", async () => {
      const { agent, finish } = oneQuestionAgent();
      const r = await rig({ agent, tools: [] });
      const { cardId, requestId } = await asked(r);
      const ask = r.core.registry.get(requestId);
      const clicked = await r.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value: {
          kind: "feishu_ask",
          act: "submit",
          sessionId: ask?.sessionId ?? "",
          requestId,
          sender: ALICE,
        },
        name: "ask0_submit",
        formValue: { ask0_q0: "0", ask0_c0: "" },
      });
      expect(clicked.toast?.content).toBe("已提交");
      const late = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "2", parentId: cardId });
      await r.idle();
      expect(textsReplyingTo(r, late)).toEqual(["问题已由 你 回答"]);
      expect(await settled(r, requestId)).toMatchObject({
        surface: "feishu",
        answers: [{ selectedLabels: ["staging"] }],
      });
      finish();
    });

    it("says a question that timed out is gone", async () => {
      const { agent, finish } = oneQuestionAgent();
      const r = await rig({ agent, tools: [], askTimeoutMs: 5_000 });
      const { cardId, requestId } = await asked(r);
      await r.until(() => r.core.registry.get(requestId) === undefined, "the ask to time out");
      const late = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "prod", parentId: cardId });
      await r.idle();
      expect(textsReplyingTo(r, late)).toEqual(["问题已失效：已超时"]);
      expect((await r.core.registry.state(requestId))?.outcome).toEqual({ kind: "timeout" });
      finish();
    });

    it("leaves alone a group member's reply to a running card that never asked (no 'not allowed' to a bystander)", async () => {
      const r = await rig({ allow: { users: [ALICE], chats: [] } });
      const first = r.send({
        chatType: "group",
        chatId: GROUP,
        senderOpenId: ALICE,
        text: "/long",
        mentionBot: true,
      });
      const cardId = await r.progressCard(first);
      const reply = r.send({
        chatType: "group",
        chatId: GROUP,
        senderOpenId: BOB,
        text: "看起来不错",
        parentId: cardId,
      });
      await r.idle();
      expect(textsReplyingTo(r, reply)).toEqual([]);
      expect(r.fromBot().filter((m) => m.msgType === "interactive")).toHaveLength(1);
    });

    it("treats a reply to a card without a question as an ordinary message", async () => {
      const r = await rig();
      const first = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/quick" });
      const cardId = await r.progressCard(first);
      await r.until(() => r.cardOf(cardId).header?.template === "green", "the completed card");
      const reply = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/quick 2", parentId: cardId });
      // A task of its own: a new card replying to the reply.
      const next = await r.progressCard(reply);
      expect(next).not.toBe(cardId);
      await r.idle();
      expect(textsReplyingTo(r, reply)).toEqual([]);
    });
  });
});
