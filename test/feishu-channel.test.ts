import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { DEMO_QUESTIONS } from "../src/harness/agents/demo.ts";
import { startEmulator } from "../src/local/emulator/index.ts";
import { auditForSession } from "../src/store/audit.ts";
import { strings } from "../src/strings.ts";
import {
  cardText,
  type FeishuRig,
  formsOn,
  requestIdsOn,
  startFeishuRig,
  WEBHOOK_KEY,
} from "./helpers/feishu.ts";

const ALICE = "ou_alice000000000000000000000000000";
const BOB = "ou_bob00000000000000000000000000000";

const rigs: FeishuRig[] = [];
const closers: (() => Promise<void>)[] = [];
/** The transport the current suite runs over; every callback test runs over both. */
let transport: "ws" | "webhook" = "ws";
async function rig(options: Parameters<typeof startFeishuRig>[0] = {}): Promise<FeishuRig> {
  const started = await startFeishuRig({ transport, ...options });
  rigs.push(started);
  return started;
}
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
  for (const close of closers.splice(0)) await close();
});

/** Sends a message, waits for its progress card and for the form to appear on it. */
async function askedInPrivate(r: FeishuRig, text = "帮我部署") {
  const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text });
  const cardId = await r.progressCard(userMessageId);
  const card = await r.until(() => {
    const c = r.cardOf(cardId);
    return formsOn(c).length > 0 && c;
  }, "a form on the card");
  return { userMessageId, cardId, card, requestId: requestIdsOn(card)[0] ?? "" };
}

/** The completed state: green header (the summary line "已完成 N 步" appears while running too). */
const isCompleted = (card: { header?: { template: string } }) => card.header?.template === "green";

const submitValue = (r: FeishuRig, requestId: string, sender = ALICE) => {
  const ask = r.core.registry.get(requestId);
  return { kind: "feishu_ask", act: "submit", sessionId: ask?.sessionId ?? "", requestId, sender };
};

