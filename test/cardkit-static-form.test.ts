import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { feishuPrivateSessionId } from "../src/domain/session-id.ts";
import { strings } from "../src/strings/index.ts";
import { entityCalls } from "./helpers/card-calls.ts";
import { type FakeChannelRig, startFakeChannel } from "./helpers/fake-channel.ts";
import { cardText, formsOn, requestIdsOn } from "./helpers/feishu.ts";

/**
 * A question raised after a CardKit card went static (issue 29; cardkit/fallback.ts): CardKit refused the card
 * and so did IM PATCH of its message, so nothing more can be shown on it. A form must still reach the person:
 * the card moves to a new IM card carrying it, where the progress card is, and the run goes on there. If even
 * that card is refused, the question ends with the reason the agent gets instead of waiting out its timeout.
 * On the fake messenger's CardKit and fake time (the demo agent: a step, then two questions on one form).
 */

const ALICE = "ou_alice000000000000000000000000000";
const NO_PERMISSION = { code: 99991672, msg: "Access denied" };

const rigs: FakeChannelRig[] = [];
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
  vi.useRealTimers();
});

/** A CardKit rig whose card will go static: every update of its entity and every PATCH of its message refused. */
async function staticCard(options: { refuseMove?: boolean } = {}) {
  const r = await startFakeChannel({ cardTransport: "cardkit", askPing: false });
  rigs.push(r);
  r.cardkit!.fail({
    op: ["update", "settings", "content"],
    times: Number.POSITIVE_INFINITY,
    ...NO_PERMISSION,
  });
  // The first IM PATCH is the fallback's, of the entity's message: refused, the card is static.
  r.fake.fail({ method: "patchCard", times: 1, response: NO_PERMISSION });
  if (options.refuseMove) r.fake.fail({ method: "replyCard", times: 1, response: NO_PERMISSION });
  const userMessageId = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "帮我部署" });
  const staticId = await r.progressCard(userMessageId);
  const cards = () =>
    r.fake
      .messages()
      .filter((m) => m.parentId === userMessageId && m.msgType === "interactive" && m.senderType === "app");
  return { r, userMessageId, staticId, cards };
}

const askResults = async (r: FakeChannelRig) =>
  (await r.core.store.history(feishuPrivateSessionId(r.fake.appId, ALICE)))
    .filter((m) => m.role === "tool" && m.toolName === "ask_user_questions")
    .map((m) => m.content);

describe("a form on a CardKit card that went static", () => {
  it("moves the card to a new IM card carrying the form; the answer given there completes the run on it", async () => {
    const { r, staticId, cards } = await staticCard();
    const moved = await r.until(() => cards().find((m) => m.messageId !== staticId), "a new card");
    const card = await r.until(() => {
      const c = r.cardOf(moved.messageId);
      return formsOn(c).length > 0 && c;
    }, "the form on the new card");
    expect(cardText(card)).toContain("等待你回答 2 个问题");
    // The static card was left as CardKit and IM PATCH refused it: nothing shows a form there.
    expect(formsOn(r.cardOf(staticId))).toEqual([]);
    expect(r.cardkit!.entityOf(moved.messageId)).toBeUndefined(); // an IM card, not another entity
    const requestId = requestIdsOn(card)[0]!;
    const ask = r.core.registry.get(requestId)!;
    const answered = await r.click({
      messageId: moved.messageId,
      operatorOpenId: ALICE,
      value: { kind: "feishu_ask", act: "submit", sessionId: ask.sessionId, requestId, sender: ALICE },
      name: "ask0_submit",
      formValue: { ask0_q0: "1", ask0_c0: "", ask0_q1: ["0"], ask0_c1: "" },
    });
    expect(answered.toast).toEqual({ type: "success", content: strings.feishu.submitted });
    const final = await r.until(() => {
      const c = r.cardOf(moved.messageId);
      return c.header?.template === "green" && c;
    }, "the completed state on the new card");
    expect(cardText(final)).toContain("Kubernetes");
    await r.idle();
    // Two cards in all (no static final message on top), and the static one was never tried again in a loop.
    expect(cards().map((m) => m.messageId)).toEqual([staticId, moved.messageId]);
    expect(entityCalls(r, staticId).filter((c) => c.code !== 0)).toHaveLength(1);
    expect(r.fake.codesOf("patchCard", staticId)).toEqual([99991672]);
    expect(r.fake.codesOf("patchCard", moved.messageId).every((code) => code === 0)).toBe(true);
    expect(JSON.parse((await askResults(r))[0]!).answers[0].selectedLabels).toHaveLength(1);
  });

  it("after a restart, continues on the card it moved to: the same form again, answered there", async () => {
    const { r, staticId, cards } = await staticCard();
    const moved = await r.until(() => cards().find((m) => m.messageId !== staticId), "a new card");
    const requestId = await r.until(() => requestIdsOn(r.cardOf(moved.messageId))[0], "the form");
    rigs.splice(rigs.indexOf(r), 1);
    await r.stop();
    const patches = r.fake.callsTo("patchCard", moved.messageId).length;
    const after = await startFakeChannel({
      fake: r.fake,
      cardkit: r.cardkit!,
      dataDir: r.dataDir,
      recover: true,
      askPing: false,
    });
    rigs.push(after);
    const recovery = await after.until(
      () => after.fake.callsTo("patchCard", moved.messageId)[patches],
      "the recovery PATCH of the moved card",
    );
    expect(requestIdsOn(recovery.card!)).toEqual([requestId]);
    const ask = after.core.registry.get(requestId)!;
    const answered = await after.click({
      messageId: moved.messageId,
      operatorOpenId: ALICE,
      value: { kind: "feishu_ask", act: "submit", sessionId: ask.sessionId, requestId, sender: ALICE },
      name: "ask0_submit",
      formValue: { ask0_q0: "0", ask0_c0: "", ask0_q1: ["1"], ask0_c1: "" },
    });
    expect(answered.toast).toEqual({ type: "success", content: strings.feishu.submitted });
    await after.until(() => after.cardOf(moved.messageId).header?.template === "green", "the completed card");
    await after.idle();
    expect(cards().map((m) => m.messageId)).toEqual([staticId, moved.messageId]);
    expect(entityCalls(after, staticId).filter((c) => c.code !== 0)).toHaveLength(1);
  });

  it("cancels the question with the reason the agent gets when the new card is refused too, and the final state still goes", async () => {
    const { r, staticId, cards } = await staticCard({ refuseMove: true });
    await r.drive(r.core.runner.idle());
    await r.idle();
    const [result] = await askResults(r);
    expect(JSON.parse(result!)).toEqual({ error: strings.askUnavailable });
    // The run ended without waiting out the question; its final state went as one new message.
    const sent = cards();
    expect(sent).toHaveLength(2);
    expect(sent[0]!.messageId).toBe(staticId);
    const last = r.cardOf(sent[1]!.messageId);
    expect(last.header?.template).not.toBe("blue");
    expect(formsOn(last)).toEqual([]);
  });
});
