import express, { type Request, type Response, type Router } from "express";
import { z } from "zod";
import { AppError } from "../../errors.ts";
import { newId } from "../emulator/ids.ts";
import type { MessageView } from "../emulator/index.ts";
import { performAction } from "./callbacks.ts";
import { buttonLabel } from "./card-label.ts";
import { composeText } from "./compose.ts";
import type { ConsoleContext } from "./context.ts";
import { streamEvents } from "./stream.ts";
import { type ConsoleChat, LOCAL_USERS, localUser } from "./users.ts";
import { apiErrors, parseInput } from "./validate.ts";
import type { ConsoleMessage } from "./view.ts";

/** Events reach the bot like Feishu sends them; Feishu gives up on an unanswered delivery after 3 s (§5). */
const DELIVERY_TIMEOUT_MS = 3000;
const id = z.string().min(1).max(200);
const userId = z.enum(LOCAL_USERS.map((user) => user.openId) as [string, ...string[]]);

/** `userId`: each card as that member sees it (a callback's card reaches its clicker alone). */
const listQuery = z.object({ chatId: id.optional(), userId: userId.optional() });
const chatQuery = z.object({ userId: userId.optional() });
const chatParams = z.object({ chatId: id });
const messageParams = z.object({ messageId: id });
const messageBody = z.strictObject({
  chatId: id,
  userId,
  text: z
    .string()
    .max(4000)
    .refine((text) => text.trim() !== "", "must not be empty"),
  /** Makes the message a reply to this one (same chat). */
  replyTo: id.optional(),
  /** With replyTo: reply inside the message's topic, opening a thread under it in a normal group (issue 19). */
  inThread: z.boolean().optional(),
});
const formField = z.union([z.string().max(1000), z.array(z.string().max(1000)).max(100)]);
const actionBody = z.strictObject({
  messageId: id,
  userId,
  value: z.record(z.string(), z.unknown()).optional(),
  formValue: z.record(z.string().max(200), formField).optional(),
  name: z.string().max(200).optional(),
  /** The language the console reads cards in: the click comes from a client in that language (issue 19). */
  locale: z.enum(["zh_cn", "en_us"]).optional(),
});

/** The JSON API under /console/api. */
export function consoleApi(ctx: ConsoleContext): Router {
  const api = express.Router();
  api.use(express.json({ limit: "256kb" }));

  api.get("/chats", (_req, res) => {
    res.json({
      bot: { openId: ctx.emulator.botOpenId, name: ctx.emulator.botName },
      // The language the console starts in until its viewer picks one: the bot's (BOT_LOCALE).
      locale: ctx.emulator.clientLocale,
      users: LOCAL_USERS,
      chats: ctx.chats,
    });
  });

  // Oldest first, with mentions resolved and cards parsed; every chat when chatId is omitted.
  api.get("/messages", (req, res) => {
    const { chatId, userId: viewer } = parseInput(listQuery, req.query, "query");
    res.json({
      messages: ctx.emulator.messages.listMessages(chatId).map((m) => seenBy(ctx.view(m), viewer)),
    });
  });

  api.get("/chats/:chatId/messages", (req, res) => {
    const { chatId } = parseInput(chatParams, req.params, "params");
    const { userId: viewer } = parseInput(chatQuery, req.query, "query");
    res.json({
      messages: ctx.emulator.messages.listMessages(chatId).map((m) => seenBy(ctx.view(m), viewer)),
    });
  });

  // A card's contents over time (kept with the emulator's state file): what it showed before and after a restart.
  api.get("/messages/:messageId/history", (req, res) => {
    const { messageId } = parseInput(messageParams, req.params, "params");
    const message = ctx.emulator.messages.getMessage(messageId);
    if (!message) throw new AppError("NOT_FOUND", `Unknown message ${messageId}`);
    const revisions = ctx.emulator.messages.cardHistory(messageId).map((revision) => ({
      revision: revision.revision,
      at: revision.at,
      via: revision.via,
      card: parseCard(revision.content),
    }));
    res.json({ revisions });
  });

  api.post("/messages", async (req, res) => {
    await postMessage(ctx, req, res);
  });

  api.post("/actions", async (req, res) => {
    const body = parseInput(actionBody, req.body, "body");
    const message = requireCard(ctx, body.messageId);
    const operator = requireMember(ctx, message.chatId, body.userId);
    const outcome = await performAction(
      { emulator: ctx.emulator, feed: ctx.feed },
      {
        messageId: message.messageId,
        chatId: message.chatId,
        operator,
        ...(body.value !== undefined ? { value: body.value } : {}),
        ...(body.formValue !== undefined ? { formValue: body.formValue } : {}),
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(body.locale !== undefined ? { locale: body.locale } : {}),
        ...labelOf(message, body),
      },
    );
    res.json(outcome);
  });

  api.get("/calls", (_req, res) => {
    res.json({ entries: ctx.feed.entries() });
  });

  api.get("/events", (req, res) => {
    streamEvents(ctx.feed, req, res);
  });

  api.use((req, _res, next) => {
    next(new AppError("NOT_FOUND", `No console API ${req.method} ${req.path}`));
  });
  api.use(apiErrors(ctx.logger));
  return api;
}

