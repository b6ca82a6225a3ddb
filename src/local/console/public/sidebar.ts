/**
 * The console's sidebar: the 你是 switcher over the local users and the chat list (the viewer's chats, then
 * the other people's private chats, read-only), each with its last message, time and unread count.
 */
import { svgIcon } from "../../../web/public/icons.ts";
import { formatTime, messagePreview } from "./chat.ts";
import { chatLabel, els, messagesOf, state } from "./console-state.ts";
import { h } from "./dom.ts";
import type { ConsoleChat } from "./types.ts";
import { words } from "./words.ts";

/** What a click in the sidebar does: the console's own (console.ts). */
export interface SidebarActions {
  setUser(openId: string): void;
  selectChat(chatId: string): void;
}

export function createSidebar(actions: SidebarActions): { renderSwitcher(): void; renderChatList(): void } {
  const { setUser, selectChat } = actions;
  function renderSwitcher() {
    els.switcher.replaceChildren(
      h("span", { class: "switcher-label", text: words().youAre }),
      ...state.users.map((user) =>
        h("button", {
          type: "button",
          class: ["switcher-option", user.openId === state.userId && "is-active"],
          "data-testid": "user-option",
          "data-user-id": user.openId,
          "aria-pressed": String(user.openId === state.userId),
          text: user.name,
          onclick: () => setUser(user.openId),
        }),
      ),
    );
  }

  function renderChatList() {
    const item = (chat: ConsoleChat) => {
      const last = messagesOf(chat.chatId).at(-1);
      const label = chatLabel(chat);
      const unread = state.unread.get(chat.chatId) ?? 0;
      const preview = last
        ? `${chat.type === "group" ? `${last.sender.name}: ` : ""}${messagePreview(last)}`
        : words().noMessagesYet;
      return h(
        "li",
        {
          class: ["chat-item", chat.chatId === state.chatId && "is-active"],
          "data-testid": "chat-item",
          "data-chat-id": chat.chatId,
          "data-active": String(chat.chatId === state.chatId),
        },
        h(
          "button",
          { type: "button", class: "chat-button", onclick: () => selectChat(chat.chatId) },
          h(
            "div",
            {
              class: `avatar ${chat.type === "group" ? "avatar-group" : "avatar-bot"}`,
              "aria-hidden": "true",
            },
            svgIcon(chat.type === "group" ? "group" : "bot", { size: "24px" }),
          ),
          h(
            "div",
            { class: "chat-text" },
            h(
              "div",
              { class: "chat-row" },
              h("span", { class: "chat-name", text: label.name }),
              h("span", { class: "chat-tag", text: label.tag }),
              h("span", { class: "chat-time", text: last ? formatTime(last.createdAt) : "" }),
            ),
            h(
              "div",
              { class: "chat-row" },
              h("span", { class: "chat-preview", text: preview }),
              unread > 0
                ? h("span", { class: "chat-unread", "data-testid": "chat-unread", text: String(unread) })
                : null,
            ),
          ),
        ),
      );
    };
    const mine = state.chats.filter((chat) => chat.type === "group" || chat.ownerId === state.userId);
    const others = state.chats.filter((chat) => chat.type === "p2p" && chat.ownerId !== state.userId);
    els.chatList.replaceChildren(
      ...mine.map(item),
      ...(others.length > 0 ? [h("li", { class: "chat-section", text: words().othersChats })] : []),
      ...others.map(item),
    );
  }
  return { renderSwitcher, renderChatList };
}
