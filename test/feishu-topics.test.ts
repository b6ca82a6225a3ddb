import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  feishuGroupSessionId as groupSessionId,
  feishuTopicSessionId as topicSessionId,
} from "../src/domain/session-id.ts";
import { cardText, type FeishuRig, formsOn, startFeishuRig } from "./helpers/feishu.ts";
import { ALICE, BOB, completed, GROUP, message, replyBodies, TOPICS } from "./helpers/topics.ts";

/**
 * Topics and threads as sessions of their own (issue 19), end to end: the real SDK, the emulator's topic
 * groups and threads, the demo agent, over both transports.
 */

const rigs: FeishuRig[] = [];
let transport: "ws" | "webhook" = "ws";
async function rig(options: Parameters<typeof startFeishuRig>[0] = {}): Promise<FeishuRig> {
  const started = await startFeishuRig({ transport, ...options });
  started.emulator.setChatMode(TOPICS, "topic");
  rigs.push(started);
  return started;
}
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
});

describe.each(["ws", "webhook"] as const)("topics over the %s transport", (name) => {
  beforeAll(() => {
    transport = name;
  });

  it("gives a message in a topic its own session, and replies with its card inside the topic", async () => {
    const r = await rig();
    const rootId = await r.send({
      chatId: TOPICS,
      chatType: "group",
      senderOpenId: ALICE,
      text: "/quick 部署",
      mentionBot: true,
    });
    const cardId = await r.progressCard(rootId);
    const root = message(r, rootId);
    expect(root.threadId).toMatch(/^omt_/);
    expect(message(r, cardId).threadId).toBe(root.threadId);
    expect(replyBodies(r, rootId)).toEqual([expect.objectContaining({ reply_in_thread: true })]);

    const sessionId = topicSessionId(r.emulator.appId, TOPICS, rootId);
    expect(await r.core.runner.getSession(sessionId)).toMatchObject({
      chatType: "group",
      chatId: TOPICS,
      title: "飞书群聊话题：/quick 部署",
    });
    expect((await r.core.runner.getSession(sessionId))?.workspace.replaceAll("\\", "/")).toContain(
      `/feishu-chat/${TOPICS}/topics/${rootId}`,
    );
    // The group's own session was never opened: nothing went to the main flow.
    expect(await r.core.runner.getSession(groupSessionId(r.emulator.appId, TOPICS))).toBeUndefined();
    await completed(r, cardId);
    expect((await r.core.runner.currentRun(sessionId))?.status).toBe("completed");
  });

  it("keeps a follow-up that arrives without thread_id in its topic, as the field sees topic-group replies", async () => {
    const r = await rig();
    const rootId = await r.send({
      chatId: TOPICS,
      chatType: "group",
      senderOpenId: ALICE,
      text: "/quick 一",
      mentionBot: true,
    });
    const firstCard = await r.progressCard(rootId);
    await completed(r, firstCard);
    // root_id and parent_id, no thread_id: larksuite/openclaw-lark's note on topic groups (feishu-platform §5.1).
    const followUp = await r.send({
      chatType: "group",
      senderOpenId: ALICE,
      text: "/quick 二",
      mentionBot: true,
      parentId: rootId,
      eventWithoutThreadId: true,
    });
    const secondCard = await r.progressCard(followUp);
    expect(replyBodies(r, followUp)).toEqual([expect.objectContaining({ reply_in_thread: true })]);
    expect(message(r, secondCard).threadId).toBe(message(r, rootId).threadId);
    await completed(r, secondCard);
    const sessionId = topicSessionId(r.emulator.appId, TOPICS, rootId);
    expect(await r.core.store.recentRuns(sessionId, 10)).toHaveLength(2);
    expect(await r.core.runner.getSession(groupSessionId(r.emulator.appId, TOPICS))).toBeUndefined();
  });

  it("runs two topics of one group independently: two cards, two queues", async () => {
    const r = await rig();
    const first = await r.send({
      chatId: TOPICS,
      chatType: "group",
      senderOpenId: ALICE,
      text: "任务一",
      mentionBot: true,
    });
    const second = await r.send({
      chatId: TOPICS,
      chatType: "group",
      senderOpenId: BOB,
      text: "任务二",
      mentionBot: true,
    });
    const firstCard = await r.progressCard(first);
    const secondCard = await r.progressCard(second);
    // Both wait on their own question at once: neither topic waits behind the other.
    await r.until(
      () => formsOn(r.cardOf(firstCard)).length > 0 && formsOn(r.cardOf(secondCard)).length > 0,
      "two forms",
    );
    const one = topicSessionId(r.emulator.appId, TOPICS, first);
    const two = topicSessionId(r.emulator.appId, TOPICS, second);
    expect(r.core.runner.activeRun(one)?.senderId).toBe(ALICE);
    expect(r.core.runner.activeRun(two)?.senderId).toBe(BOB);

    // A follow-up in the first topic queues behind the first task only, and its queue card is in that topic.
    const followUp = await r.send({
      chatType: "group",
      senderOpenId: ALICE,
      text: "再来一个",
      mentionBot: true,
      parentId: first,
    });
    expect(message(r, followUp).threadId).toBe(message(r, first).threadId);
    const queuedCard = await r.progressCard(followUp);
    expect(message(r, queuedCard).threadId).toBe(message(r, first).threadId);
    expect((await r.core.runner.queued(one)).map((q) => q.text)).toEqual(["再来一个"]);
    expect(await r.core.runner.queued(two)).toEqual([]);
    expect(message(r, secondCard).threadId).toBe(message(r, second).threadId);
    expect(message(r, secondCard).threadId).not.toBe(message(r, firstCard).threadId);
    // Each topic's @-reminder for its question is posted inside that topic.
    const pings = await r.until(() => {
      const found = r.emulator.messages
        .listMessages(TOPICS)
        .filter(
          (m) => m.senderType === "app" && m.msgType === "text" && m.content.includes("个问题等你回答"),
        );
      return found.length === 2 && found;
    }, "two reminders");
    expect(pings.map((m) => m.threadId).sort()).toEqual(
      [message(r, first).threadId, message(r, second).threadId].sort(),
    );
  });

  it("takes a thread under a message in a normal group as its own session, with the card in the thread", async () => {
    const r = await rig();
    const plain = await r.send({ chatId: GROUP, chatType: "group", senderOpenId: ALICE, text: "讨论一下" });
    const inThread = await r.send({
      chatType: "group",
      senderOpenId: BOB,
      text: "/quick 查一下",
      mentionBot: true,
      parentId: plain,
      inThread: true,
    });
    const cardId = await r.progressCard(inThread);
    const threadId = message(r, inThread).threadId;
    expect(threadId).toMatch(/^omt_/);
    expect(message(r, cardId).threadId).toBe(threadId);
    const sessionId = topicSessionId(r.emulator.appId, GROUP, plain);
    expect((await r.core.runner.getSession(sessionId))?.ownerId).toBe(BOB);
    await completed(r, cardId);
  });

  it("keeps the plain group flow as it was: the group's session, a plain reply in the main flow", async () => {
    const r = await rig();
    const userMessageId = await r.send({
      chatId: GROUP,
      chatType: "group",
      senderOpenId: ALICE,
      text: "/quick",
      mentionBot: true,
    });
    const cardId = await r.progressCard(userMessageId);
    expect(message(r, cardId).threadId).toBeUndefined();
    expect(replyBodies(r, userMessageId)).toEqual([
      expect.not.objectContaining({ reply_in_thread: expect.anything() }),
    ]);
    const sessionId = groupSessionId(r.emulator.appId, GROUP);
    expect(sessionId).toBe(`feishu-${r.emulator.appId}-group-${GROUP}`);
    expect(await r.core.runner.getSession(sessionId)).toMatchObject({ title: "飞书群聊", chatType: "group" });
    // A quote reply (root_id without a thread) stays in the group's session too.
    await completed(r, cardId);
    const quote = await r.send({
      chatType: "group",
      senderOpenId: ALICE,
      text: "/quick 再来",
      mentionBot: true,
      parentId: cardId,
    });
    const quoteCard = await r.progressCard(quote);
    expect(message(r, quoteCard).threadId).toBeUndefined();
    await completed(r, quoteCard);
    expect(await r.core.store.recentRuns(sessionId, 10)).toHaveLength(2);
  });

  it("with FEISHU_REPLY_IN_THREAD=on, answers a plain group message in a new thread that then is its session", async () => {
    const r = await rig({ replyInThread: true });
    const start = await r.send({
      chatId: GROUP,
      chatType: "group",
      senderOpenId: ALICE,
      text: "/quick 长任务",
      mentionBot: true,
    });
    const cardId = await r.progressCard(start);
    const threadId = message(r, cardId).threadId;
    expect(threadId).toMatch(/^omt_/);
    expect(message(r, start).threadId).toBe(threadId);
    expect(replyBodies(r, start)).toEqual([expect.objectContaining({ reply_in_thread: true })]);
    await completed(r, cardId);

    // A follow-up inside that thread goes to the same session, and its card stays in the thread.
    const followUp = await r.send({
      chatType: "group",
      senderOpenId: ALICE,
      text: "/quick 接着做",
      mentionBot: true,
      parentId: cardId,
    });
    expect(message(r, followUp).threadId).toBe(threadId);
    const followCard = await r.progressCard(followUp);
    expect(message(r, followCard).threadId).toBe(threadId);
    const final = await completed(r, followCard);
    expect(cardText(final)).toContain("接着做");
    const sessionId = topicSessionId(r.emulator.appId, GROUP, start);
    expect((await r.core.store.recentRuns(sessionId, 10)).map((run) => run.input)).toEqual([
      "/quick 接着做",
      "/quick 长任务",
    ]);
    expect(await r.core.runner.getSession(groupSessionId(r.emulator.appId, GROUP))).toBeUndefined();
  });
});
