import type { EmulatorConfig } from "./context.ts";
import { newId, p2pChatId, unionIdFor } from "./ids.ts";
import type { Observer } from "./observer.ts";
import type { MessageStore, UpdateTokenStore } from "./state.ts";
import type { CardActionInput, MessageView, UserMessageInput } from "./types.ts";

/** Builders for what Feishu pushes to the bot: schema-2.0 events and callbacks (§2.1, §5). */

export interface EventHeader {
  event_id: string;
  event_type: string;
  /** ms for events, µs for card callbacks (as the platform sends them). */
  create_time: string;
  token: string;
  app_id: string;
  tenant_key: string;
}

export interface UserIds {
  open_id: string;
  union_id: string;
}

export interface Mention {
  key: string;
  id: UserIds;
  name: string;
  tenant_key: string;
}

export interface MessageReceiveEvent {
  schema: "2.0";
  header: EventHeader;
  event: {
    sender: { sender_id: UserIds; sender_type: "user"; tenant_key: string };
    message: {
      message_id: string;
      root_id?: string;
      parent_id?: string;
      thread_id?: string;
      create_time: string;
      update_time: string;
      chat_id: string;
      chat_type: "p2p" | "group";
      message_type: string;
      content: string;
      mentions?: Mention[];
    };
  };
}

export interface CardActionEvent {
  schema: "2.0";
  header: EventHeader;
  event: {
    operator: { tenant_key: string; open_id: string; union_id: string };
    /** The delayed-update token for card/update (30 min, 2 uses). */
    token: string;
    action: {
      value?: Record<string, unknown>;
      tag: string;
      name?: string;
      form_value?: Record<string, unknown>;
    };
    host: "im_message";
    context: { open_message_id: string; open_chat_id: string };
  };
}

/**
 * What building an event needs of the platform: the app, its clock, the messages, who hears of a new one and,
 * for clicks, the delayed-update tokens. The emulator passes its context; the fake messenger
 * (src/testing/fake-inbound.ts) passes its own state, so both push the same events.
 */
export interface EventContext {
  config: Pick<EmulatorConfig, "appId" | "botOpenId" | "botName" | "tenantKey" | "verificationToken">;
  clock: { now(): number };
  messages: Pick<MessageStore, "get" | "create">;
  observer: Pick<Observer, "emit">;
}

export interface CardActionContext extends EventContext {
  updateTokens: Pick<UpdateTokenStore, "issue">;
}

const header = (ctx: EventContext, eventType: string, createTime: string): EventHeader => ({
  event_id: newId.event(),
  event_type: eventType,
  create_time: createTime,
  token: ctx.config.verificationToken ?? "",
  app_id: ctx.config.appId,
  tenant_key: ctx.config.tenantKey,
});

/**
 * A user's message: stored (so the bot can reply to it) and returned as `im.message.receive_v1`.
 * Mentions become `@_user_N` placeholders, the bot's first; placeholders missing from the text are
 * put in front of it.
 */
