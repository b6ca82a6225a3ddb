import type { InboundMessage } from "../../src/feishu/events.ts";

/** A plain group text message as `parseMessageEvent` gives it, for routing tests (topics.ts `routeInbound`). */
export const GROUP_TEXT: InboundMessage = {
  eventId: "ev",
  messageId: "om_msg",
  chatId: "oc_team",
  chatType: "group",
  messageType: "text",
  rawText: "hi",
  mentions: [],
  senderOpenId: "ou_alice",
  senderType: "user",
  threadId: undefined,
  rootId: undefined,
  parentId: undefined,
};

/** routeInbound's options for app `cli_a1`, without FEISHU_REPLY_IN_THREAD. */
export const ROUTE_OPTIONS = { appId: "cli_a1", dataDir: "/data", replyInThread: false };
