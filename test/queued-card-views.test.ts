import { afterEach, describe, expect, it } from "vitest";
import { sessionIdOf } from "../src/domain/session-id.ts";
import { cardText, type FeishuRig, startFeishuRig } from "./helpers/feishu.ts";

/**
 * 取消排队 and 插队 on a queued message's card, in a group: the callback's answer carries the card's new state,
 * but Feishu shows an answer's card to the clicker alone (docs/feishu-platform.md, Addendum, later, §1), and
 * the emulator models that per viewer. So once the answer settled the bot PATCHes the queued card, and every
 * other member sees 已取消排队 / its new place too, instead of live buttons for good.
 */

const ALICE = "ou_alice000000000000000000000000000";
const BOB = "ou_bob00000000000000000000000000000";
const CHAT = "oc_team";
/** Long enough to tell a PATCH sent after the answer settled from one sent while it was answered. */
const SETTLE_MS = 300;

const rigs: FeishuRig[] = [];
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
});

async function queuedInGroup() {
  // Slow steps: the first task runs long enough for both clicks while the others wait behind it, on a
  // loaded machine too (at 300 ms a step it ended first there, and the promoted message had started).
  const r = await startFeishuRig({ stepMs: 1_500, settleMs: SETTLE_MS });
  rigs.push(r);
  const say = (text: string) =>
    r.send({ chatType: "group", chatId: CHAT, senderOpenId: ALICE, text, mentionBot: true });
  await r.progressCard(await say("/long"));
  const secondCard = await r.progressCard(await say("/quick second"));
  const thirdCard = await r.progressCard(await say("/quick third"));
  await r.until(
    () => cardText(r.cardOf(thirdCard)).includes("排在第 2 位"),
    "the third message queued second",
  );
  const sessionId = sessionIdOf({ kind: "feishu-group", appId: r.emulator.appId, chatId: CHAT });
  const [second, third] = await r.core.runner.queued(sessionId);
  return { r, sessionId, secondCard, thirdCard, second: second!, third: third! };
}

const patchesOf = (r: FeishuRig, messageId: string) =>
  r.emulator.callsTo("PATCH", `/open-apis/im/v1/messages/${messageId}`).length;

describe("a click on a queued message's card in a group", () => {
  it("取消排队: the other members see 已取消排队 once the bot PATCHes the card after the answer", async () => {
    const { r, sessionId, secondCard, second } = await queuedInGroup();
    const before = patchesOf(r, secondCard);
    const unqueue = { kind: "queue", act: "unqueue", sessionId, queueId: second.id, sender: ALICE };
    const answer = await r.click({ messageId: secondCard, operatorOpenId: ALICE, value: unqueue });
    expect(answer.toast?.content).toBe("已取消排队");
    expect(cardText(r.cardOf(secondCard, ALICE))).toContain("已取消排队，这条消息不会执行。");
    const seenByBob = await r.until(() => {
      const text = cardText(r.cardOf(secondCard, BOB));
      return text.includes("已取消排队，这条消息不会执行。") && text;
    }, "Bob sees the withdrawn card");
    expect(seenByBob).not.toContain('"tag":"button"'); // no live 取消排队 left
    expect(patchesOf(r, secondCard)).toBe(before + 1);
    expect(r.cardOf(secondCard, BOB)).toEqual(r.cardOf(secondCard, ALICE));
  });

  it("插队: the other members see the card's new place once the bot PATCHes it after the answer", async () => {
    const { r, sessionId, thirdCard, third } = await queuedInGroup();
    const promote = { kind: "queue", act: "promote", sessionId, queueId: third.id, sender: ALICE };
    const answer = await r.click({ messageId: thirdCard, operatorOpenId: ALICE, value: promote });
    const answeredAt = r.emulator.clock.now();
    expect(answer.toast?.content).toBe("已插队");
    expect(cardText(answer.card!.data)).toContain("排在第 1 位");
    // Sent once the answer settled, not while it was answered (on Feishu such a PATCH can be reverted).
    const patches = () => r.emulator.callsTo("PATCH", `/open-apis/im/v1/messages/${thirdCard}`);
    await r.until(
      () => patches().some((call) => call.at >= answeredAt + SETTLE_MS - 50 && call.status === 200),
      "a PATCH of the card after the answer settled",
    );
    expect(cardText(r.cardOf(thirdCard, BOB))).toContain("排在第 1 位");
    expect(r.cardOf(thirdCard, BOB)).toEqual(answer.card?.data);
  });
});
