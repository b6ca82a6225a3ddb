import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Card } from "../src/cards/model.ts";
import { buildProgressCard } from "../src/cards/progress.ts";
import { afterSend, type ReminderState, shouldRemind } from "../src/feishu/ask-reminder.ts";
import { FakeMessenger } from "../src/testing/fake-messenger.ts";
import { sampleAsk } from "./fixtures.ts";
import { eachTransport, type FakeChannelRig, startFakeChannel } from "./helpers/fake-channel.ts";
import { formsOn, requestIdsOn } from "./helpers/feishu.ts";

/**
 * Who a question on a card is for, and who gets told, as a chat sees it (the channel on the fake messenger
 * and fake time).
 * In a private chat the card is the notification (no reminder); in a group the card names the sender and
 * one reminder per card @-mentions them; nothing is recalled (a recall shows 撤回了一条消息 to everyone).
 */

const ALICE = "ou_alice000000000000000000000000000";
const BOB = "ou_bob00000000000000000000000000000";
const GROUP = "oc_team";

const rigs: FakeChannelRig[] = [];
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
  vi.useRealTimers();
});
async function rig(options: Parameters<typeof startFakeChannel>[0] = {}): Promise<FakeChannelRig> {
  const started = await startFakeChannel(options);
  rigs.push(started);
  return started;
}

const botTexts = (r: FakeChannelRig) => r.fromBot().filter((m) => m.msgType === "text");

/** Every markdown block of a card (forms included), in order. */
function markdownOf(card: Card): string[] {
  const out: string[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (typeof node !== "object" || node === null) return;
    const record = node as Record<string, unknown>;
    if (record.tag === "markdown" && typeof record.content === "string") out.push(record.content);
    for (const value of Object.values(record)) if (typeof value === "object") walk(value);
  };
  walk(card.body.elements);
  return out;
}

/** Sends `text` and waits until the card shows `forms` forms; the card's id and that state. */
async function asked(r: FakeChannelRig, input: { chatType: "p2p" | "group"; text: string; forms: number }) {
  const group = input.chatType === "group";
  const userMessageId = r.send({
    chatType: input.chatType,
    senderOpenId: ALICE,
    text: input.text,
    ...(group ? { chatId: GROUP, mentionBot: true } : {}),
  });
  const cardId = await r.progressCard(userMessageId);
  const card = await r.until(() => {
    const c = r.cardOf(cardId);
    // Asks shown in full: stacked asks share one form, each named in its submit.
    return requestIdsOn(c).length === input.forms && c;
  }, `${input.forms} ask(s) on the card`);
  return { cardId, card };
}

async function answerAll(r: FakeChannelRig, cardId: string, card: Card): Promise<void> {
  for (const [index, requestId] of requestIdsOn(card).entries()) {
    const ask = r.core.registry.get(requestId);
    const response = await r.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: { kind: "feishu_ask", act: "submit", sessionId: ask?.sessionId ?? "", requestId, sender: ALICE },
      name: `ask${index}_submit`,
      formValue: { [`ask${index}_q0`]: "0", [`ask${index}_q1`]: ["0"] },
    });
    expect(response.toast?.content).toBe("已提交");
  }
  await r.until(() => r.cardOf(cardId).header?.template === "green", "the completed card");
}

