import type { EmulatorConfig } from "./context.ts";
import type { MessageView } from "./types.ts";

/** A message as the IM API returns it (send, reply and get share this shape). */
export interface WireMessage {
  message_id: string;
  root_id?: string;
  parent_id?: string;
  thread_id?: string;
  msg_type: string;
  create_time: string;
  update_time: string;
  deleted: boolean;
  updated: boolean;
  chat_id: string;
  sender: { id: string; id_type: "app_id" | "open_id"; sender_type: "app" | "user"; tenant_key: string };
  body: { content: string };
}

export function toWire(message: MessageView, config: EmulatorConfig, content = message.content): WireMessage {
  return {
    message_id: message.messageId,
    ...(message.rootId ? { root_id: message.rootId } : {}),
    ...(message.parentId ? { parent_id: message.parentId } : {}),
    ...(message.threadId ? { thread_id: message.threadId } : {}),
    msg_type: message.msgType,
    create_time: String(message.createdAt),
    update_time: String(message.updatedAt),
    deleted: message.recalled,
    updated: message.patches > 0,
    chat_id: message.chatId,
    sender:
      message.senderType === "app"
        ? // The app that sent it, which need not be the caller's (several apps on one tenant, apps.ts).
          { id: message.senderId, id_type: "app_id", sender_type: "app", tenant_key: config.tenantKey }
        : { id: message.senderId, id_type: "open_id", sender_type: "user", tenant_key: config.tenantKey },
    body: { content },
  };
}
