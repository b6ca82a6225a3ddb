import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { feishuGroupSessionId, feishuTopicSessionId } from "../src/domain/session-id.ts";
import type { MessageView } from "../src/local/emulator/types.ts";
import { strings } from "../src/strings/index.ts";
import {
  eachTransport,
  type FakeChannelOptions,
  type FakeChannelRig,
  startFakeChannel,
} from "./helpers/fake-channel.ts";
import { formsOn } from "./helpers/feishu.ts";

/**
 * Where the bot answers a topic (issue 19), on the fake messenger and fake time: every reply of a topic
 * session — the card, the queue card, the @-ping, texts, /login, the gone notice — lands in its thread, and
 * nothing in the group's main flow. What decides is the topic recorded on the session (topics.ts
 * `threadReply`), one rule for all of them.
 */

const ALICE = "ou_alice000000000000000000000000000";
const BOB = "ou_bob00000000000000000000000000000";
const GROUP = "oc_group_emulator";

const rigs: FakeChannelRig[] = [];
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
  vi.useRealTimers();
});

async function rig(options: FakeChannelOptions = {}): Promise<FakeChannelRig> {
  const started = await startFakeChannel({ askTimeoutMs: 15 * 60_000, ...options });
  rigs.push(started);
  return started;
}

/** The bot's message replying to `parentId` of `msgType`, once there is one. */
function replyTo(
  r: FakeChannelRig,
  parentId: string,
  msgType: "text" | "interactive",
): MessageView | undefined {
  return r.fromBot().find((m) => m.parentId === parentId && m.msgType === msgType);
}

const waitReply = (r: FakeChannelRig, parentId: string, msgType: "text" | "interactive") =>
  r.until(() => replyTo(r, parentId, msgType), `a ${msgType} reply to ${parentId}`);

