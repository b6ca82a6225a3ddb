import { cardPreview, renderCard } from "./cards.js";
import { h } from "./dom.js";
import { svgIcon } from "./icons.js";

/**
 * Messages as the Feishu chat shows them: the bot on the left, people on the right, a quote of the message a
 * reply answers, cards rendered from their JSON. Text is set as text; mentions become chips.
 */

const AVATAR_COLORS = ["blue", "green", "purple", "orange", "turquoise"];

export function avatar(sender, users) {
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

/** A one-line preview of a message (chat list, reply quotes). */
export function messagePreview(message) {
  if (message.recalled) return "此消息已撤回";
  if (message.card) return cardPreview(message.card);
  if (message.text) return message.text.map((s) => (s.type === "at" ? `@${s.name}` : s.text)).join("");
  return `[${message.msgType}]`;
}

export function formatTime(ms) {
  return new Date(ms).toLocaleTimeString("zh-CN", { hour: "2-digit", minute: "2-digit", hour12: false });
}

/**
 * @param message a ConsoleMessage
 * @param view {users, currentUserId, lookup(id) → message|undefined, onAction(messageId, action),
 *              onNotice(text), onReply(message), onJump(messageId)}
 */
export function renderMessage(message, view) {
  const fromBot = message.sender.type === "app";
  const attributes = {
    "data-testid": "message",
    "data-message-id": message.messageId,
    "data-sender-type": message.sender.type,
    "data-sender-id": message.sender.id,
    "data-rev": String(message.rev),
  };
  // Feishu replaces a recalled message with a line in the middle of the chat.
  if (message.recalled)
    return h(
      "div",
      { class: "msg-system", "data-recalled": "true", ...attributes },
      `${message.sender.name} 撤回了一条消息`,
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

function replyQuote(message, view) {
  if (!message.parentId) return null;
  const parent = view.lookup(message.parentId);
  const label = parent ? `回复 ${parent.sender.name}：${messagePreview(parent)}` : "回复一条消息";
  return h("button", {
    type: "button",
    class: "msg-reply",
    "data-testid": "message-reply-ref",
    "data-parent-id": message.parentId,
    title: "跳到原消息",
    text: label,
    onclick: () => view.onJump(message.parentId),
  });
}

function messageBody(message, view) {
  if (message.card) {
    return h(
      "div",
      { class: "msg-card" },
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

function footer(message, view) {
  const notes = [];
  if (message.card && message.patches > 0) notes.push(`已更新 ${message.patches} 次`);
  return h(
    "div",
    { class: "msg-foot" },
    notes.map((note) => h("span", { class: "msg-note", text: note })),
    h("button", {
      type: "button",
      class: "msg-action",
      "data-testid": "message-reply",
      text: "回复",
      onclick: () => view.onReply(message),
    }),
  );
}
