import type { Logger } from "../../logger.ts";
import type { Emulator, MessageView } from "../emulator/index.ts";
import type { MentionRef } from "./compose.ts";
import type { ConsoleFeed } from "./feed.ts";
import { type ConsoleChat, localChats, localUser } from "./users.ts";
import { type ConsoleMessage, type Directory, toConsoleMessage } from "./view.ts";

/** What the console's routes share. */
export interface ConsoleContext {
  emulator: Emulator;
  feed: ConsoleFeed;
  logger: Logger;
  chats: ConsoleChat[];
  /** Mentions of the messages the console composed, by message id (the emulator keeps only the text). */
  mentions: Map<string, MentionRef[]>;
  directory: Directory;
  view(message: MessageView): ConsoleMessage;
}

export function createConsoleContext(options: {
  emulator: Emulator;
  feed: ConsoleFeed;
  logger: Logger;
}): ConsoleContext {
  const { emulator } = options;
  const directory: Directory = {
    botName: emulator.botName,
    nameOf: (id) =>
      id === emulator.botOpenId || id === emulator.appId ? emulator.botName : localUser(id)?.name,
  };
  const mentions = new Map<string, MentionRef[]>();
  return {
    ...options,
    chats: localChats(emulator.clientLocale),
    mentions,
    directory,
    view: (message) =>
      toConsoleMessage(
        message,
        // The emulator's revision and mentions outlive a restart (with its state file); the map is for the
        // moment between composing a message and the emulator announcing it.
        { rev: message.revision, mentions: mentions.get(message.messageId) ?? message.mentions ?? [] },
        directory,
      ),
  };
}
