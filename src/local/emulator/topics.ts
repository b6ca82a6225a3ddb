import { CODES, fail } from "./errors.ts";
import type { MessageView } from "./types.ts";

/**
 * Topic groups and threads as the emulator models them (feishu-platform §5.1):
 * - a chat is a normal group (`group`, messages in one flow) or a topic group (`topic`, 话题群: every message
 *   that is not a reply opens a topic of its own, and replies can only go into a topic);
 * - in a normal group, a reply with `reply_in_thread` opens a thread under the message it answers (or
 *   continues it), and a reply to a message that is already in a thread stays in that thread;
 * - a topic's id (`omt_…`) is on every message in it, its root included.
 * Pure rules here; MessageStore applies them.
 */

export type ChatMode = "group" | "topic";

/** Where a new message goes: its thread (an existing id, or "new" for a topic it opens), its root and parent. */
export interface Placement {
  parentId?: string;
  rootId?: string;
  /** `new`: the message opens a topic (the thread id is minted for it, or for its root). */
  thread?: { kind: "existing"; threadId: string } | { kind: "new"; on: "self" | "root" };
}

export function placeMessage(input: {
  mode: ChatMode;
  chatType: "p2p" | "group";
  parent?: MessageView;
  replyInThread: boolean;
}): Placement {
  const { parent, mode } = input;
  const topicGroup = input.chatType === "group" && mode === "topic";
  if (!parent) return topicGroup ? { thread: { kind: "new", on: "self" } } : {};
  const rootId = parent.rootId ?? parent.messageId;
  const placement: Placement = { parentId: parent.messageId, rootId };
  if (parent.threadId !== undefined)
    return { ...placement, thread: { kind: "existing", threadId: parent.threadId } };
  // A topic group's messages all carry their topic; a reply there is in the topic whatever it asked for.
  if (topicGroup || input.replyInThread) return { ...placement, thread: { kind: "new", on: "root" } };
  return placement;
}

/**
 * Ephemeral cards (仅特定人可见) exist in normal groups only: the send page refuses topic groups (feishu-platform
 * §5.1). It names no code; a field report saw 18053 "chat can not be thread" there, and for p2p chats too.
 */
export function refuseEphemeralIn(mode: ChatMode, chatType: "p2p" | "group"): void {
  if (chatType !== "group")
    throw fail(CODES.ephemeralNotGroup, "chat can not be thread: ephemeral cards are for normal groups only");
  if (mode === "topic")
    throw fail(CODES.ephemeralNotGroup, "chat can not be thread: a topic group takes no ephemeral cards");
}

/** Chat modes the emulator was told about; any other chat is a normal group (or a p2p chat). */
export class ChatModes {
  readonly #modes = new Map<string, ChatMode>();

  set(chatId: string, mode: ChatMode): void {
    this.#modes.set(chatId, mode);
  }

  get(chatId: string): ChatMode {
    return this.#modes.get(chatId) ?? "group";
  }
}
