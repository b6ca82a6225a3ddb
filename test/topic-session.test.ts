import path from "node:path";
import { describe, expect, it } from "vitest";
import { canViewSession } from "../src/domain/access.ts";
import { feishuSession, parentGroupSessionId, sessionIdOf } from "../src/domain/session-id.ts";
import { topicInfo } from "../src/domain/topic-view.ts";
import type { SessionInfo } from "../src/domain/types.ts";
import { parseMessageEvent } from "../src/feishu/events.ts";
import { routeInbound, threadReply } from "../src/feishu/topics.ts";
import { GROUP_TEXT, ROUTE_OPTIONS } from "./helpers/inbound.ts";

/** A topic's session identity and routing (issue 19); ids written out literally, as they are stored. */

const base = GROUP_TEXT;
const options = ROUTE_OPTIONS;

describe("topic session identity", () => {
  it("names a topic under its group, by the topic's root message, with its workspace under the group's", () => {
    const key = {
      kind: "feishu-topic",
      appId: "cli_a1",
      chatId: "oc_team",
      rootMessageId: "om_root",
    } as const;
    expect(sessionIdOf(key)).toBe("feishu-cli_a1-group-oc_team-topic-om_root");
    expect(
      feishuSession(key, {
        workspacesDir: "/data/workspaces",
        chatId: "oc_team",
        ownerId: "ou_a",
        title: "t",
      }),
    ).toMatchObject({
      chatType: "group",
      workspace: path.join("/data", "workspaces", "feishu-chat", "oc_team", "topics", "om_root"),
    });
  });

  it("records the topic on the session it makes, and every reader reads it from there", () => {
    const where = { workspacesDir: "/data/workspaces", chatId: "oc_team", ownerId: "ou_a", title: "t" };
    const topic = feishuSession(
      { kind: "feishu-topic", appId: "cli_a1", chatId: "oc_team", rootMessageId: "om_root" },
      where,
    );
    const expected = {
      chatId: "oc_team",
      rootMessageId: "om_root",
      groupSessionId: "feishu-cli_a1-group-oc_team",
    };
    expect(topic.topic).toEqual(expected);
    expect(parentGroupSessionId(topic)).toBe("feishu-cli_a1-group-oc_team");
    expect(topicInfo(topic)).toEqual(expected);
    expect(threadReply(topic)).toEqual({ inThread: true });
    const group = feishuSession({ kind: "feishu-group", appId: "cli_a1", chatId: "oc_team" }, where);
    const privateChat = feishuSession({ kind: "feishu-private", appId: "cli_a1", openId: "ou_a" }, where);
    for (const session of [group, privateChat]) {
      expect(session.topic).toBeUndefined();
      expect(threadReply(session)).toEqual({});
      expect(topicInfo(session)).toBeUndefined();
    }
  });

  it("does not take a session for a topic because its id reads like one", () => {
    // What an earlier cut did: a regex on the id made this group session a topic of oc_x.
    const lookalike: SessionInfo = {
      id: "feishu-cli_a1-group-oc_x-topic-om_y",
      channel: "feishu",
      chatType: "group",
      chatId: "oc_x-topic-om_y",
      workspace: "/w",
      ownerId: "ou_a",
      title: "t",
    };
    expect(threadReply(lookalike)).toEqual({});
    expect(topicInfo(lookalike)).toBeUndefined();
    expect(parentGroupSessionId(lookalike)).toBeUndefined();
  });
});

describe("routeInbound", () => {
  it("routes a message in a topic to the topic of its root, replying in the thread", () => {
    const route = routeInbound(
      { ...base, threadId: "omt_1", rootId: "om_root", parentId: "om_root" },
      "部署 staging 环境",
      options,
    );
    expect(route).toMatchObject({ kind: "topic", session: { topic: { rootMessageId: "om_root" } } });
    expect(threadReply(route.session)).toEqual({ inThread: true });
    expect(route.session.id).toBe("feishu-cli_a1-group-oc_team-topic-om_root");
    expect(route.session.title).toBe("飞书群聊话题：部署 staging 环境");
    // A topic group's root message carries the thread id but no root id: it is its own root.
    expect(routeInbound({ ...base, threadId: "omt_1" }, "x", options).session.id).toBe(
      "feishu-cli_a1-group-oc_team-topic-om_msg",
    );
  });

  it("keeps private chats, plain group messages and quote replies where they were", () => {
    expect(
      routeInbound({ ...base, chatType: "p2p", threadId: "omt_1", rootId: "om_r" }, "x", options),
    ).toMatchObject({
      kind: "private",
      session: { id: "feishu-cli_a1-private-ou_alice", title: "飞书私聊" },
    });
    expect(routeInbound(base, "x", options)).toMatchObject({
      kind: "group",
      session: { id: "feishu-cli_a1-group-oc_team", title: "飞书群聊" },
    });
    const quote = { ...base, rootId: "om_r", parentId: "om_r" };
    expect(routeInbound(quote, "x", { ...options, replyInThread: true }).session.id).toBe(
      "feishu-cli_a1-group-oc_team",
    );
  });

  it("takes a reply without thread_id into its root's topic when that topic has a session", () => {
    // The shape larksuite/openclaw-lark reports for topic groups: root_id, no thread_id (feishu-platform §5.1).
    const reply = { ...base, rootId: "om_root", parentId: "om_root" };
    const knownTopic = (rootMessageId: string) => rootMessageId === "om_root";
    const routed = routeInbound(reply, "x", { ...options, knownTopic });
    expect(routed).toMatchObject({
      kind: "topic",
      session: { id: "feishu-cli_a1-group-oc_team-topic-om_root", topic: { rootMessageId: "om_root" } },
    });
    // Its replies go into the topic (the one rule, from the session).
    expect(threadReply(routed.session)).toEqual({ inThread: true });
    // A quote reply to a message that is no topic's root stays in the group, as before.
    expect(
      routeInbound({ ...reply, rootId: "om_other", parentId: "om_other" }, "x", { ...options, knownTopic }),
    ).toMatchObject({ kind: "group", session: { id: "feishu-cli_a1-group-oc_team" } });
  });

  it("with replyInThread, makes a plain group message the root of a topic of its own", () => {
    const route = routeInbound(base, "x", { ...options, replyInThread: true });
    expect(route).toMatchObject({ kind: "topic", session: { topic: { rootMessageId: "om_msg" } } });
    expect(threadReply(route.session)).toEqual({ inThread: true });
    expect(threadReply(routeInbound(base, "x", options).session)).toEqual({});
    expect(route.session.id).toBe("feishu-cli_a1-group-oc_team-topic-om_msg");
  });
});

