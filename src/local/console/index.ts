import type express from "express";
import type { Logger } from "../../logger.ts";
import type { Emulator } from "../emulator/index.ts";
import { consoleApi } from "./api.ts";
import { createConsoleContext } from "./context.ts";
import { ConsoleFeed } from "./feed.ts";
import { mountStatic } from "./static.ts";
import { callEntry, frameEntry } from "./view.ts";

export { composeText } from "./compose.ts";
export { LOCAL_GROUP_CHAT_ID, LOCAL_USERS, type LocalUser, localChats } from "./users.ts";
export type { CallbackEntry, CallEntry, ConsoleEvent, ConsoleMessage, EventEntry, LogEntry } from "./view.ts";

export interface ConsoleOptions {
  emulator: Emulator;
  /**
   * Where the bot's webhook listens, e.g. http://127.0.0.1:3000/feishu/events (a getter: the port is known only
   * after listen). Given, it becomes the emulator's subscription; omitted, the emulator's own subscription (the
   * long connection in local mode) carries the console's messages and clicks.
   */
  botWebhookUrl?: () => string;
  logger: Logger;
  /**
   * Log entries are numbered after this. A console tab keeps the entries it has seen by number, also across a
   * restart of the process, so a restarted process must not number from 0 again: pass a wall-clock base such
   * as `Date.now() * 1000`. Default 0.
   */
  logSeqStart?: number;
}

/**
 * The local console (local mode): a Feishu-like chat page at /console where three local users talk to the bot
 * through the emulator, see its cards live, answer their forms, and watch every Open API call and callback.
 * Routes: `GET /` → /console, `GET /console`, `GET /console/assets/:file`, JSON under `/console/api/`.
 */
export function mountConsole(app: express.Express, options: ConsoleOptions): void {
  const logger = options.logger.child({ module: "console" });
  const feed = new ConsoleFeed({ firstSeq: options.logSeqStart ?? 0 });
  const ctx = createConsoleContext({ ...options, logger, feed });
  const { emulator } = options;
  if (options.botWebhookUrl) emulator.subscribe({ mode: "webhook", url: options.botWebhookUrl });
  // The console's chats are local mode's chats: its topic group (本地话题群) is one on the platform too.
  for (const chat of ctx.chats) if (chat.mode === "topic") emulator.setChatMode(chat.chatId, "topic");

  for (const call of emulator.calls) feed.log(callEntry(call));
  emulator.on("call", (call) => feed.log(callEntry(call)));
  // Long-connection frames show in the API log like the calls (pings and pongs are left out as noise).
  emulator.on("frame", (frame) => {
    const entry = frameEntry(frame);
    if (entry) feed.log(entry);
  });
  emulator.on("message_created", (message) => {
    feed.bump(message.messageId);
    feed.publish({ type: "message", change: "created", message: ctx.view(message) });
  });
  emulator.on("message_patched", ({ message, via }) => {
    feed.bump(message.messageId);
    feed.publish({ type: "message", change: "patched", via, message: ctx.view(message) });
  });
  emulator.on("message_recalled", (message) => {
    feed.bump(message.messageId);
    feed.publish({ type: "message", change: "recalled", message: ctx.view(message) });
  });

  mountStatic(app);
  app.use("/console/api", consoleApi(ctx));
}
