import type { Response, Router } from "express";
import { z } from "zod";
import { entityContent } from "./cardkit-routes.ts";
import {
  checkCardContent,
  checkContent,
  degradedCardContent,
  EDITS_PER_MESSAGE,
  MSG_TYPES,
} from "./content.ts";
import type { EmulatorContext } from "./context.ts";
import { auditContent } from "./dlp.ts";
import { CODES, fail } from "./errors.ts";
import { callLocals, ok, parse } from "./http.ts";
import { p2pChatId } from "./ids.ts";
import type { MessageView } from "./types.ts";
import { toWire } from "./wire.ts";

const DAY_MS = 86_400_000;
const PATCHABLE_FOR_MS = 14 * DAY_MS;

const sendQuery = z.object({
  receive_id_type: z.enum(["chat_id", "open_id", "user_id", "union_id", "email"]),
});
const sendBody = z.object({
  receive_id: z.string().min(1),
  msg_type: z.enum(MSG_TYPES),
  content: z.string(),
  uuid: z.string().max(50).optional(),
});
const replyBody = z.object({
  msg_type: z.enum(MSG_TYPES),
  content: z.string(),
  reply_in_thread: z.boolean().optional(),
  uuid: z.string().max(50).optional(),
});
const patchBody = z.object({ content: z.string() });
/** 编辑消息 takes text and post only (cards are PATCHed). */
const editBody = z.object({ msg_type: z.enum(["text", "post"]), content: z.string() });

const messageParams = z.object({ message_id: z.string().min(1) });

