import type { Router } from "express";
import { z } from "zod";
import { checkCardContent } from "./content.ts";
import type { EmulatorContext } from "./context.ts";
import { CODES, fail } from "./errors.ts";
import { callLocals, ok, parse } from "./http.ts";
import { refuseEphemeralIn } from "./topics.ts";

/**
 * 仅特定人可见的消息卡片 (`POST /open-apis/ephemeral/v1/send`): a card one member of a normal group sees.
 * Modelled mainly for what the platform refuses: p2p chats and topic groups (feishu-platform §5.1).
 */

const ephemeralBody = z.object({
  chat_id: z.string().min(1),
  open_id: z.string().min(1),
  msg_type: z.literal("interactive"),
  card: z.record(z.string(), z.unknown()),
});

export function mountEphemeralRoutes(router: Router, ctx: EmulatorContext): void {
  const { messages, clock, config } = ctx;
  router.post("/open-apis/ephemeral/v1/send", (req, res) => {
    const body = parse(ephemeralBody, req.body);
    if (!body.chat_id.startsWith("oc_")) throw fail(CODES.receiveIdInvalid, "invalid chat_id");
    refuseEphemeralIn(messages.chatMode(body.chat_id), messages.chatTypeOf(body.chat_id));
    const content = JSON.stringify(body.card);
    checkCardContent(content);
    const message = messages.create(
      {
        chatId: body.chat_id,
        chatType: "group",
        msgType: "interactive",
        content,
        senderType: "app",
        senderId: config.appId,
        visibleTo: body.open_id,
      },
      clock.now(),
    );
    callLocals(res).messageId = message.messageId;
    ctx.observer.emit("message_created", message);
    ok(res, { message_id: message.messageId });
  });
}
