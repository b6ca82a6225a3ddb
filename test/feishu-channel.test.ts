import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { DEMO_QUESTIONS } from "../src/harness/agents/demo.ts";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";
import { auditForSession } from "../src/store/audit.ts";
import { sqliteSql } from "../src/store/sql.ts";
import { strings } from "../src/strings/index.ts";
import {
  cardText,
  type FeishuRig,
  formsOn,
  requestIdsOn,
  startFeishuRig,
  WEBHOOK_KEY,
} from "./helpers/feishu.ts";

/**
 * The thin end-to-end layer: a few flows through the official SDK, the emulator and each transport (the
 * long connection's frames and acks, signed and encrypted webhooks), the WebSocket hub and a restart. The
 * channel's policy (forms, callbacks, faults, queue, timeouts) runs on the fake messenger and fake time in
 * test/channel-scenarios.test.ts, whose messenger is held to the SDK's by test/messenger-contract.test.ts.
 */

const ALICE = "ou_alice000000000000000000000000000";

const rigs: FeishuRig[] = [];
const closers: (() => Promise<void>)[] = [];
/** The transport the current suite runs over; every callback test runs over both. */
let transport: "ws" | "webhook" = "ws";
/** How the cards are updated (FEISHU_CARD_TRANSPORT): every scenario runs with IM PATCH and with CardKit. */
let cardTransport: "im" | "cardkit" = "im";
async function rig(options: Parameters<typeof startFeishuRig>[0] = {}): Promise<FeishuRig> {
  const started = await startFeishuRig({ transport, cardTransport, ...options });
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

/**
 * The card went by the transport under test alone: IM PATCHes, or CardKit operations that all succeeded (no
 * 300317 after a restart) and no PATCH.
 */
function expectCardsBy(emulator: Emulator, messageId: string): void {
  const patches = emulator.calls.filter(
    (c) => c.method === "PATCH" && c.path === `/open-apis/im/v1/messages/${messageId}`,
  );
  const cardkit = emulator.calls.filter((c) => c.path.startsWith("/open-apis/cardkit/"));
  if (cardTransport === "im") {
    expect(cardkit).toEqual([]);
    expect(patches.length).toBeGreaterThan(0);
    return;
  }
  expect(patches).toEqual([]);
  expect(cardkit.length).toBeGreaterThan(0);
  expect(cardkit.filter((c) => c.code !== 0).map((c) => c.code)).toEqual([]);
}

/** The completed state: green header (the summary line "已完成 N 步" appears while running too). */
const isCompleted = (card: { header?: { template: string } }) => card.header?.template === "green";

const submitValue = (r: FeishuRig, requestId: string, sender = ALICE) => {
  const ask = r.core.registry.get(requestId);
  return { kind: "feishu_ask", act: "submit", sessionId: ask?.sessionId ?? "", requestId, sender };
};

describe.each([
  ["ws", "im"],
  ["webhook", "im"],
  ["ws", "cardkit"],
  ["webhook", "cardkit"],
] as const)("over the %s transport, cards by %s", (name, cards) => {
  beforeAll(() => {
    transport = name;
    cardTransport = cards;
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
      await r.channel.idle();
      expectCardsBy(r.emulator, cardId);
      // In a private chat the card is the notification: no @-mention reminder (test/ask-reminder.test.ts).
      await r.channel.idle();
      const fromBot = r.emulator.messages.listMessages().filter((m) => m.senderType === "app");
      expect(fromBot.map((m) => m.msgType)).toEqual(["interactive"]);
    });
  });

  describe("Feishu channel across restarts and other surfaces", () => {
    it("takes a text reply quoting the card as the answer, and tells WebSocket clients (issue 30)", async () => {
      const r = await rig({ withServer: true });
      const desktop = await r.connect(ALICE);
      const { cardId, requestId } = await askedInPrivate(r);
      // parent_id and root_id reach the bot as Feishu sets them for a quote reply.
      await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "1:2 2:1、3", parentId: cardId });
      const cancelled = await r.until(
        () => desktop.frames.find((f) => f.type === "ask_user_questions_cancelled"),
        "ask_user_questions_cancelled on the desktop",
      );
      expect(cancelled.data).toEqual({ requestId, reason: "answered via reply" });
      const final = await r.until(() => {
        const c = r.cardOf(cardId);
        return isCompleted(c) && c;
      }, "the completed card");
      expect(cardText(final)).toContain("Kubernetes");
      expect(cardText(final)).toContain("已回复卡片作答");
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
      const audit = await auditForSession(
        sqliteSql(r.core.store.db),
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

    it("after a restart mid-ask, shows the same form again and takes the old form's answer as the original call's result", async () => {
      const emulator = await startEmulator({ encryptKey: WEBHOOK_KEY });
      closers.push(() => emulator.close());
      const first = await startFeishuRig({ emulator, transport, cardTransport });
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
      const history = await second.core.store.history(`feishu-${emulator.appId}-private-${ALICE}`);
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
      expect((await second.core.store.history(sessionId)).filter((m) => m.role === "user")).toHaveLength(1);
      // A CardKit card continues on its entity after the restart, above every sequence used before it.
      expectCardsBy(emulator, cardId);
    });
  });
});