eachTransport(() => {
  describe("the question's wording and its reminder", () => {
    it("in a private chat: 需要你的回答 on the card, and no reminder message, even for /parallel", async () => {
      const r = await rig();
      const { cardId, card } = await asked(r, { chatType: "p2p", text: "/parallel", forms: 2 });
      const markdown = markdownOf(card).join("\n");
      expect(markdown).toContain("需要你的回答");
      expect(markdown).not.toContain("<at");
      expect(card.config?.summary?.content).toBe("等待你回答 2 个问题");
      await answerAll(r, cardId, card);
      await r.idle();
      expect(botTexts(r)).toEqual([]);
    });

    it("in a group: the card says whose answer it waits for, and one reminder @-mentions them, never recalled", async () => {
      const r = await rig();
      const { cardId, card } = await asked(r, { chatType: "group", text: "/parallel", forms: 2 });
      const markdown = markdownOf(card).join("\n");
      expect(markdown).toContain(`**等待** <at id=${ALICE}></at> **回答（1/2）**`);
      expect(markdown).toContain(`**等待** <at id=${ALICE}></at> **回答（2/2）**`);
      expect(markdown).not.toContain("需要你的回答");
      // The chat-list summary is plain text read by everyone: no "你", no tag.
      expect(card.config?.summary?.content).toBe("等待发起人回答 2 个问题");

      const reminder = await r.until(() => botTexts(r)[0], "the reminder");
      expect(reminder.content).toContain(ALICE);
      expect(reminder.content).toContain("请在上方卡片中作答");
      // A reply to the card, or to the task's message when the card's own reply had not returned yet.
      expect([cardId, r.fake.message(cardId)?.parentId]).toContain(reminder.parentId);
      await answerAll(r, cardId, card);
      await r.idle();
      // Two asks, one reminder; still there after both were answered.
      expect(botTexts(r).map((m) => m.messageId)).toEqual([reminder.messageId]);
      expect(r.fake.message(reminder.messageId)?.recalled).toBeFalsy();
    });

    it("in a group: another member's submit is refused, saying who may answer", async () => {
      const r = await rig();
      const { cardId, card } = await asked(r, { chatType: "group", text: "部署", forms: 1 });
      const requestId = requestIdsOn(card)[0] ?? "";
      const ask = r.core.registry.get(requestId);
      const byBob = await r.click({
        messageId: cardId,
        operatorOpenId: BOB,
        value: {
          kind: "feishu_ask",
          act: "submit",
          sessionId: ask?.sessionId ?? "",
          requestId,
          sender: ALICE,
        },
        name: "ask0_submit",
        formValue: { ask0_q0: "0", ask0_q1: ["0"] },
      });
      // The fake's directory has no names: the refusal says whose question it is without one.
      expect(byBob).toEqual({ toast: { type: "error", content: "仅任务发起人可以回答此问题" } });
    });

    it("in a group: a task resumed after a restart that asks again is not reminded a second time", async () => {
      const fake = new FakeMessenger({ timeoutMs: 5000 });
      const first = await startFakeChannel({ fake });
      const { cardId } = await asked(first, { chatType: "group", text: "部署", forms: 1 });
      await first.until(() => botTexts(first)[0], "the reminder");
      await first.stop(); // the process goes away while the question waits; Feishu (the fake) stays

      const second = await rig({ fake, dataDir: first.dataDir, recover: true });
      // The resumed run asks again: its new form lands on the same card.
      await second.until(() => {
        const card = second.cardOf(cardId);
        return formsOn(card).length === 1 && !JSON.stringify(card).includes("任务正在恢复执行") && card;
      }, "the form again after the restart");
      await second.idle();
      expect(botTexts(second)).toHaveLength(1);
    });

    it("sends no reminder in a group when FEISHU_ASK_PING is off", async () => {
      const r = await rig({ askPing: false });
      await asked(r, { chatType: "group", text: "部署", forms: 1 });
      await r.idle();
      expect(botTexts(r)).toEqual([]);
    });
  });

  describe("the group card's heading", () => {
    it("never puts a sender id that is not an open_id inside a tag: it says 等待发起人回答 instead", () => {
      const view = {
        sessionId: "s",
        runId: "r",
        senderId: "ou_x></at><at id=all></at>",
        title: "t",
        status: "running" as const,
        steps: [],
        startedAt: 0,
        chatType: "group" as const,
      };
      const markdown = markdownOf(
        buildProgressCard(view, [{ requestId: "q", questions: sampleAsk().questions }]),
      );
      expect(markdown.join("\n")).toContain("**等待发起人回答**");
      expect(markdown.join("\n")).not.toContain("<at");
    });
  });

  describe("the reminder policy", () => {
    /**
     * Random lives of one card: asks arrive, sends end (sent, skipped because the question went away, failed).
     * The shell below drives the policy the way the channel does; the reference model says, in its own terms,
     * what a person should see: in a group with reminders on, a send starts on an ask while none has reached
     * the chat and none is under way; nowhere else ever.
     */
    it("matches a reference model over random sequences of asks and send outcomes", () => {
      const event = fc.constantFrom("ask", "sent", "skipped", "failed");
      const setting = fc.record({
        enabled: fc.boolean(),
        chatType: fc.constantFrom("private", "group", "none", undefined),
      });
      fc.assert(
        fc.property(setting, fc.array(event, { maxLength: 30 }), ({ enabled, chatType }, events) => {
          let state: ReminderState = "none";
          let reached = 0;
          const model = { delivered: false, inFlight: false };
          for (const next of events) {
            if (next === "ask") {
              const starts = shouldRemind({ enabled, chatType, state });
              const expected = enabled && chatType === "group" && !model.delivered && !model.inFlight;
              expect(starts).toBe(expected);
              if (starts) {
                state = "sending";
                model.inFlight = true;
              }
            } else if (model.inFlight) {
              state = afterSend(next);
              model.inFlight = false;
              if (next === "sent") {
                reached += 1;
                model.delivered = true;
              }
            }
          }
          expect(reached).toBeLessThanOrEqual(1);
          if (!enabled || chatType !== "group") expect(reached).toBe(0);
        }),
        { numRuns: 500 },
      );
    });

    it("reminds once per card, in groups only, and lets a skipped or failed send try again", () => {
      const group = { enabled: true, chatType: "group" as const };
      expect(shouldRemind({ ...group, state: "none" })).toBe(true);
      expect(shouldRemind({ ...group, state: "sending" })).toBe(false);
      expect(shouldRemind({ ...group, state: "sent" })).toBe(false);
      expect(shouldRemind({ ...group, enabled: false, state: "none" })).toBe(false);
      for (const chatType of ["private", "none", undefined] as const)
        expect(shouldRemind({ enabled: true, chatType, state: "none" })).toBe(false);
      expect([afterSend("sent"), afterSend("skipped"), afterSend("failed")]).toEqual([
        "sent",
        "none",
        "none",
      ]);
    });
  });
});
