import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { feishuPrivateSessionId } from "../src/domain/session-id.ts";
import { DEMO_QUESTIONS } from "../src/harness/agents/demo.ts";
import { strings } from "../src/strings/index.ts";
import { FakeCardKit } from "../src/testing/fake-cardkit.ts";
import { FakeMessenger } from "../src/testing/fake-messenger.ts";
import { submitValue as buttonValue } from "./helpers/agents.ts";
import { cardCalls, fullUpdates, refuseUpdates } from "./helpers/card-calls.ts";
import { eachTransport, type FakeChannelRig, startFakeChannel } from "./helpers/fake-channel.ts";
import { cardText, formsOn, requestIdsOn } from "./helpers/feishu.ts";

/**
 * The Feishu channel's policy — cards, forms, callbacks, faults, queue, restarts — on the fake messenger and
 * fake time (test/helpers/fake-channel.ts). What only the wire can show (the SDK, both transports, the hub's
 * WebSocket) stays in test/feishu-channel.test.ts over the emulator.
 */

const ALICE = "ou_alice000000000000000000000000000";
const BOB = "ou_bob00000000000000000000000000000";

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

const sessionOf = (r: FakeChannelRig) => feishuPrivateSessionId(r.fake.appId, ALICE);

/** Sends a message, waits for its progress card and for the form to appear on it. */
async function askedInPrivate(r: FakeChannelRig, text = "帮我部署") {
  const userMessageId = r.send({ chatType: "p2p", senderOpenId: ALICE, text });
  const cardId = await r.progressCard(userMessageId);
  const card = await r.until(() => {
    const c = r.cardOf(cardId);
    return formsOn(c).length > 0 && c;
  }, "a form on the card");
  return { userMessageId, cardId, card, requestId: requestIdsOn(card)[0] ?? "" };
}

/** The completed state: green header (the summary line "已完成 N 步" appears while running too). */
const isCompleted = (card: { header?: { template: string } }) => card.header?.template === "green";

const submitValue = (r: FakeChannelRig, requestId: string, sender = ALICE) => {
  const ask = r.core.registry.get(requestId);
  return { kind: "feishu_ask", act: "submit", sessionId: ask?.sessionId ?? "", requestId, sender };
};

