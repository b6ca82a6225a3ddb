import { formatTime, messagePreview } from "./chat.ts";
import { h } from "./dom.ts";
import type { ConsoleChat, ConsoleMessage } from "./types.ts";
import { words } from "./words.ts";

/**
 * Topics and threads as the Feishu client shows them (issue 19). A topic group (话题群) is a list of topics:
 * each topic's first message with its reply count, opened into a thread view. In a normal group, replies in a
 * thread stay out of the main flow; the message they hang under shows "N 条回复" and opens the thread.
 * A message is in the thread of root R when it carries a thread id and its root is R; a topic group's first
 * message carries the thread id itself. Pure functions over the console's messages, plus small renderers.
 */

/** A reply inside a thread (not the thread's first message): it has both ids. */
type ThreadReply = ConsoleMessage & { threadId: string; rootId: string };

/** Whether the message is a reply inside a thread (not the thread's first message). */
export const isThreadReply = (message: ConsoleMessage): message is ThreadReply =>
  message.threadId !== undefined && message.rootId !== undefined;

/** The messages the chat's main view shows: topic roots in a topic group, the main flow in a normal group. */
export function mainFlow(messages: ConsoleMessage[], chat: ConsoleChat): ConsoleMessage[] {
  if (chat.type !== "group") return messages;
  return messages.filter((message) => !isThreadReply(message));
}

/** A thread: its root, then its replies in order. */
export function threadMessages(messages: ConsoleMessage[], rootId: string): ConsoleMessage[] {
  return messages.filter(
    (message) => message.messageId === rootId || (isThreadReply(message) && message.rootId === rootId),
  );
}

/** Replies in the thread under `rootId`, with the newest one. */
export function threadSummary(
  messages: ConsoleMessage[],
  rootId: string,
): { count: number; last: ConsoleMessage | undefined } {
  const replies = messages.filter((message) => isThreadReply(message) && message.rootId === rootId);
  return { count: replies.length, last: replies.at(-1) };
}

/** The root of the thread the message is in, if any (its own id for a topic group's first message). */
export function threadRootOf(message: ConsoleMessage): string | undefined {
  if (isThreadReply(message)) return message.rootId;
  return message.threadId !== undefined ? message.messageId : undefined;
}

export interface ThreadFooterContext {
  chat: ConsoleChat | undefined;
  messages: ConsoleMessage[];
  inThreadView: boolean;
  onOpen: (rootId: string) => void;
}

/**
 * Under a message in a group: "N 条回复" that opens its thread, or, for a message without one, 回复话题 to
 * start one (in a topic group every message is a topic, so there it always opens the topic).
 */
export function threadFooter(
  message: ConsoleMessage,
  { chat, messages, inThreadView, onOpen }: ThreadFooterContext,
): HTMLElement | null {
  if (chat?.type !== "group" || inThreadView || message.recalled || isThreadReply(message)) return null;
  const { count, last } = threadSummary(messages, message.messageId);
  if (count > 0 && last) {
    // As the topic list does: how many replies, when the last came, and what it says.
    return h(
      "button",
      {
        type: "button",
        class: "thread-open",
        "data-testid": "thread-open",
        "data-root-id": message.messageId,
        onclick: () => onOpen(message.messageId),
      },
      h("span", { class: "thread-count", text: words().threadCount(count, formatTime(last.createdAt)) }),
      h("span", {
        class: "thread-last",
        "data-testid": "thread-last",
        text: `${last.sender.name}：${messagePreview(last)}`,
      }),
    );
  }
  return h("button", {
    type: "button",
    class: "msg-action",
    "data-testid": "thread-start",
    "data-root-id": message.messageId,
    text: chat.mode === "topic" ? words().replyInTopic : words().replyNewTopic,
    onclick: () => onOpen(message.messageId),
  });
}

/** The bar above a thread view: back to the chat, and what the thread is. */
export function threadHeader(
  root: ConsoleMessage | undefined,
  { preview, onBack }: { preview: (message: ConsoleMessage) => string; onBack: () => void },
): HTMLElement {
  return h(
    "div",
    { class: "thread-header", "data-testid": "thread-view", "data-root-id": root?.messageId ?? "" },
    h("button", {
      type: "button",
      class: "thread-back",
      "data-testid": "thread-back",
      text: words().back,
      onclick: onBack,
    }),
    h("span", { class: "thread-title", text: root ? words().topicTitle(preview(root)) : words().topic }),
  );
}

/** What the composer says in a topic group, or inside a thread. */
export function topicPlaceholder(chat: ConsoleChat | undefined, inThreadView: boolean): string | undefined {
  if (inThreadView) return words().threadPlaceholder;
  if (chat?.mode === "topic") return words().topicPlaceholder;
  return undefined;
}

export interface ThreadNav {
  open(rootId: string): void;
  close(): void;
  /** Whether a message belongs in what the chat view shows now (the main flow, or the open thread). */
  inView(message: ConsoleMessage): boolean;
  /** A reply in a thread changes the count under its root in the main view: redraw that one message. */
  offView(message: ConsoleMessage): void;
  /** Before jumping to a message: a thread's reply is found in its thread view, others in the main view. */
  reveal(message: ConsoleMessage): void;
}

/**
 * The console's thread navigation: which thread the chat view shows (`state.threadRoot`), and what a live
 * message means for the view. `onChange` redraws the chat; `renderRoot` draws one message again.
 */
export function createThreadNav(options: {
  state: { threadRoot: string | undefined; messages: Map<string, ConsoleMessage> };
  list: HTMLElement;
  onChange: () => void;
  renderRoot: (root: ConsoleMessage) => HTMLElement;
}): ThreadNav {
  const { state, list, onChange, renderRoot } = options;
  const set = (rootId: string | undefined) => {
    state.threadRoot = rootId;
    onChange();
  };
  const inView = (message: ConsoleMessage) =>
    state.threadRoot ? threadMessages([message], state.threadRoot).length > 0 : !isThreadReply(message);
  return {
    open: (rootId) => set(rootId),
    close: () => set(undefined),
    inView,
    offView(message) {
      if (state.threadRoot || !isThreadReply(message)) return;
      const root = state.messages.get(message.rootId);
      const existing = list.querySelector(`[data-message-id="${CSS.escape(message.rootId)}"]`);
      if (root && existing) existing.replaceWith(renderRoot(root));
    },
    reveal(message) {
      const root = isThreadReply(message) ? threadRootOf(message) : undefined;
      if (root !== state.threadRoot) set(root);
    },
  };
}