/** The IM message endpoints (feishu-platform §3.1–3.3). */
export function mountMessageRoutes(router: Router, ctx: EmulatorContext): void {
  const { messages, clock, config } = ctx;

  const answerWith = (res: Response, message: MessageView): void => {
    callLocals(res).messageId = message.messageId;
    ok(res, toWire(message, config));
  };

  // Send uuids are each app's own (assumed: the docs speak of one app's requests); the first app's keep their
  // bare form, as the journal of a one-app emulator holds them.
  const uuidKey = (uuid: string) => (ctx.apps.all[0] === ctx ? uuid : `${config.appId}/${uuid}`);

  /** A uuid seen within the hour answers with the first message instead of sending again. */
  const replayed = (res: Response, uuid: string | undefined): boolean => {
    const previous = uuid === undefined ? undefined : ctx.uuids.lookup(uuidKey(uuid), clock.now());
    const message = previous === undefined ? undefined : messages.get(previous);
    if (!message) return false;
    answerWith(res, message);
    return true;
  };

  const created = (res: Response, message: MessageView, uuid: string | undefined): void => {
    if (uuid !== undefined) ctx.uuids.remember(uuidKey(uuid), message.messageId, message.createdAt);
    ctx.observer.emit("message_created", message);
    answerWith(res, message);
  };

  router.post("/open-apis/im/v1/messages", (req, res) => {
    const { receive_id_type: idType } = parse(sendQuery, req.query);
    const body = parse(sendBody, req.body);
    if (replayed(res, body.uuid)) return;
    const chatId = resolveChat(idType, body.receive_id);
    const entity = entityContent(ctx, body.msg_type, body.content);
    checkContent(body.msg_type, entity.content);
    auditContent(entity.content, ctx.tenant.dlpAudit);
    const message = messages.create(
      {
        chatId,
        chatType: messages.chatTypeOf(chatId),
        msgType: body.msg_type,
        content: entity.content,
        senderType: "app",
        senderId: config.appId,
      },
      clock.now(),
    );
    entity.attach(message.messageId);
    created(res, message, body.uuid);
  });

  router.post("/open-apis/im/v1/messages/:message_id/reply", (req, res) => {
    const { message_id: parentId } = parse(messageParams, req.params);
    const body = parse(replyBody, req.body);
    if (replayed(res, body.uuid)) return;
    const parent = messages.require(parentId);
    if (parent.recalled) throw fail(CODES.messageRecalled, "the message was recalled");
    // An ephemeral card is in one reader's client only: nobody can reply to it (feishu-platform §5.1, assumed).
    if (parent.visibleTo !== undefined)
      throw fail(CODES.messageInvalid, "an ephemeral card cannot be replied to");
    const entity = entityContent(ctx, body.msg_type, body.content);
    checkContent(body.msg_type, entity.content);
    auditContent(entity.content, ctx.tenant.dlpAudit);
    const message = messages.create(
      {
        chatId: parent.chatId,
        chatType: parent.chatType,
        msgType: body.msg_type,
        content: entity.content,
        senderType: "app",
        senderId: config.appId,
        parent,
        replyInThread: body.reply_in_thread ?? false,
      },
      clock.now(),
    );
    entity.attach(message.messageId);
    created(res, message, body.uuid);
  });

  router.patch("/open-apis/im/v1/messages/:message_id", (req, res) => {
    const { message_id: messageId } = parse(messageParams, req.params);
    callLocals(res).messageId = messageId;
    const body = parse(patchBody, req.body);
    const message = messages.require(messageId);
    const now = clock.now();
    if (message.recalled) throw fail(CODES.messageRecalled, "the message was recalled");
    // Another app's card is not this app's to change, on the same tenant or not (apps.ts).
    if (
      message.senderType !== "app" ||
      message.msgType !== "interactive" ||
      message.senderId !== config.appId
    )
      throw fail(CODES.messageInvalid, "only interactive messages sent by this app can be patched");
    // "仅特定人可见" cards cannot be patched (feishu-platform §3.2).
    if (message.visibleTo !== undefined)
      throw fail(CODES.messageInvalid, "an ephemeral card cannot be patched");
    if (now - message.createdAt > PATCHABLE_FOR_MS)
      throw fail(CODES.messageTooOld, "the message was sent more than 14 days ago and cannot be updated");
    if (!ctx.patchWindows.for(messageId).tryTake(now).ok)
      throw fail(CODES.imRateLimited, "This operation triggers the frequency limit");
    checkCardContent(body.content, { update: true });
    auditContent(body.content, ctx.tenant.dlpAudit);
    const updated = messages.applyUpdate(messageId, body.content, now);
    ctx.observer.emit("message_patched", { message: updated, via: "patch" });
    ok(res, {});
  });

  /** 编辑消息 (`PUT`): the app's own text or post messages, not recalled, at most 20 times. */
  router.put("/open-apis/im/v1/messages/:message_id", (req, res) => {
    const { message_id: messageId } = parse(messageParams, req.params);
    callLocals(res).messageId = messageId;
    const body = parse(editBody, req.body);
    const message = messages.require(messageId);
    if (message.recalled) throw fail(CODES.messageRecalled, "the message was recalled");
    if (message.senderType !== "app" || message.senderId !== config.appId)
      throw fail(CODES.messageInvalid, "only messages sent by this app can be edited");
    if (message.msgType !== "text" && message.msgType !== "post")
      throw fail(CODES.messageInvalid, "only text and post messages can be edited; cards are patched");
    if ((message.edits ?? 0) >= EDITS_PER_MESSAGE)
      throw fail(CODES.messageInvalid, `a message can be edited at most ${EDITS_PER_MESSAGE} times`);
    checkContent(body.msg_type, body.content);
    const updated = messages.applyEdit(messageId, body.content, clock.now());
    ctx.observer.emit("message_patched", { message: updated, via: "edit" });
    ok(res, {});
  });

  router.get("/open-apis/im/v1/messages/:message_id", (req, res) => {
    const { message_id: messageId } = parse(messageParams, req.params);
    callLocals(res).messageId = messageId;
    const message = messages.require(messageId);
    const fullCard = req.query.card_msg_content_type === "user_card_content";
    const content = message.recalled
      ? JSON.stringify({ text: "This message was recalled" })
      : message.msgType === "interactive" && !fullCard
        ? degradedCardContent(message.content)
        : message.content;
    ok(res, { items: [toWire(message, config, content)] });
  });

  /** Recall (`DELETE`), for apps that withdraw their own messages. */
  router.delete("/open-apis/im/v1/messages/:message_id", (req, res) => {
    const { message_id: messageId } = parse(messageParams, req.params);
    callLocals(res).messageId = messageId;
    const message = messages.require(messageId);
    if (message.recalled) throw fail(CODES.messageRecalled, "the message was recalled");
    if (message.senderType !== "app" || message.senderId !== config.appId)
      throw fail(CODES.messageInvalid, "only messages sent by this app can be recalled");
    ctx.observer.emit("message_recalled", messages.recall(messageId, clock.now()));
    ok(res, {});
  });
}

function resolveChat(idType: z.infer<typeof sendQuery>["receive_id_type"], receiveId: string): string {
  const prefix =
    idType === "chat_id" ? "oc_" : idType === "open_id" ? "ou_" : idType === "union_id" ? "on_" : "";
  if (!receiveId.startsWith(prefix)) throw fail(CODES.receiveIdInvalid, `invalid receive_id for ${idType}`);
  return idType === "chat_id" ? receiveId : p2pChatId(receiveId);
}