describe.each(["ws", "webhook"] as const)("over the %s transport", (name) => {
  beforeAll(() => {
    transport = name;
  });

  describe("Feishu channel, end to end through the SDK and the emulator", () => {
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
      // In a private chat the card is the notification: no @-mention reminder (test/ask-reminder.test.ts).
      await r.channel.idle();
      const fromBot = r.emulator.messages.listMessages().filter((m) => m.senderType === "app");
      expect(fromBot.map((m) => m.msgType)).toEqual(["interactive"]);
    });

    it("stacks two forms for /parallel; answering one keeps the other", async () => {
      const r = await rig();
      const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/parallel" });
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
      const ignored = await r.send({
        chatType: "group",
        chatId: "oc_team",
        senderOpenId: ALICE,
        text: "no mention",
      });
      const userMessageId = await r.send({
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
      expect(empty.toast).toEqual({ type: "warning", content: "第 2 题「附加功能」还没有回答" });
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
      await r.until(() => isCompleted(r.cardOf(cardId)), "completion");
      expect(r.emulator.messages.listMessages().filter((m) => m.parentId === ignored)).toEqual([]);
    });

    it("takes a message delivered twice as one run", async () => {
      const r = await rig();
      const payload = r.emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "/quick" });
      const messageId = payload.event.message.message_id;
      await r.deliver(payload);
      await r.deliver(payload);
      const cardId = await r.progressCard(messageId);
      await r.until(() => isCompleted(r.cardOf(cardId)), "completion");
      await r.channel.idle();
      const cards = r.emulator.messages.listMessages().filter((m) => m.parentId === messageId);
      expect(cards).toHaveLength(1);
      expect(
        r.core.store
          .history(r.core.runner.currentRun(`feishu-${r.emulator.appId}-private-${ALICE}`)!.sessionId)
          .filter((m) => m.role === "user"),
      ).toHaveLength(1);
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
      // A submit for a question this process never asked (a stale card, a forged request id).
      const stale = await r.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value: { kind: "feishu_ask", act: "submit", sessionId: "s", requestId: "never-asked", sender: ALICE },
      });
      expect(stale.toast?.content).toBe("问题已失效");
    });

    it("answers a non-text message politely", async () => {
      const r = await rig();
      const messageId = await r.send({
        chatType: "p2p",
        senderOpenId: ALICE,
        text: "",
        messageType: "image",
      });
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
        return isCompleted(c) && c;
      }, "the run to finish after the timeout");
      expect(formsOn(final)).toEqual([]);
      expect(cardText(final)).toContain("没有收到你的回答");
    });
  });

  describe("Feishu channel under platform faults, restarts and other surfaces", () => {
    it("lands the final state through a 230020 storm, with a bounded number of calls", async () => {
      const r = await rig({ cardPatchIntervalMs: 200 });
      const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/long" });
      const cardId = await r.progressCard(userMessageId);
      r.emulator.injectFault({
        match: { method: "PATCH", path: "/open-apis/im/v1/messages/" },
        times: 4,
        response: { httpStatus: 400, code: 230020, msg: "rate limited" },
      });
      const final = await r.until(
        () => {
          const c = r.cardOf(cardId);
          return isCompleted(c) && c;
        },
        "the completed card",
        20_000,
      );
      expect(cardText(final), cardText(final)).toContain("`/long` 执行了 20 步");
      const patches = r.emulator.callsTo("PATCH", `/open-apis/im/v1/messages/${cardId}`);
      expect(patches.filter((c) => c.code === 230020)).toHaveLength(4);
      // 20 steps at 5 ms each plus back-off: far fewer PATCHes than state changes, and no unbounded loop.
      expect(patches.length).toBeLessThan(30);
    });

    it("stops publishing a card older than 14 days (230031)", async () => {
      const r = await rig({ stepMs: 50 });
      const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/long" });
      const cardId = await r.progressCard(userMessageId);
      await r.until(
        () => r.emulator.callsTo("PATCH", `/open-apis/im/v1/messages/${cardId}`).length > 0,
        "a first PATCH",
      );
      r.emulator.clock.advance(15 * 24 * 60 * 60 * 1000);
      await r.core.runner.idle();
      await r.channel.idle();
      const patches = r.emulator.callsTo("PATCH", `/open-apis/im/v1/messages/${cardId}`);
      expect(patches.filter((c) => c.code === 230031)).toHaveLength(1);
      expect(patches.at(-1)?.code).toBe(230031);
      expect(
        r.channel.activeCard(r.core.runner.currentRun(`feishu-${r.emulator.appId}-private-${ALICE}`)!.id),
      ).toBeUndefined();
    });

    it("withdraws the form from the card when another surface answers first; a later submit gets 问题已失效", async () => {
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
        r.core.registry.complete(ask.sessionId, requestId, answers, { surface: "websocket", userId: ALICE }),
      ).toBe(true);
      await r.until(() => formsOn(r.cardOf(cardId)).length === 0, "the form to leave the card");
      const late = await r.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value,
        name: "ask0_submit",
        formValue: { ask0_q0: "1", ask0_q1: ["1"] },
      });
      expect(late.toast).toEqual({ type: "warning", content: "问题已失效" });
      // The response carries the card while the channel still tracks it (the task may have finished and its
      // card been let go already); either way no form comes back.
      if (late.card) expect(formsOn(late.card.data)).toEqual([]);
      expect(formsOn(r.cardOf(cardId))).toEqual([]);
    });

    it("tells WebSocket clients the question is gone when the card answers it first", async () => {
      const r = await rig({ withServer: true });
      const desktop = await r.connect(ALICE);
      const { cardId, requestId } = await askedInPrivate(r);
      await r.until(
        () => desktop.frames.some((f) => f.type === "ask_user_questions"),
        "the ask on the desktop",
      );
      const response = await r.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value: submitValue(r, requestId),
        name: "ask0_submit",
        formValue: { ask0_q0: "0", ask0_q1: ["1"] },
      });
      expect(response.toast?.content).toBe("已提交");
      const cancelled = await r.until(
        () => desktop.frames.find((f) => f.type === "ask_user_questions_cancelled"),
        "ask_user_questions_cancelled on the desktop",
      );
      expect(cancelled.data).toEqual({ requestId, reason: "answered via feishu" });
      const audit = auditForSession(
        r.core.store.db,
        r.core.registry.get(requestId)?.sessionId ?? `feishu-${r.emulator.appId}-private-${ALICE}`,
      );
      expect(audit).toMatchObject([
        {
          requestId,
          surfaces: ["websocket", "feishu"],
          outcome: "answered",
          answeredBy: ALICE,
          answeredVia: "feishu",
        },
      ]);
    });

    it("sends no ping when FEISHU_ASK_PING is off", async () => {
      const r = await rig({ askPing: false });
      await askedInPrivate(r);
      await r.channel.idle();
      const fromBot = r.emulator.messages.listMessages().filter((m) => m.senderType === "app");
      expect(fromBot.map((m) => m.msgType)).toEqual(["interactive"]);
    });

    it("cancels the task for its sender only, and retries it with a new card", async () => {
      const r = await rig();
      const { cardId, userMessageId } = await askedInPrivate(r);
      const sessionId = `feishu-${r.emulator.appId}-private-${ALICE}`;
      const run = r.core.runner.activeRun(sessionId)!;
      const cancel = { kind: "progress", act: "cancel", sessionId, runId: run.id, sender: ALICE };
      expect((await r.click({ messageId: cardId, operatorOpenId: BOB, value: cancel })).toast?.content).toBe(
        "仅消息发送者可操作",
      );
      const cancelled = await r.click({ messageId: cardId, operatorOpenId: ALICE, value: cancel });
      expect(cancelled.toast).toEqual({ type: "success", content: "已取消任务" });
      expect(cardText(cancelled.card!.data)).toContain("已取消");
      expect(formsOn(cancelled.card!.data)).toEqual([]);
      await r.until(() => cardText(r.cardOf(cardId)).includes("任务已取消"), "the cancelled card");

      const retry = { ...cancel, act: "retry" };
      expect((await r.click({ messageId: cardId, operatorOpenId: ALICE, value: retry })).toast?.content).toBe(
        "已重新开始",
      );
      await r.until(
        () =>
          r.emulator.messages
            .listMessages()
            .filter((m) => m.parentId === userMessageId && m.msgType === "interactive").length === 2,
        "a second progress card for the retry",
      );
    });

    it("queues a message while a task runs, with 插队 and 取消排队 for its sender", async () => {
      const r = await rig({ stepMs: 40 });
      const first = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/long" });
      await r.progressCard(first);
      const second = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/quick second" });
      const third = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/quick third" });
      const secondCard = await r.progressCard(second);
      const thirdCard = await r.progressCard(third);
      // The card is in the emulator before the bot has read the reply and recorded it: let it finish.
      await r.channel.idle();
      expect(cardText(r.cardOf(thirdCard))).toContain("排在第 2 位");
      const sessionId = `feishu-${r.emulator.appId}-private-${ALICE}`;
      const [q2, q3] = r.core.runner.queued(sessionId);
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
      await r.core.runner.idle();
      await r.channel.idle();
      const inputs = r.core.store
        .history(sessionId)
        .filter((m) => m.role === "user")
        .map((m) => m.content);
      expect(inputs).toEqual(["/long", "/quick third"]);
      expect(cardText(r.cardOf(thirdCard))).toContain("已开始执行");
      // The started card still quotes the message it answers.
      expect(cardText(r.cardOf(thirdCard))).toContain("/quick third");
    });

    it("after a restart mid-ask, shows the same form again and takes the old form's answer as the original call's result", async () => {
      const emulator = await startEmulator({ encryptKey: WEBHOOK_KEY });
      closers.push(() => emulator.close());
      const first = await startFeishuRig({ emulator, transport });
      const payload = emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "帮我部署" });
      const userMessageId = payload.event.message.message_id;
      await first.deliver(payload);
      const cardId = await first.progressCard(userMessageId);
      const card = await first.until(() => {
        const c = first.cardOf(cardId);
        return formsOn(c).length > 0 && c;
      }, "a form");
      const requestId = requestIdsOn(card)[0]!;
      const submit = submitValue(first, requestId);
      const seen: string[] = [];
      emulator.on("message_patched", ({ message }) => {
        if (message.messageId === cardId) seen.push(message.content);
      });
      await first.stop(); // the process goes away while the question waits; Feishu (the emulator) stays

      const second = await rig({ emulator, dataDir: first.dataDir, recover: true });
      await second.until(() => seen.length > 0, "the first PATCH after the restart");
      // The durable ask: the first PATCH carries the form again, under the same request id.
      expect(requestIdsOn(JSON.parse(seen[0]!))).toEqual([requestId]);
      expect(seen[0]).not.toContain("任务正在恢复执行");
      const answered = await second.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value: submit,
        name: "ask0_submit",
        formValue: { ask0_q0: "1", ask0_q1: ["0"] },
      });
      expect(answered.toast).toEqual({ type: "success", content: strings.feishu.submitted });
      await second.core.runner.idle();
      const history = second.core.store.history(`feishu-${emulator.appId}-private-${ALICE}`);
      const tools = history.filter((m) => m.role === "tool");
      // The scan before the question is not run again; the ask's one result is the answer given after the restart.
      expect(tools.filter((m) => m.toolName === "scan_workspace")).toHaveLength(1);
      const asks = tools.filter((m) => m.toolName === "ask_user_questions");
      expect(asks).toHaveLength(1);
      expect(JSON.parse(asks[0]!.content).answers[0].selectedLabels).toEqual([
        DEMO_QUESTIONS.deploy.options[1]!.label,
      ]);
      // Feishu redelivers the original message after the restart: it must not start a second run.
      await second.deliver(payload);
      await second.channel.idle();
      const cards = emulator.messages
        .listMessages()
        .filter((m) => m.parentId === userMessageId && m.msgType === "interactive");
      expect(cards).toHaveLength(1);
      const sessionId = `feishu-${emulator.appId}-private-${ALICE}`;
      expect(second.core.store.history(sessionId).filter((m) => m.role === "user")).toHaveLength(1);
    });
  });
});

describe("Feishu channel, first reply under faults", () => {
  it("retries the progress card's reply after a 429 and a 5xx, so the task still gets its card", async () => {
    const r = await startFeishuRig();
    rigs.push(r);
    r.emulator.injectFault({
      match: { method: "POST", path: /\/reply$/ },
      times: 1,
      response: { httpStatus: 429, code: 99991400, headers: { "x-ogw-ratelimit-reset": "1" } },
    });
    r.emulator.injectFault({
      match: { method: "POST", path: /\/reply$/ },
      times: 1,
      response: { httpStatus: 502 },
    });
    const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/quick" });
    const cardId = await r.progressCard(userMessageId);
    await r.until(() => isCompleted(r.cardOf(cardId)), "the completed card");
    expect(r.emulator.messages.listMessages().filter((m) => m.parentId === userMessageId)).toHaveLength(1);
    const replies = r.emulator.callsTo("POST", /\/reply$/).map((call) => call.status);
    expect(replies.slice(0, 3)).toEqual([429, 502, 200]);
  });
});
