import { afterEach, describe, expect, it } from "vitest";
import { buildCore } from "./helpers/core.ts";
import { cardText, type FeishuRig, formsOn, requestIdsOn, startFeishuRig } from "./helpers/feishu.ts";

const ALICE = "ou_alice000000000000000000000000000";
const BOB = "ou_bob00000000000000000000000000000";

const rigs: FeishuRig[] = [];
async function rig(options: Parameters<typeof startFeishuRig>[0] = {}): Promise<FeishuRig> {
  const started = await startFeishuRig(options);
  rigs.push(started);
  return started;
}
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
});

/** Sends a message, waits for its progress card and for the form to appear on it. */
async function askedInPrivate(r: FeishuRig, text = "帮我部署") {
  const userMessageId = r.send({ chatType: "p2p", senderOpenId: ALICE, text });
  const cardId = await r.progressCard(userMessageId);
  const card = await r.until(() => {
    const c = r.cardOf(cardId);
    return formsOn(c).length > 0 && c;
  }, "a form on the card");
  return { userMessageId, cardId, card, requestId: requestIdsOn(card)[0] ?? "" };
}

const submitValue = (r: FeishuRig, requestId: string, sender = ALICE) => {
  const ask = r.core.registry.get(requestId);
  return { kind: "feishu_ask", act: "submit", sessionId: ask?.sessionId ?? "", requestId, sender };
};

describe("Feishu channel, end to end through the SDK and the emulator", () => {
  it("replies with a progress card, puts the question on it as a form, and takes the answer from the card", async () => {
    const r = await rig();
    const { cardId, card, requestId } = await askedInPrivate(r);
    expect(formsOn(card)).toEqual(["ask0"]);
    expect(cardText(card)).toContain("等待你回答 2 个问题");

    // A PATCH notifies nobody, so a short message @-mentions the sender.
    const ping = await r.until(
      () => r.emulator.messages.listMessages().find((m) => m.msgType === "text" && m.content.includes(ALICE)),
      "the ask ping",
    );
    expect(ping.content).toContain("请在上方卡片中作答");

    const response = await r.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: submitValue(r, requestId),
      name: "ask0_submit",
      formValue: { ask0_q0: "1", ask0_c0: "", ask0_q1: ["0", "2"], ask0_c1: "RTL" },
    });
    expect(response.toast).toEqual({ type: "success", content: "已提交" });
    expect(formsOn(response.card!.data)).toEqual([]);

    const final = await r.until(() => {
      const c = r.cardOf(cardId);
      return cardText(c).includes("已完成") && c;
    }, "the completed card");
    expect(cardText(final)).toContain("Kubernetes");
    expect(cardText(final)).toContain("暗色模式、导出 PDF、其他: RTL");
    await r.until(() => r.emulator.messages.getMessage(ping.messageId)?.recalled, "the ping to be recalled");
  });

  it("stacks two forms for /parallel; answering one keeps the other", async () => {
    const r = await rig();
    const userMessageId = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/parallel" });
    const cardId = await r.progressCard(userMessageId);
    const card = await r.until(() => {
      const c = r.cardOf(cardId);
      return formsOn(c).length === 2 && c;
    }, "two forms");
    const [first, second] = requestIdsOn(card);
    const response = await r.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: submitValue(r, first!),
      name: "ask0_submit",
      formValue: { ask0_q0: "0" },
    });
    expect(response.toast?.content).toBe("已提交");
    expect(requestIdsOn(response.card!.data)).toEqual([second]);
    const after = await r.until(() => {
      const c = r.cardOf(cardId);
      return formsOn(c).length === 1 && c;
    }, "one form left");
    expect(requestIdsOn(after)).toEqual([second]);
  });

  it("lets only the sender answer in a group, and refuses an empty submit without losing the form", async () => {
    const r = await rig();
    const ignored = r.send({ chatType: "group", chatId: "oc_team", senderOpenId: ALICE, text: "no mention" });
    const userMessageId = r.send({
      chatType: "group",
      chatId: "oc_team",
      senderOpenId: ALICE,
      text: "部署",
      mentionBot: true,
    });
    const cardId = await r.progressCard(userMessageId);
    const card = await r.until(() => {
      const c = r.cardOf(cardId);
      return formsOn(c).length > 0 && c;
    }, "a form");
    const requestId = requestIdsOn(card)[0]!;
    const byBob = await r.click({
      messageId: cardId,
      operatorOpenId: BOB,
      value: submitValue(r, requestId),
      name: "ask0_submit",
      formValue: { ask0_q0: "0", ask0_q1: ["0"] },
    });
    expect(byBob).toEqual({ toast: { type: "error", content: "仅消息发送者可操作" } });
    // A forged button value naming Bob as sender changes nothing: the ask's answerer is the truth.
    const forged = await r.click({
      messageId: cardId,
      operatorOpenId: BOB,
      value: submitValue(r, requestId, BOB),
      name: "ask0_submit",
      formValue: { ask0_q0: "0", ask0_q1: ["0"] },
    });
    expect(forged.toast?.content).toBe("仅消息发送者可操作");
    const empty = await r.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: submitValue(r, requestId),
      name: "ask0_submit",
      formValue: { ask0_q0: "0", ask0_q1: [], ask0_c1: " " },
    });
    expect(empty.toast).toEqual({ type: "warning", content: "请至少选择一项或填写其他" });
    expect(formsOn(empty.card!.data)).toEqual(["ask0"]);
    expect(r.core.registry.get(requestId)).toBeDefined();
    const ok = await r.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: submitValue(r, requestId),
      name: "ask0_submit",
      formValue: { ask0_q0: "0", ask0_q1: ["1"] },
    });
    expect(ok.toast?.content).toBe("已提交");
    await r.until(() => cardText(r.cardOf(cardId)).includes("已完成"), "completion");
    expect(r.emulator.messages.listMessages().filter((m) => m.parentId === ignored)).toEqual([]);
  });

  it("takes a message delivered twice as one run", async () => {
    const r = await rig();
    const payload = r.emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "/quick" });
    const messageId = payload.event.message.message_id;
    r.deliver(payload);
    r.deliver(payload);
    const cardId = await r.progressCard(messageId);
    await r.until(() => cardText(r.cardOf(cardId)).includes("已完成"), "completion");
    await r.channel.idle();
    const cards = r.emulator.messages.listMessages().filter((m) => m.parentId === messageId);
    expect(cards).toHaveLength(1);
    expect(
      r.core.store
        .history(r.core.runner.currentRun(`feishu-${r.emulator.appId}-private-${ALICE}`)!.sessionId)
        .filter((m) => m.role === "user"),
    ).toHaveLength(1);
  });

  it("answers a non-text message politely", async () => {
    const r = await rig();
    const messageId = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "", messageType: "image" });
    const reply = await r.until(
      () => r.emulator.messages.listMessages().find((m) => m.parentId === messageId),
      "a reply",
    );
    expect(reply.content).toContain("文字");
  });

  it("removes the form when the question times out", async () => {
    const r = await rig({ askTimeoutMs: 300 });
    const { cardId } = await askedInPrivate(r);
    const final = await r.until(() => {
      const c = r.cardOf(cardId);
      return cardText(c).includes("已完成") && c;
    }, "the run to finish after the timeout");
    expect(formsOn(final)).toEqual([]);
    expect(cardText(final)).toContain("没有收到你的回答");
  });
});