async function postMessage(ctx: ConsoleContext, req: Request, res: Response): Promise<void> {
  const body = parseInput(messageBody, req.body, "body");
  const chat = ctx.chats.find((candidate) => candidate.chatId === body.chatId);
  if (!chat) throw new AppError("NOT_FOUND", `Unknown chat ${body.chatId}`);
  const sender = requireMember(ctx, chat.chatId, body.userId);
  if (chat.ownerId !== undefined && chat.ownerId !== sender.openId)
    throw new AppError("FORBIDDEN", `Only ${localUser(chat.ownerId)?.name} can write in their private chat`);
  if (body.replyTo !== undefined) {
    const parent = ctx.emulator.messages.getMessage(body.replyTo);
    if (!parent || parent.chatId !== chat.chatId)
      throw new AppError("INVALID_INPUT", `body.replyTo: no message ${body.replyTo} in this chat`);
  }
  if (body.inThread && body.replyTo === undefined)
    throw new AppError(
      "INVALID_INPUT",
      "body.inThread: a thread reply needs replyTo (the message it answers)",
    );
  if (body.inThread && chat.type !== "group")
    throw new AppError("INVALID_INPUT", "body.inThread: threads are for group chats in the console");
  const composed = composeText(body.text, {
    bot: { openId: ctx.emulator.botOpenId, name: ctx.emulator.botName },
    users: LOCAL_USERS,
  });
  // Known before the emulator announces the message, so the live event already shows the mentions.
  const messageId = newId.message();
  ctx.mentions.set(messageId, composed.keys);
  const payload = ctx.emulator.userMessage({
    chatId: chat.chatId,
    chatType: chat.type,
    senderOpenId: sender.openId,
    text: composed.text,
    mentionBot: composed.mentionBot,
    mentions: composed.users,
    messageId,
    ...(body.replyTo !== undefined ? { parentId: body.replyTo } : {}),
    ...(body.inThread ? { inThread: true } : {}),
  });
  const delivery = await deliverEvent(ctx, payload, chat, sender.openId);
  res.status(delivery.ok ? 200 : 502).json({
    messageId,
    mentionBot: composed.mentionBot,
    delivered: delivery.ok,
    ...(delivery.status !== undefined ? { status: delivery.status } : {}),
    durationMs: delivery.durationMs,
    ...(delivery.error !== undefined ? { error: delivery.error } : {}),
  });
}

async function deliverEvent(
  ctx: ConsoleContext,
  payload: ReturnType<ConsoleContext["emulator"]["userMessage"]>,
  chat: ConsoleChat,
  senderId: string,
): Promise<{ ok: boolean; status?: number; durationMs: number; error?: string }> {
  const at = ctx.emulator.clock.now();
  const started = performance.now();
  let outcome: { ok: boolean; status?: number; durationMs: number; error?: string };
  try {
    const result = await ctx.emulator.deliver(payload, { timeoutMs: DELIVERY_TIMEOUT_MS });
    outcome = {
      ok: result.status === 200,
      status: result.status,
      durationMs: round(result.durationMs),
      ...(result.status === 200 ? {} : { error: `the bot answered ${result.status}` }),
    };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    ctx.logger.warn({ err: message }, "console could not deliver a message to the bot");
    outcome = { ok: false, durationMs: round(performance.now() - started), error: message };
  }
  ctx.feed.log({
    kind: "event",
    at,
    eventType: payload.header.event_type,
    chatId: chat.chatId,
    messageId: payload.event.message.message_id,
    senderId,
    ...(outcome.status !== undefined ? { status: outcome.status } : {}),
    ...(outcome.error !== undefined ? { error: outcome.error } : {}),
    durationMs: outcome.durationMs,
  });
  return outcome;
}

function requireCard(ctx: ConsoleContext, messageId: string): MessageView {
  const message = ctx.emulator.messages.getMessage(messageId);
  if (!message) throw new AppError("NOT_FOUND", `No message ${messageId}`);
  if (message.msgType !== "interactive" || message.senderType !== "app")
    throw new AppError("INVALID_INPUT", `Message ${messageId} is not a card sent by the bot`);
  if (message.recalled) throw new AppError("CONFLICT", `Message ${messageId} was recalled`);
  return message;
}

/** The user, when they are in the chat (a chat the console does not know is open to everyone). */
function requireMember(ctx: ConsoleContext, chatId: string, openId: string) {
  const user = localUser(openId);
  if (!user) throw new AppError("INVALID_INPUT", `Unknown user ${openId}`);
  const chat = ctx.chats.find((candidate) => candidate.chatId === chatId);
  if (chat && !chat.memberIds.includes(openId))
    throw new AppError("FORBIDDEN", `${user.name} is not in the chat ${chat.name}`);
  return user;
}

function labelOf(message: MessageView, body: { name?: string | undefined; value?: unknown }) {
  let card: unknown;
  try {
    card = JSON.parse(message.content);
  } catch {
    return {}; // stored cards always parse; no label otherwise
  }
  const label = buttonLabel(card, body);
  return label === undefined ? {} : { label };
}

const round = (ms: number): number => Math.round(ms * 10) / 10;

/** A stored card is JSON the emulator accepted; anything else is shown as the text it is. */
function parseCard(content: string): unknown {
  try {
    return JSON.parse(content);
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    return content;
  }
}

/** With a member named, the card as they see it: theirs from a callback if they have one, else the shared one. */
function seenBy(message: ConsoleMessage, viewer: string | undefined): ConsoleMessage {
  if (viewer === undefined || message.views === undefined) return message;
  const { views, ...rest } = message;
  const own = views[viewer];
  return own === undefined ? rest : { ...rest, card: own };
}