describe("viewing a topic session", () => {
  const topic: SessionInfo = {
    id: "feishu-cli_a1-group-oc_team-topic-om_root",
    channel: "feishu",
    chatType: "group",
    chatId: "oc_team",
    workspace: "/w",
    ownerId: "ou_alice",
    title: "t",
    topic: { chatId: "oc_team", rootMessageId: "om_root", groupSessionId: "feishu-cli_a1-group-oc_team" },
  };
  /** A group whose id reads like a topic of oc_team (a legacy row; events.ts now refuses such chat ids). */
  const lookalike: SessionInfo = {
    ...topic,
    id: "feishu-cli_a1-group-oc_team-topic-om_other",
    chatId: "oc_team-topic-om_other",
    topic: undefined,
  };
  const now = 1_000_000;
  const seen = new Map<string, number>([["feishu-cli_a1-group-oc_team|ou_bob", now - 1000]]);
  const runner = {
    getSession: async (id: string) => [topic, lookalike].find((session) => session.id === id),
    currentRun: async () => undefined,
    hasQueuedFrom: async () => false,
    lastSeenInChat: async (sessionId: string, userId: string) => seen.get(`${sessionId}|${userId}`),
    now: () => now,
  };

  it("lets a member of the group view its topics, and nobody else", async () => {
    expect(await canViewSession(runner, "ou_bob", topic.id)).toBe(true);
    expect(await canViewSession(runner, "ou_mallory", topic.id)).toBe(false);
  });

  it("does not open a group to another chat's members because its id reads like their topic", async () => {
    expect(await canViewSession(runner, "ou_bob", lookalike.id)).toBe(false);
  });
});

describe("parsing a message's topic ids", () => {
  const event = (message: Record<string, unknown>) => ({
    sender: { sender_id: { open_id: "ou_alice" }, sender_type: "user" },
    message: {
      message_id: "om_1",
      chat_id: "oc_team",
      chat_type: "group",
      message_type: "text",
      content: JSON.stringify({ text: "hi" }),
      ...message,
    },
  });

  it("reads thread_id, root_id and parent_id, an empty string counting as none", () => {
    const parsed = parseMessageEvent(event({ thread_id: "omt_1", root_id: "om_r", parent_id: "" }));
    expect(parsed).toMatchObject({
      ok: true,
      value: { threadId: "omt_1", rootId: "om_r", parentId: undefined },
    });
    expect(parseMessageEvent(event({}))).toMatchObject({
      ok: true,
      value: { threadId: undefined, rootId: undefined, parentId: undefined },
    });
  });

  it("refuses ids that could leave a workspace directory, naming the field", () => {
    expect(parseMessageEvent(event({ root_id: "../../etc" }))).toEqual({
      ok: false,
      error: "message.root_id: must be a platform id (letters, digits and _)",
    });
    expect(parseMessageEvent(event({ message_id: "om_1/../x" }))).toMatchObject({ ok: false });
  });

  it("refuses ids with a '-', which Feishu ids never have, so no chat's id can name another's topic", () => {
    expect(parseMessageEvent(event({ chat_id: "oc_x-topic-om_y" }))).toEqual({
      ok: false,
      error: "message.chat_id: must be a platform id (letters, digits and _)",
    });
    expect(parseMessageEvent(event({ message_id: "om-1" }))).toMatchObject({ ok: false });
    expect(parseMessageEvent(event({ thread_id: "omt-1" }))).toMatchObject({ ok: false });
    expect(parseMessageEvent({ ...event({}), sender: { sender_id: { open_id: "ou_a-private-x" } } })).toEqual(
      { ok: false, error: "sender.sender_id.open_id: must be a platform id (letters, digits and _)" },
    );
  });
});