eachTransport(() => {
  describe("with FEISHU_REPLY_IN_THREAD=on, a task from a plain group message", () => {
    it("puts its card, the @-ping, the queue card and a text reply in one thread under the message", async () => {
      const r = await rig({ replyInThread: true });
      const root = r.send({ chatType: "group", senderOpenId: ALICE, text: "帮我部署", mentionBot: true });
      const card = await waitReply(r, root, "interactive");
      expect(card.threadId).toMatch(/^omt_/);
      const thread = card.threadId;
      const topicId = feishuTopicSessionId(r.fake.appId, GROUP, root);
      await r.until(() => formsOn(r.cardOf(card.messageId)).length > 0, "a form on the card");
      // The @-mention that points Alice at the form: inside the thread, not in the group's flow.
      const ping = await r.until(
        () => r.fromBot().find((m) => m.msgType === "text" && m.content.includes(ALICE)),
        "the @-ping",
      );
      expect(ping.threadId).toBe(thread);

      // A follow-up in the thread reaches the same session and queues behind the question: its card too.
      const followUp = r.send({
        chatType: "group",
        senderOpenId: ALICE,
        text: "再部署一次",
        mentionBot: true,
        parentId: root,
        inThread: true,
      });
      const queued = await waitReply(r, followUp, "interactive");
      expect(await r.core.runner.queued(topicId)).toHaveLength(1);
      expect(queued.threadId).toBe(thread);

      // A message the bot cannot read, sent as a plain group message: its own topic, answered in its thread.
      const image = r.send({
        chatType: "group",
        senderOpenId: BOB,
        text: "",
        messageType: "image",
        mentionBot: true,
      });
      // And one inside the task's thread: answered there.
      const sticker = r.send({
        chatType: "group",
        senderOpenId: BOB,
        text: "",
        messageType: "sticker",
        mentionBot: true,
        parentId: root,
        inThread: true,
      });
      expect((await waitReply(r, sticker, "text")).threadId).toBe(thread);
      const nonText = await waitReply(r, image, "text");
      expect(nonText.content).toContain(strings.feishu.nonText);
      expect(nonText.threadId).toMatch(/^omt_/);
      await r.idle();
      expect(r.fromBot().filter((m) => m.threadId === undefined)).toEqual([]);
      // What decided all of it: the topic recorded on the session.
      expect((await r.core.runner.getSession(topicId))?.topic).toEqual({
        chatId: GROUP,
        rootMessageId: root,
        groupSessionId: feishuGroupSessionId(r.fake.appId, GROUP),
      });
    });

    it("answers /login in a thread under it too", async () => {
      const r = await rig({
        replyInThread: true,
        signInLink: async (userId) => ({
          url: `http://localhost/login?u=${userId}`,
          expiresAt: Date.now() + 60_000,
        }),
      });
      const login = r.send({ chatType: "group", senderOpenId: ALICE, text: "/login", mentionBot: true });
      const reply = await waitReply(r, login, "text");
      expect(reply.threadId).toMatch(/^omt_/);
    });

    it("without it, answers the same messages in the group's main flow", async () => {
      const r = await rig();
      const image = r.send({
        chatType: "group",
        senderOpenId: BOB,
        text: "",
        messageType: "image",
        mentionBot: true,
      });
      const root = r.send({ chatType: "group", senderOpenId: ALICE, text: "/quick", mentionBot: true });
      expect((await waitReply(r, image, "text")).threadId).toBeUndefined();
      expect((await waitReply(r, root, "interactive")).threadId).toBeUndefined();
    });
  });

  describe("a chat whose id reads like another chat's topic", () => {
    it("is refused at the edge: no session, no task, no reply in anyone's thread", async () => {
      const r = await rig();
      const lookalike = "oc_group_emulator-topic-om_root";
      const id = r.send({
        chatType: "group",
        chatId: lookalike,
        senderOpenId: ALICE,
        text: "/quick",
        mentionBot: true,
      });
      await r.idle();
      expect(await r.core.runner.getSession(feishuGroupSessionId(r.fake.appId, lookalike))).toBeUndefined();
      expect(
        await r.core.runner.getSession(feishuTopicSessionId(r.fake.appId, GROUP, "om_root")),
      ).toBeUndefined();
      expect(replyTo(r, id, "interactive")).toBeUndefined();
      expect(r.fromBot()).toEqual([]);
    });
  });

  describe("a topic's card that is gone", () => {
    it("is told inside the topic, replying to its root when the message that started it is gone too", async () => {
      const r = await rig();
      // Someone's message the bot was not asked about; Alice starts a task in a thread under it.
      const root = r.send({ chatType: "group", senderOpenId: BOB, text: "发布计划" });
      const source = r.send({
        chatType: "group",
        senderOpenId: ALICE,
        text: "帮我部署",
        mentionBot: true,
        parentId: root,
        inThread: true,
      });
      const card = await waitReply(r, source, "interactive");
      await r.until(() => formsOn(r.cardOf(card.messageId)).length > 0, "a form on the card");
      r.fake.recallMessage(card.messageId);
      r.fake.recallMessage(source);
      // The next message in the topic is what finds the card gone (no PATCH goes out while a form is open).
      r.send({
        chatType: "group",
        senderOpenId: ALICE,
        text: "/quick",
        mentionBot: true,
        parentId: root,
        inThread: true,
      });
      const notice = await r.until(
        () => r.fromBot().find((m) => m.msgType === "text" && m.content.includes("已被撤回或删除")),
        "the notice",
      );
      expect(notice).toMatchObject({ parentId: root, threadId: card.threadId });
    });

    it("says nothing when the topic's root is gone as well, rather than open a new topic", async () => {
      const r = await rig({ replyInThread: true });
      const root = r.send({ chatType: "group", senderOpenId: ALICE, text: "帮我部署", mentionBot: true });
      const card = await waitReply(r, root, "interactive");
      await r.until(() => formsOn(r.cardOf(card.messageId)).length > 0, "a form on the card");
      const ping = await r.until(
        () => r.fromBot().find((m) => m.msgType === "text" && m.content.includes(ALICE)),
        "the @-ping",
      );
      r.fake.recallMessage(card.messageId);
      r.fake.recallMessage(root);
      const sessionId = feishuTopicSessionId(r.fake.appId, GROUP, root);
      const runId = r.core.runner.activeRun(sessionId)?.id ?? "";
      // Alice answers the ping in the thread: that message queues, and finds the card gone.
      r.send({
        chatType: "group",
        senderOpenId: ALICE,
        text: "/quick",
        mentionBot: true,
        parentId: ping.messageId,
        inThread: true,
      });
      await r.until(async () => (await r.core.store.getRun(runId))?.status === "failed", "the run to end");
      await r.idle();
      expect(r.fromBot().filter((m) => m.msgType === "text" && m.content.includes("已被撤回或删除"))).toEqual(
        [],
      );
      expect(r.fromBot().filter((m) => m.threadId === undefined)).toEqual([]);
    });
  });
});