eachTransport((transport) => {
  describe("the channel's cards and forms, on fake time", () => {
    it("replies with a progress card, puts the question on it as a form, and takes the answer from the card", async () => {
      const r = await rig();
      const { cardId, card, requestId } = await askedInPrivate(r);
      expect(formsOn(card)).toEqual(["ask0"]);
      expect(cardText(card)).toContain("等待你回答 2 个问题");
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
        return isCompleted(c) && c;
      }, "the completed card");
      expect(cardText(final)).toContain("Kubernetes");
      expect(cardText(final)).toContain("暗色模式、导出 PDF、其他：RTL");
      await r.idle();
      // In a private chat the card is the notification: no @-mention reminder.
      expect(r.fromBot().map((m) => m.msgType)).toEqual(["interactive"]);
    });

    it("stacks /parallel's two asks on one card; answering one keeps the other", async () => {
      const r = await rig();
      const userMessageId = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/parallel" });
      const cardId = await r.progressCard(userMessageId);
      const card = await r.until(() => {
        const c = r.cardOf(cardId);
        return requestIdsOn(c).length === 2 && c;
      }, "two asks");
      expect(formsOn(card)).toEqual(["asks"]); // one form, one 全部提交 for both
      const [first, second] = requestIdsOn(card);
      const response = await r.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value: buttonValue(card, "asks"),
        name: "asks_submit",
        formValue: { ask0_q0: "0", ask0_c0: "", ask1_q0: [], ask1_c0: "" },
      });
      expect(response.toast?.type).toBe("warning"); // the second ask, still open, is named
      expect(r.core.registry.get(first!)).toBeUndefined(); // the first is answered
      expect(requestIdsOn(response.card!.data)).toEqual([second]);
      // The clicker sees that at once; the card as every member sees it follows once the bot PATCHes.
      const after = await r.until(() => {
        const c = r.cardOf(cardId);
        return requestIdsOn(c).length === 1 && c;
      }, "one ask left");
      expect(requestIdsOn(after)).toEqual([second]);
      expect(formsOn(after)).toHaveLength(1);
    });

    it("lets only the sender answer in a group, naming them, and refuses an empty submit without losing the form", async () => {
      // The tenant's directory names Alice (获取单个用户信息): the refusal says who may answer (issue 25).
      const r = await rig({ fake: new FakeMessenger({ timeoutMs: 5000, userNames: { [ALICE]: "Alice" } }) });
      const ignored = r.send({
        chatType: "group",
        chatId: "oc_team",
        senderOpenId: ALICE,
        text: "no mention",
      });
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
      const submit = (operatorOpenId: string, formValue: Record<string, unknown>, sender = ALICE) =>
        r.click({
          messageId: cardId,
          operatorOpenId,
          value: submitValue(r, requestId, sender),
          name: "ask0_submit",
          formValue,
        });
      expect(await submit(BOB, { ask0_q0: "0", ask0_q1: ["0"] })).toEqual({
        toast: { type: "error", content: "仅 @Alice 可以回答此问题" },
      });
      // A forged button value naming Bob as sender changes nothing: the ask's answerer is the truth.
      expect((await submit(BOB, { ask0_q0: "0", ask0_q1: ["0"] }, BOB)).toast?.content).toBe(
        "仅 @Alice 可以回答此问题",
      );
      const empty = await submit(ALICE, { ask0_q0: "0", ask0_q1: [], ask0_c1: " " });
      expect(empty.toast).toEqual({
        type: "warning",
        content: "第 2 题「附加功能」：请至少选择一项或填写其他",
      });
      expect(formsOn(empty.card!.data)).toEqual(["ask0"]);
      expect(r.core.registry.get(requestId)).toBeDefined();
      expect((await submit(ALICE, { ask0_q0: "0", ask0_q1: ["1"] })).toast?.content).toBe("已提交");
      await r.until(() => isCompleted(r.cardOf(cardId)), "completion");
      expect(r.fake.messages().filter((m) => m.parentId === ignored)).toEqual([]);
    });

    it("takes a message delivered twice as one run", async () => {
      const r = await rig();
      const { messageId, data } = r.message({ chatType: "p2p", senderOpenId: ALICE, text: "/quick" });
      await r.deliver(data);
      await r.deliver(data);
      const cardId = await r.progressCard(messageId);
      await r.until(() => isCompleted(r.cardOf(cardId)), "completion");
      await r.idle();
      expect(r.fake.messages().filter((m) => m.parentId === messageId)).toHaveLength(1);
      expect((await r.core.store.history(sessionOf(r))).filter((m) => m.role === "user")).toHaveLength(1);
    });

    it("answers an unknown or stale action value with a toast, never an exception", async () => {
      const r = await rig();
      const { cardId } = await askedInPrivate(r);
      for (const value of [
        { kind: "nope" },
        { kind: "feishu_ask", act: "submit" },
        { kind: "queue", act: "promote", sessionId: "s", queueId: "gone", sender: ALICE },
      ]) {
        const response = await r.click({ messageId: cardId, operatorOpenId: ALICE, value });
        expect(response.toast?.type).toMatch(/warning|info/);
      }
      const stale = await r.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value: { kind: "feishu_ask", act: "submit", sessionId: "s", requestId: "never-asked", sender: ALICE },
      });
      expect(stale.toast?.content).toBe("问题已失效");
    });

    it("answers a non-text message politely", async () => {
      const r = await rig();
      const messageId = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "", messageType: "image" });
      const reply = await r.until(() => r.fake.messages().find((m) => m.parentId === messageId), "a reply");
      expect(reply.content).toContain("文字");
    });

    it("removes the form when the question times out", async () => {
      const r = await rig({ askTimeoutMs: 15 * 60_000 });
      const { cardId } = await askedInPrivate(r);
      await vi.advanceTimersByTimeAsync(15 * 60_000);
      const final = await r.until(() => {
        const c = r.cardOf(cardId);
        return isCompleted(c) && c;
      }, "the run to finish after the timeout");
      expect(formsOn(final)).toEqual([]);
      expect(cardText(final)).toContain("没有收到你的回答");
    });

    it("withdraws the form when another surface answers first; a later submit gets 问题已失效", async () => {
      const r = await rig();
      const { cardId, requestId } = await askedInPrivate(r);
      const ask = r.core.registry.get(requestId)!;
      const value = submitValue(r, requestId);
      const answers = ask.questions.map((q) => ({
        question: q.question,
        selectedLabels: [q.options[0]!.label],
        customInput: null,
      }));
      expect(
        await r.core.registry.complete(ask.sessionId, requestId, answers, {
          surface: "websocket",
          userId: ALICE,
        }),
      ).toEqual({ ok: true });
      await r.until(() => formsOn(r.cardOf(cardId)).length === 0, "the form to leave the card");
      const late = await r.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value,
        name: "ask0_submit",
        formValue: { ask0_q0: "1", ask0_q1: ["1"] },
      });
      expect(late.toast).toEqual({ type: "warning", content: "问题已失效" });
      if (late.card) expect(formsOn(late.card.data)).toEqual([]);
      expect(formsOn(r.cardOf(cardId))).toEqual([]);
    });

    it("sends no ping when FEISHU_ASK_PING is off", async () => {
      const r = await rig({ askPing: false });
      await askedInPrivate(r);
      await r.idle();
      expect(r.fromBot().map((m) => m.msgType)).toEqual(["interactive"]);
    });

    it("cancels the task for its sender only, and retries it with a new card", async () => {
      const r = await rig();
      const { cardId, userMessageId } = await askedInPrivate(r);
      const run = r.core.runner.activeRun(sessionOf(r))!;
      const cancel = {
        kind: "progress",
        act: "cancel",
        sessionId: sessionOf(r),
        runId: run.id,
        sender: ALICE,
      };
      expect((await r.click({ messageId: cardId, operatorOpenId: BOB, value: cancel })).toast?.content).toBe(
        "仅消息发送者可操作",
      );
      const cancelled = await r.click({ messageId: cardId, operatorOpenId: ALICE, value: cancel });
      expect(cancelled.toast).toEqual({ type: "success", content: "已取消任务" });
      expect(cardText(cancelled.card!.data)).toContain("已取消");
      expect(formsOn(cancelled.card!.data)).toEqual([]);
      await r.until(() => r.cardOf(cardId).header?.template === "grey", "the cancelled card");
      // Said once, by the header's tag.
      expect(cardText(r.cardOf(cardId))).not.toContain("任务已取消");
      const retry = { ...cancel, act: "retry" };
      expect((await r.click({ messageId: cardId, operatorOpenId: ALICE, value: retry })).toast?.content).toBe(
        "已重新开始",
      );
      await r.until(
        () =>
          r.fake.messages().filter((m) => m.parentId === userMessageId && m.msgType === "interactive")
            .length === 2,
        "a second progress card for the retry",
      );
    });

    it("queues a message while a task runs, with 插队 and 取消排队 for its sender", async () => {
      const r = await rig({ stepMs: 40 });
      const first = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/long" });
      await r.progressCard(first);
      const second = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/quick second" });
      const third = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/quick third" });
      const secondCard = await r.progressCard(second);
      const thirdCard = await r.progressCard(third);
      await r.until(
        () => cardText(r.cardOf(thirdCard)).includes("排在第 2 位"),
        "the third message queued second",
      );
      const sessionId = sessionOf(r);
      const [q2, q3] = await r.core.runner.queued(sessionId);
      const promote = { kind: "queue", act: "promote", sessionId, queueId: q3!.id, sender: ALICE };
      expect(
        (await r.click({ messageId: thirdCard, operatorOpenId: BOB, value: promote })).toast?.content,
      ).toBe("仅消息发送者可操作");
      const promoted = await r.click({ messageId: thirdCard, operatorOpenId: ALICE, value: promote });
      expect(promoted.toast?.content).toBe("已插队");
      expect(cardText(promoted.card!.data)).toContain("排在第 1 位");
      const withdraw = { kind: "queue", act: "unqueue", sessionId, queueId: q2!.id, sender: ALICE };
      const withdrawn = await r.click({ messageId: secondCard, operatorOpenId: ALICE, value: withdraw });
      expect(withdrawn.toast?.content).toBe("已取消排队");
      await r.drive(r.core.runner.idle());
      await r.idle();
      const inputs = (await r.core.store.history(sessionId))
        .filter((m) => m.role === "user")
        .map((m) => m.content);
      expect(inputs).toEqual(["/long", "/quick third"]);
      expect(cardText(r.cardOf(thirdCard))).toContain("已开始执行");
      expect(cardText(r.cardOf(thirdCard))).toContain("/quick third");
    });
  });

  describe("the channel under platform faults and restarts, on fake time", () => {
    it("lands the final state through a 230020 storm, with a bounded number of calls", async () => {
      const r = await rig({ cardPatchIntervalMs: 200 });
      const userMessageId = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/long" });
      const cardId = await r.progressCard(userMessageId);
      // IM: 230020 on its PATCHes; CardKit: the entity's 10 operations/s (300316) on its operations.
      refuseUpdates(r, cardId, { times: 4, im: 230020, cardkit: 300316, httpStatus: 429 });
      const final = await r.until(() => {
        const c = r.cardOf(cardId);
        return isCompleted(c) && c;
      }, "the completed card");
      expect(cardText(final)).toContain("`/long` 执行了 20 步");
      const updates = cardCalls(r, cardId);
      expect(updates.filter((c) => c.code === 230020 || c.code === 300316)).toHaveLength(4);
      expect(updates.filter((c) => c.code !== 0 && c.code !== 230020 && c.code !== 300316)).toEqual([]);
      expect(updates.length).toBeLessThan(30);
    });

    it("stops publishing a card older than 14 days (230031)", async () => {
      const r = await rig({ stepMs: 50 });
      const userMessageId = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/long" });
      const cardId = await r.progressCard(userMessageId);
      await r.until(() => cardCalls(r, cardId).length > 0, "a first update");
      r.fake.clock.advance(15 * 24 * 60 * 60 * 1000);
      await r.drive(r.core.runner.idle());
      await r.idle();
      const codes = cardCalls(r, cardId).map((c) => c.code);
      // IM: the PATCH's 230031. CardKit: the entity's 14 days (200750), then its IM PATCH's 230031.
      const refusals = transport === "im" ? [230031] : [200750, 230031];
      expect(codes.filter((code) => code !== 0)).toEqual(refusals);
      expect(codes.slice(-refusals.length)).toEqual(refusals); // nothing more was sent
      expect(r.channel.activeCard((await r.core.runner.currentRun(sessionOf(r)))!.id)).toBeUndefined();
    });

    it("retries the progress card's reply after a 429 and a 5xx, so the task still gets its card", async () => {
      const r = await rig();
      // The first call that makes the card: the IM reply, or the CardKit entity's create.
      if (r.cardkit) {
        r.cardkit.fail({ op: "create", code: 99991400, httpStatus: 429, resetSeconds: 1 });
        r.cardkit.fail({ op: "create", httpStatus: 502 });
      } else {
        r.fake.fail({ method: "replyCard", response: { httpStatus: 429, code: 99991400, resetSeconds: 1 } });
        r.fake.fail({ method: "replyCard", response: { httpStatus: 502 } });
      }
      const userMessageId = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/quick" });
      const cardId = await r.progressCard(userMessageId);
      await r.until(() => isCompleted(r.cardOf(cardId)), "the completed card");
      expect(r.fake.messages().filter((m) => m.parentId === userMessageId)).toHaveLength(1);
      const attempts = r.cardkit
        ? r.cardkit.calls.filter((c) => c.op === "create")
        : r.fake
            .callsTo("replyCard")
            .map((c) => ({ at: c.at, code: c.outcome?.ok ? 0 : c.outcome?.error.httpStatus }));
      expect(attempts.map((c) => (c.code === 99991400 ? 429 : c.code === 0 ? 200 : c.code))).toEqual([
        429, 502, 200,
      ]);
      // A wait-and-try-again is no refusal: the card is still a CardKit entity, never sent the IM way.
      if (r.cardkit) {
        expect(r.cardkit.entityOf(cardId)).toBeDefined();
        expect(r.fake.callsTo("replyCard")).toEqual([]);
      }
      // The reset header is honoured: the second attempt waited a second, the third the back-off.
      const [a, b] = attempts.map((c) => c.at);
      expect(b! - a!).toBeGreaterThanOrEqual(1000);
    });

    it("after a restart mid-ask, shows the same form again and takes the old form's answer as the original call's result", async () => {
      const fake = new FakeMessenger({ timeoutMs: 5000 });
      const cardkit = transport === "cardkit" ? new FakeCardKit(fake) : undefined;
      const first = await startFakeChannel({
        fake,
        cardTransport: transport,
        ...(cardkit ? { cardkit } : {}),
      });
      const { messageId: userMessageId, data } = first.message({
        chatType: "p2p",
        senderOpenId: ALICE,
        text: "帮我部署",
      });
      await first.deliver(data);
      const cardId = await first.progressCard(userMessageId);
      const requestId = await first.until(() => requestIdsOn(first.cardOf(cardId))[0], "a form");
      const submit = submitValue(first, requestId);
      await first.stop(); // the process goes away while the question waits; Feishu (the fake) stays
      const platform = { fake, cardkit };
      const updatesBefore = fullUpdates(platform, cardId).length;

      const second = await rig({
        fake,
        dataDir: first.dataDir,
        recover: true,
        ...(cardkit ? { cardkit } : {}),
      });
      const firstPatch = await second.until(() => fullUpdates(platform, cardId)[updatesBefore], "an update");
      // The durable ask: the first update (a PATCH, or the entity's full update) carries the form again,
      // under the same request id.
      expect(requestIdsOn(firstPatch.card!)).toEqual([requestId]);
      expect(cardText(firstPatch.card!)).not.toContain("任务正在恢复执行");
      const answered = await second.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value: submit,
        name: "ask0_submit",
        formValue: { ask0_q0: "1", ask0_q1: ["0"] },
      });
      expect(answered.toast).toEqual({ type: "success", content: strings.feishu.submitted });
      await second.drive(second.core.runner.idle());
      const tools = (await second.core.store.history(sessionOf(second))).filter((m) => m.role === "tool");
      // The scan before the question is not run again; the ask's one result is the answer given after the restart.
      expect(tools.filter((m) => m.toolName === "scan_workspace")).toHaveLength(1);
      const asks = tools.filter((m) => m.toolName === "ask_user_questions");
      expect(asks).toHaveLength(1);
      expect(JSON.parse(asks[0]!.content).answers[0].selectedLabels).toEqual([
        DEMO_QUESTIONS.deploy.options[1]!.label,
      ]);
      // Feishu redelivers the original message after the restart: it must not start a second run.
      await second.deliver(data);
      await second.idle();
      expect(
        fake.messages().filter((m) => m.parentId === userMessageId && m.msgType === "interactive"),
      ).toHaveLength(1);
      expect(
        (await second.core.store.history(sessionOf(second))).filter((m) => m.role === "user"),
      ).toHaveLength(1);
    });
  });
});
