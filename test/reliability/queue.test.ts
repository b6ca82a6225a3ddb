import { describe, expect, it } from "vitest";
import type { Agent } from "../../src/harness/agents/agent.ts";
import { cardReplyingTo } from "../helpers/feishu.ts";
import { record, until } from "./helpers/env.ts";
import { ALICE, type Stack, stacksForEachTest } from "./helpers/stack.ts";

/**
 * Issue 14 item 10: a chat's queue is capped (a clear reply when full), and a change to the queue updates
 * only the queued cards whose content changed. Calls are counted at the emulator, i.e. what Feishu would see.
 * Which cards should change is read from the emulator's copy of each card, before and after, not from the bot.
 */

/** The run never ends by itself, so everything sent after it queues. */
const busyAgent: Agent = {
  name: "busy",
  run: (ctx) =>
    new Promise((resolve) => ctx.signal.addEventListener("abort", () => resolve({ text: "stopped" }))),
};

const { stack } = stacksForEachTest({ agent: busyAgent, tools: [] });

const patchesTo = (s: Stack, ids: Iterable<string>) => {
  const wanted = new Set(ids);
  return s.emulator.callsTo("PATCH", /^\/open-apis\/im\/v1\/messages\/[^/]+$/).filter((call) => {
    const id = call.path.split("/").at(-1) ?? "";
    return wanted.has(id);
  }).length;
};

function textReplyTo(s: Stack, userMessageId: string): string | undefined {
  return s.emulator.messages
    .listMessages()
    .find((m) => m.parentId === userMessageId && m.msgType === "text" && m.senderType === "app")?.content;
}

describe("the queue of a busy chat", () => {
  it("holds 20 messages, answers the rest that it is full, and re-sends no card that did not change", async () => {
    const s = await stack();
    const first = await s.say({ chatType: "p2p", senderOpenId: ALICE, text: "第一个任务" });
    const progressCard = await s.progressCard(first.messageId);
    await s.channel.idle();
    const callsBefore = s.emulator.calls.length;

    const queuedCards: string[] = [];
    const refused: string[] = [];
    for (let i = 1; i <= 60; i += 1) {
      const { messageId } = await s.say({ chatType: "p2p", senderOpenId: ALICE, text: `消息 ${i}` });
      const reply = await until(
        () => cardReplyingTo(s.emulator, messageId) ?? textReplyTo(s, messageId),
        `the reply to message ${i}`,
      );
      if (i <= 20) queuedCards.push(reply);
      else refused.push(reply);
      await s.channel.idle();
      // Unbounded, the k-th message re-sent all k queued cards: stop early instead of waiting for hundreds.
      expect(patchesTo(s, queuedCards), `after message ${i}`).toBe(0);
    }
    expect(queuedCards.every((id) => s.emulator.messages.getMessage(id)?.msgType === "interactive")).toBe(
      true,
    );
    expect(new Set(refused).size).toBe(1);
    expect(refused[0]).toContain("前面已有 20 条消息在排队，这条消息没有加入队列。");
    expect(await s.core.runner.queued(s.privateSessionId(ALICE))).toHaveLength(20);
    // The running task's own card may be refreshed meanwhile; that is not the queue's doing.
    const queuingCalls = s.emulator.calls
      .slice(callsBefore)
      .filter((call) => !call.path.endsWith(`/${progressCard}`)).length;
    // One reply per message (a card or the refusal) and nothing else.
    expect(queuingCalls).toBe(60);

    // Withdraw the first in line: the 19 behind it move up, and only they are updated, once each.
    const [head] = await s.core.runner.queued(s.privateSessionId(ALICE));
    const before = new Map(queuedCards.map((id) => [id, JSON.stringify(s.cardOf(id))]));
    const clicked = queuedCards[0] ?? "";
    const answer = await s.click({
      messageId: clicked,
      operatorOpenId: ALICE,
      value: { kind: "queue", act: "unqueue", sessionId: head?.sessionId, queueId: head?.id, sender: ALICE },
    });
    expect(answer.toast?.content).toBe("已取消排队");
    await s.channel.idle();
    const others = queuedCards.filter((id) => id !== clicked);
    const changed = others.filter((id) => JSON.stringify(s.cardOf(id)) !== before.get(id));
    expect(changed).toHaveLength(19);
    expect(patchesTo(s, others)).toBe(changed.length);
    expect(patchesTo(s, [clicked])).toBe(0); // the callback's answer updated it

    record("queue: 60 messages into a busy chat, then one withdrawn", {
      queued: queuedCards.length,
      refusedWithReply: refused.length,
      apiCallsWhileQueuing: queuingCalls,
      patchesAfterWithdraw: patchesTo(s, others),
    });
  }, 60_000);
});
