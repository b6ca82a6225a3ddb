import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { sessionIdOf } from "../src/domain/session-id.ts";
import { submitValue } from "./helpers/agents.ts";
import { cardCalls, fullUpdates, visible } from "./helpers/card-calls.ts";
import { eachTransport, type FakeChannelRig, startFakeChannel } from "./helpers/fake-channel.ts";
import { cardText, formsOn, requestIdsOn } from "./helpers/feishu.ts";

/**
 * A callback's card reaches the clicker alone (feishu-platform Addendum, later, §1: field reports and the
 * vendor's plugin, against the docs' word on shared cards); the fake, like the emulator, shows every other
 * member the card as it was until a PATCH. So after a click the bot PATCHes the state once, even when it is
 * the very card the answer carried: otherwise the rest of the group keeps live buttons and forms for ever.
 */

const ALICE = "ou_alice000000000000000000000000000";
const BOB = "ou_bob00000000000000000000000000000";
const SETTLE_MS = 1000;

const rigs: FakeChannelRig[] = [];
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
  vi.useRealTimers();
});

async function groupCard(text: string, forms: number) {
  const r = await startFakeChannel({ settleMs: SETTLE_MS });
  rigs.push(r);
  const userMessageId = r.send({
    chatType: "group",
    chatId: "oc_team",
    senderOpenId: ALICE,
    text,
    mentionBot: true,
  });
  const cardId = await r.progressCard(userMessageId);
  const card = await r.until(() => {
    const c = r.cardOf(cardId);
    return formsOn(c).length === forms && c;
  }, `${forms} forms on the card`);
  await r.idle();
  return {
    r,
    cardId,
    card,
    sessionId: sessionIdOf({ kind: "feishu-group", appId: r.fake.appId, chatId: "oc_team" }),
  };
}

/** The card's updates (IM PATCHes, or its CardKit entity's operations). */
const patchesOf = (r: FakeChannelRig, cardId: string) => cardCalls(r, cardId).length;

eachTransport(() => {
  describe("a click on a group's card", () => {
    it("取消任务: the others see the cancelled card once the bot PATCHes it after the settle delay", async () => {
      const { r, cardId, sessionId } = await groupCard("部署", 1);
      const run = r.core.runner.activeRun(sessionId)!;
      const before = patchesOf(r, cardId);
      const cancel = { kind: "progress", act: "cancel", sessionId, runId: run.id, sender: ALICE };
      const answer = await r.click({ messageId: cardId, operatorOpenId: ALICE, value: cancel });
      expect(answer.toast?.content).toBe("已取消任务");
      // The clicker sees the answer's card; Bob still sees the form and its buttons, as on Feishu.
      expect(visible(r.cardOf(cardId, ALICE))).toEqual(visible(answer.card?.data));
      expect(formsOn(r.cardOf(cardId, BOB))).toEqual(["ask0"]);
      await vi.advanceTimersByTimeAsync(SETTLE_MS - 100);
      expect(patchesOf(r, cardId)).toBe(before); // nothing while the answer settles (it would be reverted)
      await r.idle();
      expect(patchesOf(r, cardId)).toBe(before + 1);
      const shared = r.cardOf(cardId, BOB);
      expect(formsOn(shared)).toEqual([]);
      expect(cardText(shared)).toContain("已取消");
      expect(visible(r.cardOf(cardId, ALICE))).toEqual(visible(shared));
    });

    it("取消任务 on a running task: the answer's card is the final one, and it is PATCHed for the others all the same", async () => {
      const r = await startFakeChannel({ settleMs: SETTLE_MS, stepMs: 40 });
      rigs.push(r);
      const sessionId = sessionIdOf({ kind: "feishu-group", appId: r.fake.appId, chatId: "oc_team" });
      const userMessageId = r.send({
        chatType: "group",
        chatId: "oc_team",
        senderOpenId: ALICE,
        text: "/long",
        mentionBot: true,
      });
      const cardId = await r.progressCard(userMessageId);
      await r.until(() => cardText(r.cardOf(cardId)).includes("取消任务"), "the running card");
      const run = r.core.runner.activeRun(sessionId)!;
      const cancel = { kind: "progress", act: "cancel", sessionId, runId: run.id, sender: ALICE };
      const answer = await r.click({ messageId: cardId, operatorOpenId: ALICE, value: cancel });
      expect(cardText(answer.card!.data)).toContain("已取消");
      expect(cardText(r.cardOf(cardId, BOB))).toContain("取消任务"); // Bob: still the live button
      await r.idle();
      expect(visible(r.cardOf(cardId, BOB))).toEqual(visible(answer.card?.data));
      expect(visible(fullUpdates(r, cardId).at(-1)?.card)).toEqual(visible(answer.card?.data));
    });

    it("a submit of one of two stacked asks: the others see it leave once the bot PATCHes", async () => {
      // /parallel's two asks share one form with one submit (ask-form.ts askForms); wait until both are on it.
      const { r, cardId } = await groupCard("/parallel", 1);
      const card = await r.until(() => {
        const c = r.cardOf(cardId);
        return requestIdsOn(c).length === 2 && c;
      }, "both asks on the card");
      await r.idle();
      expect(formsOn(card)).toEqual(["asks"]);
      const [first, second] = requestIdsOn(card);
      const before = patchesOf(r, cardId);
      // The card's own 全部提交 (its value lists both asks), with only the first ask filled in.
      const answer = await r.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value: submitValue(card, "asks"),
        name: "asks_submit",
        formValue: { ask0_q0: "0", ask0_c0: "", ask1_q0: [], ask1_c0: "" },
      });
      expect(answer.toast?.type).toBe("warning"); // the second ask is still open, and named
      expect((await r.core.registry.state(first!))?.status).toBe("answered");
      // The clicker sees the answer's card, the first ask gone; Bob still sees both live until the PATCH.
      expect(requestIdsOn(answer.card!.data)).toEqual([second]);
      expect(visible(r.cardOf(cardId, ALICE))).toEqual(visible(answer.card?.data));
      expect(requestIdsOn(r.cardOf(cardId, BOB))).toEqual([first, second]);
      await vi.advanceTimersByTimeAsync(SETTLE_MS - 100);
      expect(patchesOf(r, cardId)).toBe(before); // nothing while the answer settles (it would be reverted)
      await r.idle();
      expect(patchesOf(r, cardId)).toBe(before + 1);
      expect(requestIdsOn(r.cardOf(cardId, BOB))).toEqual([second]);
      expect(visible(r.cardOf(cardId, ALICE))).toEqual(visible(r.cardOf(cardId, BOB)));
    });

    it("a toast-only answer (only the sender may answer) sends no PATCH", async () => {
      const { r, cardId, card } = await groupCard("部署", 1);
      const requestId = requestIdsOn(card)[0]!;
      const ask = r.core.registry.get(requestId)!;
      const before = patchesOf(r, cardId);
      const refused = await r.click({
        messageId: cardId,
        operatorOpenId: BOB,
        value: { kind: "feishu_ask", act: "submit", sessionId: ask.sessionId, requestId, sender: ALICE },
        name: "ask0_submit",
        formValue: { ask0_q0: "0", ask0_q1: ["0"] },
      });
      expect(refused).toEqual({ toast: { type: "error", content: "仅任务发起人可以回答此问题" } });
      await r.idle();
      expect(patchesOf(r, cardId)).toBe(before);
    });
  });
});
