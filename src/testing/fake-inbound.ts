import { randomBytes } from "node:crypto";
import { checkCardContent } from "../local/emulator/content.ts";
import { CODES, FeishuError } from "../local/emulator/errors.ts";
import { p2pChatId, unionIdFor } from "../local/emulator/ids.ts";
import type {
  CallbackCardResult,
  CardActionInput,
  MessageView,
  UserMessageInput,
} from "../local/emulator/types.ts";
import type { FakeMessenger } from "./fake-messenger.ts";

/**
 * What Feishu pushes to the bot, for the fake: a user's message and a click, stored in the fake's messages
 * and returned in the flattened shape both transports hand the handlers (`{...header, ...event}`, see
 * feishu/events.ts), so a test calls `deliverMessage` / `answerCardAction` with it as a transport would.
 * The same inputs as the emulator's `userMessage` / `cardAction`.
 */

const TENANT = "tenant_fake";
const hex = (bytes: number) => randomBytes(bytes).toString("hex");

function header(fake: FakeMessenger, eventType: string, createTime: string) {
  return {
    event_id: hex(16),
    event_type: eventType,
    create_time: createTime,
    token: "",
    app_id: fake.appId,
    tenant_key: TENANT,
  };
}

/** A user's message: stored (so the bot can reply to it) and returned as flattened `im.message.receive_v1`. */
export function userMessage(
  fake: FakeMessenger,
  input: UserMessageInput,
): { messageId: string; data: Record<string, unknown> } {
  const parent = input.parentId === undefined ? undefined : fake.store.get(input.parentId);
  if (input.parentId !== undefined && !parent)
    throw new Error(`userMessage: unknown parent ${input.parentId}`);
  const chatId =
    parent?.chatId ??
    input.chatId ??
    (input.chatType === "p2p" ? p2pChatId(input.senderOpenId) : "oc_group_fake");
  const people = [
    ...(input.mentionBot ? [{ openId: fake.botOpenId, name: fake.botName }] : []),
    ...(input.mentions ?? []),
  ];
  const mentions = people.map((person, i) => ({
    key: `@_user_${i + 1}`,
    id: { open_id: person.openId, union_id: unionIdFor(person.openId) },
    name: person.name,
    tenant_key: TENANT,
  }));
  // Placeholders missing from the text go in front of it, as in the emulator.
  const missing = mentions.map((m) => m.key).filter((key) => !input.text.includes(key));
  const text = [...missing, input.text].filter((part) => part !== "").join(" ");
  const messageType = input.messageType ?? "text";
  const content = JSON.stringify(messageType === "text" ? { text } : { file_key: `file_v3_${hex(8)}` });
  const message: MessageView = fake.store.create(
    {
      chatId,
      chatType: input.chatType,
      msgType: messageType,
      content,
      senderType: "user",
      senderId: input.senderOpenId,
      ...(input.messageId ? { messageId: input.messageId } : {}),
      ...(parent ? { parent } : {}),
      mentions: mentions.map((m) => ({ key: m.key, openId: m.id.open_id, name: m.name })),
    },
    fake.clock.now(),
  );
  return {
    messageId: message.messageId,
    data: {
      ...header(fake, "im.message.receive_v1", String(message.createdAt)),
      sender: {
        sender_id: { open_id: input.senderOpenId, union_id: unionIdFor(input.senderOpenId) },
        sender_type: "user",
        tenant_key: TENANT,
      },
      message: {
        message_id: message.messageId,
        ...(message.rootId ? { root_id: message.rootId } : {}),
        ...(message.parentId ? { parent_id: message.parentId } : {}),
        ...(message.threadId ? { thread_id: message.threadId } : {}),
        create_time: String(message.createdAt),
        update_time: String(message.updatedAt),
        chat_id: message.chatId,
        chat_type: message.chatType,
        message_type: messageType,
        content,
        ...(mentions.length > 0 ? { mentions } : {}),
      },
    },
  };
}

/** A click or form submit on one of the bot's cards, flattened `card.action.trigger`. */
export function cardAction(fake: FakeMessenger, input: CardActionInput): Record<string, unknown> {
  const message = fake.store.get(input.messageId);
  if (!message) throw new Error(`cardAction: unknown message ${input.messageId}`);
  if (message.msgType !== "interactive" || message.senderType !== "app")
    throw new Error(`cardAction: ${input.messageId} is not a card sent by the app`);
  if (message.recalled) throw new Error(`cardAction: ${input.messageId} was recalled`);
  return {
    ...header(fake, "card.action.trigger", String(fake.clock.now() * 1000)),
    operator: {
      tenant_key: TENANT,
      open_id: input.operatorOpenId,
      union_id: unionIdFor(input.operatorOpenId),
    },
    token: `c-${hex(20)}`,
    action: {
      ...(input.value !== undefined ? { value: input.value } : {}),
      tag: input.tag ?? "button",
      ...(input.name !== undefined ? { name: input.name } : {}),
      ...(input.formValue !== undefined ? { form_value: input.formValue } : {}),
    },
    host: "im_message",
    context: { open_message_id: message.messageId, open_chat_id: message.chatId },
  };
}

/**
 * The card of a callback answer, applied as the Feishu client applies it: no API call, no rate-limit slot,
 * not counted in `patches`; refused (not applied) like the emulator's applyCallbackCard refuses it.
 */
export function applyCallbackCard(fake: FakeMessenger, messageId: string, card: unknown): CallbackCardResult {
  const message = fake.store.get(messageId);
  if (!message) throw new Error(`applyCallbackCard: unknown message ${messageId}`);
  if (message.recalled) return { ok: false, code: CODES.messageRecalled, reason: "the message was recalled" };
  if (typeof card !== "object" || card === null || !("schema" in card) || card.schema !== "2.0")
    return {
      ok: false,
      code: CODES.callbackCardVersion,
      reason: "a 2.0 card must be answered with a 2.0 card",
    };
  const content = JSON.stringify(card);
  try {
    checkCardContent(content, { update: true });
  } catch (error) {
    if (!(error instanceof FeishuError)) throw error;
    return { ok: false, code: CODES.callbackCardInvalid, reason: error.message };
  }
  const updated = fake.store.applyUpdate(messageId, content, fake.clock.now(), {
    countAsPatch: false,
    via: "callback",
  });
  return { ok: true, message: updated };
}
