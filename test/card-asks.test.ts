import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ASK_TOOL_NAME, type AskInput } from "../src/asks/schema.ts";
import type { Card, CardNode } from "../src/cards/model.ts";
import { buildProgressCard, type CardAsk } from "../src/cards/progress.ts";
import type { ProgressView } from "../src/cards/progress-view.ts";
import { cardSize, countComponents, validateCard } from "../src/cards/rules.ts";
import type { Agent } from "../src/harness/agents/agent.ts";
import { eachTransport, type FakeChannelRig, startFakeChannel } from "./helpers/fake-channel.ts";
import { cardText, formsOn, requestIdsOn } from "./helpers/feishu.ts";

/**
 * Asks on the progress card, through the channel on the fake messenger and fake time (the fake refuses what
 * the emulator refuses, test/messenger-contract.test.ts): many parallel asks stay within
 * 200 components, and a submit that leaves a question unanswered answers with the form as it was filled in
 * and a toast naming the question.
 */

const ALICE = "ou_alice000000000000000000000000000";
const rigs: FakeChannelRig[] = [];
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
  vi.useRealTimers();
});

/** Four questions of four options: six such asks rendered in full make ~240 components (the limit is 200). */
const BIG_ASK: AskInput = {
  questions: ["环境", "区域", "规格", "时间"].map((header, j) => ({
    question: `第 ${j + 1} 个设置选哪个?`,
    header,
    multiSelect: j % 2 === 1,
    options: ["甲", "乙", "丙", "丁"].map((label) => ({
      label: `${header}${label}`,
      description: `${label}方案`,
    })),
  })),
};

/** An agent that asks `count` big asks at once, in one turn. */
function parallelAsker(count: number): Agent {
  return {
    name: "parallel-asker",
    async run(ctx) {
      await ctx.callTools(
        Array.from({ length: count }, (_, i) => ({
          name: ASK_TOOL_NAME,
          args: BIG_ASK,
          title: `提问 ${i + 1}`,
        })),
      );
      return { text: "**完成**" };
    },
  };
}

const VIEW: ProgressView = {
  sessionId: "feishu-cli_x-private-ou_a",
  runId: "run1",
  senderId: "ou_a",
  title: "并行提问",
  status: "running",
  steps: [],
  startedAt: 0,
  detailsUrl: "https://bot.example.com/sessions/s1",
};

const submitValue = (r: FakeChannelRig, requestId: string) => ({
  kind: "feishu_ask",
  act: "submit",
  sessionId: r.core.registry.get(requestId)?.sessionId ?? "",
  requestId,
  sender: ALICE,
});

/** The fields of one form, by name. */
function fieldsOf(card: Card, form: string): Map<string, CardNode> {
  const node = card.body.elements.find((n) => n.tag === "form" && n.name === form);
  const fields = new Map<string, CardNode>();
  if (node?.tag !== "form") return fields;
  for (const child of node.elements) if ("name" in child && child.name) fields.set(child.name, child);
  return fields;
}

