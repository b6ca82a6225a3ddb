import { afterEach, describe, expect, it } from "vitest";
import { signToken } from "../src/auth/token.ts";
import {
  feishuGroupSessionId as groupSessionId,
  feishuTopicSessionId as topicSessionId,
} from "../src/domain/session-id.ts";
import { startEmulator } from "../src/local/emulator/index.ts";
import { createLogger } from "../src/logger.ts";
import { SESSION_COOKIE } from "../src/web/cookie.ts";
import { mountSessionPages } from "../src/web/session-page.ts";
import {
  cardText,
  type FeishuRig,
  formsOn,
  requestIdsOn,
  startFeishuRig,
  WEBHOOK_KEY,
} from "./helpers/feishu.ts";
import { ALICE, BOB, completed, isCompleted, message, TOPICS } from "./helpers/topics.ts";

/** A topic session across a restart, and as the session page and the WebSocket show it (issue 19). */

const rigs: FeishuRig[] = [];
const transport: "ws" | "webhook" = "ws";
async function rig(options: Parameters<typeof startFeishuRig>[0] = {}): Promise<FeishuRig> {
  const started = await startFeishuRig({ transport, ...options });
  started.emulator.setChatMode(TOPICS, "topic");
  rigs.push(started);
  return started;
}
const emulators: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
  for (const emulator of emulators.splice(0)) await emulator.close();
});

describe.each(["ws", "webhook"] as const)("a topic across a restart, over the %s transport", (name) => {
  it("keeps the topic's question, queue and thread: the old form answers, the queued message's card is in the topic", async () => {
    const emulator = await startEmulator({ encryptKey: WEBHOOK_KEY, topicGroups: [TOPICS] });
    emulators.push(emulator);
    const first = await startFeishuRig({ emulator, transport: name });
    const rootId = await first.send({
      chatId: TOPICS,
      chatType: "group",
      senderOpenId: ALICE,
      text: "部署",
      mentionBot: true,
    });
    const cardId = await first.progressCard(rootId);
    const card = await first.until(() => {
      const c = first.cardOf(cardId);
      return formsOn(c).length > 0 && c;
    }, "a form");
    const requestId = requestIdsOn(card)[0] ?? "";
    const sessionId = topicSessionId(emulator.appId, TOPICS, rootId);
    const followUp = await first.send({
      chatType: "group",
      senderOpenId: ALICE,
      text: "/quick 之后",
      mentionBot: true,
      parentId: rootId,
    });
    await first.until(
      async () => (await first.core.runner.queued(sessionId)).length === 1,
      "the follow-up queued in the topic",
    );
    await first.stop();

    const second = await startFeishuRig({ emulator, transport: name, dataDir: first.dataDir, recover: true });
    rigs.push(second);
    const answered = await second.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: { kind: "feishu_ask", act: "submit", sessionId, requestId, sender: ALICE },
      name: "ask0_submit",
      formValue: { ask0_q0: "0", ask0_q1: ["1"] },
    });
    expect(answered.toast?.content).toBe("已提交");
    await completed(second, cardId);
    const followCard = await second.until(
      () =>
        emulator.messages
          .listMessages(TOPICS)
          .find(
            (m) =>
              m.parentId === followUp &&
              m.senderType === "app" &&
              cardText(second.cardOf(m.messageId)).includes("之后") &&
              isCompleted(second.cardOf(m.messageId)),
          )?.messageId,
      "the queued message's completed card",
    );
    expect(message(second, followCard).threadId).toBe(message(second, rootId).threadId);
    expect(await second.core.store.recentRuns(sessionId, 10)).toHaveLength(2);
  });
});

describe("topic sessions on the session page and over the WebSocket", () => {
  it("titles a topic session recognisably and says which group and message it belongs to", async () => {
    const r = await rig({
      transport: "webhook",
      routes: ({ core }) => [
        (app) =>
          mountSessionPages(app, {
            runs: core.runs,
            authSecret: "test-secret-0123456789",
            now: Date.now,
            logger: createLogger({ level: "silent" }),
          }),
      ],
    });
    const rootId = await r.send({
      chatId: TOPICS,
      chatType: "group",
      senderOpenId: ALICE,
      text: "/quick 周报整理",
      mentionBot: true,
    });
    await completed(r, await r.progressCard(rootId));
    const sessionId = topicSessionId(r.emulator.appId, TOPICS, rootId);
    const topic = {
      chatId: TOPICS,
      rootMessageId: rootId,
      groupSessionId: groupSessionId(r.emulator.appId, TOPICS),
    };

    // Bob never wrote in this topic; a click on one of the bot's cards in the group makes him a member of it.
    r.channel.noteChatMember(TOPICS, BOB);
    const asBob = `${SESSION_COOKIE}=${signToken("test-secret-0123456789", BOB, Date.now() + 60_000)}`;
    const page = await fetch(`${r.httpUrl}/api/sessions/${encodeURIComponent(sessionId)}`, {
      headers: { cookie: asBob },
    });
    expect(page.status).toBe(200);
    expect(await page.json()).toEqual({
      id: sessionId,
      title: "飞书群聊话题：/quick 周报整理",
      channel: "feishu",
      chatType: "group",
      topic,
    });

    const ws = await r.connect(BOB);
    ws.send({ type: "subscribe", sessionId });
    const subscribed = await r.until(
      () => ws.frames.find((frame) => frame.type === "subscribed"),
      "subscribed",
    );
    expect(subscribed.data).toEqual({
      canAnswer: false,
      canCancel: true,
      topic,
      title: "飞书群聊话题：/quick 周报整理",
    });
    ws.close();

    // Someone the bot never saw in the group may not view it.
    const asCarol = `${SESSION_COOKIE}=${signToken("test-secret-0123456789", "ou_carol", Date.now() + 60_000)}`;
    const refused = await fetch(`${r.httpUrl}/api/sessions/${encodeURIComponent(sessionId)}`, {
      headers: { cookie: asCarol },
    });
    expect(refused.status).toBe(403);
  });
});