export function userMessageEvent(
  ctx: EventContext,
  input: UserMessageInput,
): { payload: MessageReceiveEvent; message: MessageView } {
  const { config, clock, messages } = ctx;
  const parent = input.parentId === undefined ? undefined : messages.get(input.parentId);
  if (input.parentId !== undefined && !parent)
    throw new Error(`userMessage: unknown parent ${input.parentId}`);
  const chatId =
    parent?.chatId ??
    input.chatId ??
    (input.chatType === "p2p" ? p2pChatId(input.senderOpenId) : "oc_group_emulator");
  const people = [
    ...(input.mentionBot ? [{ openId: config.botOpenId, name: config.botName }] : []),
    ...(input.mentions ?? []),
  ];
  const mentions: Mention[] = people.map((person, i) => ({
    key: `@_user_${i + 1}`,
    id: { open_id: person.openId, union_id: unionIdFor(person.openId) },
    name: person.name,
    tenant_key: config.tenantKey,
  }));
  const missing = mentions.map((mention) => mention.key).filter((key) => !input.text.includes(key));
  const text = [...missing, input.text].filter((part) => part !== "").join(" ");
  const messageType = input.messageType ?? "text";
  const message = messages.create(
    {
      chatId,
      chatType: input.chatType,
      msgType: messageType,
      content: JSON.stringify(contentFor(messageType, text)),
      senderType: "user",
      senderId: input.senderOpenId,
      ...(input.messageId ? { messageId: input.messageId } : {}),
      ...(parent ? { parent } : {}),
      replyInThread: input.inThread ?? false,
      mentions: mentions.map((m) => ({ key: m.key, openId: m.id.open_id, name: m.name })),
    },
    clock.now(),
  );
  ctx.observer.emit("message_created", message);
  const payload: MessageReceiveEvent = {
    schema: "2.0",
    header: header(ctx, "im.message.receive_v1", String(message.createdAt)),
    event: {
      sender: {
        sender_id: { open_id: input.senderOpenId, union_id: unionIdFor(input.senderOpenId) },
        sender_type: "user",
        tenant_key: config.tenantKey,
      },
      message: {
        message_id: message.messageId,
        ...(message.rootId ? { root_id: message.rootId } : {}),
        ...(message.parentId ? { parent_id: message.parentId } : {}),
        ...(message.threadId && !input.eventWithoutThreadId ? { thread_id: message.threadId } : {}),
        create_time: String(message.createdAt),
        update_time: String(message.updatedAt),
        chat_id: message.chatId,
        chat_type: message.chatType,
        message_type: messageType,
        content: message.content,
        ...(mentions.length > 0 ? { mentions } : {}),
      },
    },
  };
  return { payload, message };
}

/** A click or form submit on one of the bot's cards, with a fresh delayed-update token. */
export function cardActionEvent(ctx: CardActionContext, input: CardActionInput): CardActionEvent {
  const message = ctx.messages.get(input.messageId);
  if (!message) throw new Error(`cardAction: unknown message ${input.messageId}`);
  if (message.msgType !== "interactive" || message.senderType !== "app")
    throw new Error(`cardAction: ${input.messageId} is not a card sent by the app`);
  if (message.recalled) throw new Error(`cardAction: ${input.messageId} was recalled`);
  // A card's callbacks go to the app that sent it (several apps on one tenant, apps.ts).
  if (message.senderId !== ctx.config.appId)
    throw new Error(
      `cardAction: ${input.messageId} was sent by ${message.senderId}, not ${ctx.config.appId}`,
    );
  const now = ctx.clock.now();
  return {
    schema: "2.0",
    header: header(ctx, "card.action.trigger", String(now * 1000)),
    event: {
      operator: {
        tenant_key: ctx.config.tenantKey,
        open_id: input.operatorOpenId,
        union_id: unionIdFor(input.operatorOpenId),
      },
      token: ctx.updateTokens.issue(message.messageId, now),
      action: {
        ...(input.value !== undefined ? { value: input.value } : {}),
        tag: input.tag ?? "button",
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.formValue !== undefined ? { form_value: input.formValue } : {}),
      },
      host: "im_message",
      // No language field: the callback names none (feishu-platform §2.1); the client's own language only
      // picks which of the answer's toast texts it shows (callback-flow.ts).
      context: { open_message_id: message.messageId, open_chat_id: message.chatId },
    },
  };
}

function contentFor(messageType: string, text: string): Record<string, unknown> {
  const key = newId.nonce();
  switch (messageType) {
    case "post":
      return { title: "", content: [[{ tag: "text", text }]] };
    case "image":
      return { image_key: `img_v3_${key}` };
    case "file":
      return { file_key: `file_v3_${key}`, file_name: text || "file.txt" };
    case "audio":
      return { file_key: `file_v3_${key}`, duration: 1000 };
    case "media":
      return {
        file_key: `file_v3_${key}`,
        image_key: `img_v3_${key}`,
        file_name: text || "video.mp4",
        duration: 1000,
      };
    case "sticker":
      return { file_key: `file_v3_${key}` };
    default:
      return { text };
  }
}