eachTransport(() => {
  describe("many parallel asks on one card", () => {
    it("never builds a card over 200 components, however many asks wait", () => {
      const asks = (n: number): CardAsk[] =>
        Array.from({ length: n }, (_, i) => ({ requestId: `req-${i}`, questions: BIG_ASK.questions }));
      // Without the component budget six of these make a card Feishu can no longer update.
      const unbounded = buildProgressCard(VIEW, asks(6), { limits: { maxBytes: 1e6, maxComponents: 1e6 } });
      expect(countComponents(unbounded)).toBeGreaterThan(200);
      for (const n of [1, 2, 4, 5, 6, 10, 20]) {
        const card = buildProgressCard(VIEW, asks(n));
        expect(validateCard(card), `${n} asks`).toMatchObject({ ok: true });
        expect(countComponents(card)).toBeLessThanOrEqual(200);
        // Asks shown in full (stacked in one form from two on), the rest named in the compact block.
        const forms = requestIdsOn(card).length;
        expect(forms).toBeGreaterThanOrEqual(Math.min(n, 4));
        if (forms < n) expect(cardText(card)).toContain(`还有 ${(n - forms) * 4} 个问题`);
      }
    });

    it("gives a form up to the compact block only when even the plainest texts do not fit the size budget", () => {
      const asks = Array.from({ length: 3 }, (_, i) => ({
        requestId: `req-${i}`,
        questions: BIG_ASK.questions,
      }));
      const shown = [20_000, 10_000, 6_000].map((maxBytes) => {
        const card = buildProgressCard(VIEW, asks, { limits: { maxBytes, maxComponents: 200 } });
        expect(cardSize(card)).toBeLessThanOrEqual(maxBytes);
        return requestIdsOn(card).length;
      });
      expect(shown).toEqual([3, 2, 1]);
    });

    it("says the waiting asks come next when there is no session page to link to", () => {
      const { detailsUrl: _none, ...noLink } = VIEW;
      const asks = Array.from({ length: 6 }, (_, i) => ({
        requestId: `req-${i}`,
        questions: BIG_ASK.questions,
      }));
      const text = cardText(buildProgressCard(noLink, asks));
      expect(text).toContain("请先回答上面的问题，这些问题会依次出现在卡片上。");
      expect(text).not.toContain("/sessions/");
    });

    it("keeps six asks within 200 components: the rest are named in a 还有 N 个问题 block with the session link", async () => {
      const r = await startFakeChannel({ agent: parallelAsker(6) });
      rigs.push(r);
      const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "六个问题" });
      const cardId = await r.progressCard(userMessageId);
      const card = await r.until(() => {
        const c = r.cardOf(cardId);
        return cardText(c).includes("还有") && c;
      }, "the card with its forms and the compact block");
      // The fake stored it after the emulator's content checks: Feishu would have accepted it as an update.
      expect(validateCard(card)).toMatchObject({ ok: true });
      expect(countComponents(card)).toBeLessThanOrEqual(200);
      // The asks shown in full share one form (ask-form.ts askForms); the rest wait in the compact block.
      const forms = requestIdsOn(card);
      expect(formsOn(card)).toEqual(["asks"]);
      expect(forms.length).toBeGreaterThanOrEqual(2);
      expect(forms.length).toBeLessThan(6);
      const waiting = (6 - forms.length) * 4;
      const text = cardText(card);
      expect(text).toContain(`还有 ${waiting} 个问题`);
      expect(text).toContain("「环境」「区域」「规格」「时间」");
      expect(text).toContain("(http://localhost:3000/sessions/");
      expect(card.config.summary?.content).toBe("等待你回答 24 个问题");

      // Answering the first ask brings the next one onto the card as a form. Clicked once the bot has the
      // card's reply back (a click before that is not held: a PATCH during it is reverted, as on Feishu).
      await r.idle();
      const [first] = requestIdsOn(card);
      await r.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value: submitValue(r, first ?? ""),
        name: "ask0_submit",
        formValue: { ask0_q0: "0", ask0_q1: ["1"], ask0_q2: "2", ask0_q3: ["3"] },
      });
      const after = await r.until(() => {
        const c = r.cardOf(cardId);
        return cardText(c).includes(`还有 ${waiting - 4} 个问题`) && c;
      }, "one ask fewer in the compact block");
      expect(requestIdsOn(after)).toHaveLength(forms.length);
      expect(countComponents(after)).toBeLessThanOrEqual(200);
    });
  });

  describe("a submit that leaves a question unanswered", () => {
    it("answers with the form pre-filled as submitted and a toast naming the question", async () => {
      const r = await startFakeChannel({ askPing: false });
      rigs.push(r);
      const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "帮我部署" });
      const cardId = await r.progressCard(userMessageId);
      const card = await r.until(() => {
        const c = r.cardOf(cardId);
        return formsOn(c).length > 0 && c;
      }, "a form");
      const [requestId] = requestIdsOn(card);
      const response = await r.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value: submitValue(r, requestId ?? ""),
        name: "ask0_submit",
        formValue: { ask0_q0: "1", ask0_c0: "先灰度 <at id=all></at>", ask0_q1: [], ask0_c1: "" },
      });
      expect(response.toast).toEqual({
        type: "warning",
        content: "第 2 题「附加功能」：请至少选择一项或填写其他",
      });
      const answered = response.card?.data;
      expect(answered && validateCard(answered)).toMatchObject({ ok: true });
      const fields = fieldsOf(answered ?? card, "ask0");
      // What the person sees: Kubernetes still chosen (option 2), their 其他 text still typed.
      expect(fields.get("ask0_q0")).toMatchObject({ tag: "select_static", initial_index: 2 });
      expect(fields.get("ask0_c0")).toMatchObject({ tag: "input", default_value: "先灰度 <at id=all></at>" });
      expect(fields.get("ask0_q1")).toMatchObject({ tag: "multi_select_static", selected_values: [] });
      expect(fields.get("ask0_c1")).not.toHaveProperty("default_value");

      // The other way round: the multi-select kept, the single-select missing.
      const second = await r.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value: submitValue(r, requestId ?? ""),
        name: "ask0_submit",
        formValue: { ask0_q0: "", ask0_q1: ["0", "2"], ask0_c1: "RTL" },
      });
      expect(second.toast?.content).toBe("第 1 题「部署方式」：请至少选择一项或填写其他");
      const again = fieldsOf(second.card?.data ?? card, "ask0");
      expect(again.get("ask0_q0")).not.toHaveProperty("initial_index");
      expect(again.get("ask0_q1")).toMatchObject({ selected_values: ["0", "2"] });
      expect(again.get("ask0_c1")).toMatchObject({ default_value: "RTL" });
      expect(r.core.registry.get(requestId ?? "")).toBeDefined();
    });

    it("stacks /parallel's questions in one form with one submit: what was typed for an unfinished ask comes back", async () => {
      const r = await startFakeChannel({ askPing: false });
      rigs.push(r);
      const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/parallel" });
      const cardId = await r.progressCard(userMessageId);
      const card = await r.until(() => {
        const c = r.cardOf(cardId);
        return requestIdsOn(c).length === 2 && c;
      }, "two asks");
      // One form, one submit: a submit sends only its own form's fields (feishu-platform §6.5), so with a form
      // per ask, whatever was typed into the other form was lost when the answer's card re-rendered it.
      expect(formsOn(card)).toEqual(["asks"]);
      const submits = JSON.stringify(card).match(/"form_action_type":"submit"/g) ?? [];
      expect(submits).toHaveLength(1);
      expect(cardText(card)).toContain("全部提交");
      const [first, second] = requestIdsOn(card);
      const stackValue = (c: Card) => {
        const match = /"stack":"([^"]+)"/.exec(JSON.stringify(c));
        return { ...submitValue(r, first ?? ""), stack: match?.[1] ?? "" };
      };
      // The person picks a deployment and starts typing under 附加功能's 其他, without finishing it (blank).
      const partly = await r.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value: stackValue(card),
        name: "asks_submit",
        formValue: { ask0_q0: "0", ask0_c0: "", ask1_q0: [], ask1_c0: " " },
      });
      // The complete ask is answered; the other is named (by its number on the card, 2.【附加功能】) and comes
      // back as it was typed.
      expect(partly.toast).toEqual({
        type: "warning",
        content: "第 2 题「附加功能」：请至少选择一项或填写其他",
      });
      expect((await r.core.registry.state(first ?? ""))?.status).toBe("answered");
      const left = partly.card?.data ?? card;
      expect(requestIdsOn(left)).toEqual([second]);
      expect(fieldsOf(left, "ask0").get("ask0_c0")).toMatchObject({ default_value: " " });

      const rest = await r.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value: submitValue(r, second ?? ""),
        name: "ask0_submit",
        formValue: { ask0_q0: ["1"], ask0_c0: "RTL" },
      });
      expect(rest.toast?.content).toBe("已提交");
      expect((await r.core.registry.state(second ?? ""))?.status).toBe("answered");
    });

    it("answers every stacked ask in one submit, and says where 其他 text replaced a single choice", async () => {
      const r = await startFakeChannel({ askPing: false });
      rigs.push(r);
      const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/parallel" });
      const cardId = await r.progressCard(userMessageId);
      const card = await r.until(() => {
        const c = r.cardOf(cardId);
        return requestIdsOn(c).length === 2 && c;
      }, "two asks");
      const [first, second] = requestIdsOn(card);
      const stack = /"stack":"([^"]+)"/.exec(JSON.stringify(card))?.[1] ?? "";
      // Only the sender's submit counts, for every ask in the stack.
      const bob = await r.click({
        messageId: cardId,
        operatorOpenId: "ou_bob00000000000000000000000000000",
        value: { ...submitValue(r, first ?? ""), stack },
        name: "asks_submit",
        formValue: { ask0_q0: "1", ask1_q0: ["1"] },
      });
      expect(bob.toast?.type).toBe("error");
      expect(r.core.registry.get(first ?? "")).toBeDefined();
      const both = await r.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value: { ...submitValue(r, first ?? ""), stack },
        name: "asks_submit",
        formValue: { ask0_q0: "0", ask0_c0: "先灰度", ask1_q0: ["0"] },
      });
      expect(both.toast).toEqual({
        type: "success",
        content: "已提交：第 1 题按「其他」中填写的内容作答，所选项未采用",
      });
      const states = await Promise.all([first, second].map((id) => r.core.registry.state(id ?? "")));
      expect(states.map((state) => state?.status)).toEqual(["answered", "answered"]);
    });
  });
});
