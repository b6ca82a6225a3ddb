import { svgIcon } from "../../../web/public/icons.ts";
import type { CardAction } from "./card-values.ts";
import { cardPreview, renderCard } from "./cards.ts";
import { h } from "./dom.ts";
import type { ConsoleMessage, LocalUser } from "./types.ts";
import { consoleLocale, words } from "./words.ts";

/**
 * Messages as the Feishu chat shows them: the bot on the left, people on the right, a quote of the message a
 * reply answers, cards rendered from their JSON. Text is set as text; mentions become chips.
 */

const AVATAR_COLORS = ["blue", "green", "purple", "orange", "turquoise"];

export function avatar(sender: ConsoleMessage["sender"], users: readonly LocalUser[]): HTMLElement {
  if (sender.type === "app")
    return h("div", { class: "avatar avatar-bot", "aria-hidden": "true" }, svgIcon("bot", { size: "24px" }));
  const index = users.findIndex((user) => user.openId === sender.id);
  const color = AVATAR_COLORS[(index < 0 ? 4 : index) % AVATAR_COLORS.length];
  return h("div", {
    class: `avatar avatar-${color}`,
    "aria-hidden": "true",
    text: sender.name.slice(0, 1).toUpperCase(),
  });
}

/**
 * The message as one member sees it: a callback's card reaches its clicker alone (Feishu updates only the
 * clicking user's view), so the others keep the shared card until the bot PATCHes it.
 */
export function seenBy(message: ConsoleMessage, userId: string): ConsoleMessage {
  const own = message.views?.[userId];
  return own === undefined ? message : { ...message, card: own };
}

/** A one-line preview of a message (chat list, reply quotes). */
export function messagePreview(message: ConsoleMessage): string {
  if (message.recalled) return words().recalled;
  if (message.card) return cardPreview(message.card, consoleLocale());
  if (message.text) return message.text.map((s) => (s.type === "at" ? `@${s.name}` : s.text)).join("");
  return `[${message.msgType}]`;
}

export function formatTime(ms: number): string {
  return new Date(ms).toLocaleTimeString(words().htmlLang, {
    hour: "2-digit",
    minute: "2-digit",
    hour12: false,
  });
}

/** What a message on screen can reach: the people, other messages, and the console's handlers. */
export interface MessageView {
  users: readonly LocalUser[];
  currentUserId: string;
  lookup: (messageId: string) => ConsoleMessage | undefined;
  onAction: (messageId: string, action: CardAction) => unknown;
  onNotice: (text: string) => void;
  onReply: (message: ConsoleMessage) => void;
  onJump: (messageId: string) => void;
  openUrl: (url: string) => void;
  mentionName: (openId: string) => string | undefined;
  /** The language the console's people read cards in, like a Feishu client's (issue 19). */
  locale?: string;
  /** Topics and threads (topics.ts): what goes under a message in a group, if anything. */
  threadFooter?: (message: ConsoleMessage) => HTMLElement | null;
}

export function renderMessage(shared: ConsoleMessage, view: MessageView): HTMLElement {
  const message = seenBy(shared, view.currentUserId);
  const fromBot = message.sender.type === "app";
  const attributes = {
    "data-testid": "message",
    "data-message-id": message.messageId,
    "data-sender-type": message.sender.type,
    "data-sender-id": message.sender.id,
    "data-rev": String(message.rev),
    "data-thread-id": message.threadId,
    "data-own-view": message !== shared ? "true" : undefined,
  };
  // Feishu replaces a recalled message with a line in the middle of the chat.
  if (message.recalled)
    return h(
      "div",
      { class: "msg-system", "data-recalled": "true", ...attributes },
      words().recalledBy(message.sender.name),
    );
  const row = h("div", {
    class: ["msg", fromBot ? "msg-bot" : "msg-user", message.sender.id === view.currentUserId && "msg-own"],
    ...attributes,
  });
  const main = h(
    "div",
    { class: "msg-main" },
    h(
      "div",
      { class: "msg-meta" },
      h("span", { class: "msg-name", text: message.sender.name }),
      h("time", { class: "msg-time", text: formatTime(message.createdAt) }),
    ),
    replyQuote(message, view),
    messageBody(message, view),
    footer(message, view),
  );
  row.append(avatar(message.sender, view.users), main);
  return row;
}

function replyQuote(message: ConsoleMessage, view: MessageView): HTMLElement | null {
  const parentId = message.parentId;
  if (!parentId) return null;
  const parent = view.lookup(parentId);
  const label = parent ? words().replyTo(parent.sender.name, messagePreview(parent)) : words().replyToUnknown;
  return h("button", {
    type: "button",
    class: "msg-reply",
    "data-testid": "message-reply-ref",
    "data-parent-id": parentId,
    title: words().jumpToParent,
    text: label,
    onclick: () => view.onJump(parentId),
  });
}

function messageBody(message: ConsoleMessage, view: MessageView): HTMLElement {
  if (message.card) {
    // A CardKit card in streaming mode: its streamed element types out (console.css draws the caret).
    return h(
      "div",
      { class: isStreaming(message.card) ? "msg-card streaming" : "msg-card" },
      renderCard(message.card, {
        onAction: (action) => view.onAction(message.messageId, action),
        onNotice: view.onNotice,
        openUrl: view.openUrl,
        mentionName: view.mentionName,
        locale: view.locale,
      }),
    );
  }
  if (message.text) {
    const bubble = h("div", { class: "bubble", "data-testid": "message-text" });
    for (const segment of message.text) {
      bubble.append(
        segment.type === "at"
          ? h("span", { class: "mention", "data-open-id": segment.openId, text: `@${segment.name}` })
          : segment.text,
      );
    }
    return bubble;
  }
  return h("div", { class: "bubble bubble-raw", text: `[${message.msgType}] ${message.raw ?? ""}` });
}

function footer(message: ConsoleMessage, view: MessageView): HTMLElement {
  const notes: string[] = [];
  if (message.card && message.patches > 0) notes.push(words().patched(message.patches));
  if (isStreaming(message.card)) notes.push(words().streaming);
  if (message.views?.[view.currentUserId] !== undefined) notes.push(words().ownView);
  const asks = hasForm(message.card);
  return h(
    "div",
    { class: "msg-foot" },
    notes.map((note) => h("span", { class: "msg-note", text: note })),
    // A card that asks something is answered by quoting it, as in Feishu (issue 30): the button says so.
    h("button", {
      type: "button",
      class: "msg-action",
      "data-testid": "message-reply",
      ...(asks ? { title: words().replyToAnswerTitle } : {}),
      text: asks ? words().replyToAnswer : words().reply,
      onclick: () => view.onReply(message),
    }),
    // Topics and threads (topics.ts): the reply count that opens a thread, or 回复话题.
    view.threadFooter?.(message) ?? null,
  );
}

/** Whether a card carries a form at its root (forms sit only there: feishu-platform), i.e. it asks something. */
function hasForm(card: unknown): boolean {
  const elements = (card as { body?: { elements?: unknown } } | undefined)?.body?.elements;
  return (
    Array.isArray(elements) && elements.some((node) => (node as { tag?: unknown } | null)?.tag === "form")
  );
}

/** `config.streaming_mode` of a CardKit card: its text updates type out. */
function isStreaming(card: unknown): boolean {
  const config = (card as { config?: { streaming_mode?: unknown } } | undefined)?.config;
  return config?.streaming_mode === true;
}
