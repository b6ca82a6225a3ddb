/**
 * The console's shared state and plumbing: who it acts as, the chats and messages it knows, its elements by
 * data-testid, the console's JSON API, the toasts, the queries every part asks (the open chat, a user's name,
 * who may write where) and the location hash that keeps the view across a reload.
 */
import { h } from "./dom.ts";
import type { ConsoleChat, ConsoleMessage, LocalUser, Toast } from "./types.ts";
import { type ConsoleLocale, words } from "./words.ts";

/** An element of index.html by its data-testid; the page cannot work without it, so a missing one throws. */
export function $(testid: string): HTMLElement;
export function $<T extends HTMLElement>(testid: string, type: new () => T): T;
export function $(testid: string, type: new () => HTMLElement = HTMLElement): HTMLElement {
  const element = document.querySelector(`[data-testid="${testid}"]`);
  if (!(element instanceof type)) throw new Error(`console: index.html has no ${testid} element`);
  return element;
}
const TOAST_MS = 3000;
const TOAST_ICONS: Record<Toast["type"], string> = { success: "✓", error: "✕", warning: "!", info: "i" };

const isToastType = (type: string): type is Toast["type"] => Object.hasOwn(TOAST_ICONS, type);

export const state = {
  bot: { openId: "", name: "" },
  users: [] as LocalUser[],
  chats: [] as ConsoleChat[],
  userId: "",
  chatId: "",
  messages: new Map<string, ConsoleMessage>(),
  unread: new Map<string, number>(),
  /** The root message of the thread (topic) open in the chat view; undefined: the chat's main view. */
  threadRoot: undefined as string | undefined,
  // The language the console's people read cards, toasts and its own labels in, like a Feishu client's
  // (issue 19): the viewer's saved choice, else the bot's (BOT_LOCALE), known once /chats answers.
  locale: "zh_cn" as ConsoleLocale,
};

export const els = {
  chatList: $("chat-list"),
  switcher: $("user-switcher"),
  title: $("chat-title"),
  members: $("chat-members"),
  list: $("message-list"),
  toasts: $("toasts"),
  conn: $("connection-status"),
  language: $("language-switch"),
};

/**
 * The console's own JSON API (src/local/console/api.ts). Its bodies are the server's types (types.ts);
 * `body` is left loose here and read field by field where it is used.
 */
// biome-ignore lint/suspicious/noExplicitAny: a response body of our own server, read where it is used
type ApiBody = any;

export async function api(
  path: string,
  body?: unknown,
): Promise<{ ok: boolean; status: number; body: ApiBody }> {
  try {
    const response = await fetch(
      `/console/api/${path}`,
      body === undefined
        ? undefined
        : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) },
    );
    const json = await response.json().catch(() => ({}));
    return { ok: response.ok, status: response.status, body: json };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return { ok: false, status: 0, body: { error: { message: words().cannotReach(reason) } } };
  }
}

export function toast(type: string, content: string, durationMs = TOAST_MS): void {
  const kind = isToastType(type) ? type : "info";
  const element = h(
    "div",
    {
      class: `toast toast-${kind}`,
      "data-testid": "toast",
      "data-type": kind,
      role: kind === "error" ? "alert" : "status",
    },
    h("span", { class: "toast-icon", "aria-hidden": "true", text: TOAST_ICONS[kind] }),
    h("span", { class: "toast-text", text: content }),
  );
  els.toasts.append(element);
  while (els.toasts.childElementCount > 4) els.toasts.firstElementChild?.remove();
  setTimeout(() => {
    element.classList.add("is-leaving");
    setTimeout(() => element.remove(), 250);
  }, durationMs);
}

export const currentChat = () => state.chats.find((chat) => chat.chatId === state.chatId);
export const userName = (openId: string | undefined): string =>
  state.users.find((user) => user.openId === openId)?.name ?? openId ?? "";
export const privateChatOf = (openId: string) =>
  state.chats.find((chat) => chat.type === "p2p" && chat.ownerId === openId);
export const canWrite = (chat: ConsoleChat | undefined): boolean =>
  chat !== undefined && (chat.type === "group" || chat.ownerId === state.userId);
// An ephemeral card (仅特定人可见) is only in its one reader's client.
export const messagesOf = (chatId: string) =>
  [...state.messages.values()]
    .filter((m) => m.chatId === chatId && (m.visibleTo === undefined || m.visibleTo === state.userId))
    .sort((a, b) => a.createdAt - b.createdAt);

export function saveLocation() {
  history.replaceState(
    null,
    "",
    `#user=${encodeURIComponent(state.userId)}&chat=${encodeURIComponent(state.chatId)}${
      state.threadRoot ? `&thread=${encodeURIComponent(state.threadRoot)}` : ""
    }`,
  );
}

export function chatLabel(chat: ConsoleChat): { name: string; tag: string } {
  const w = words();
  if (chat.type === "group")
    return { name: chat.name, tag: chat.mode === "topic" ? w.tagTopicGroup : w.tagGroup };
  if (chat.ownerId === state.userId) return { name: state.bot.name, tag: w.tagPrivate };
  return { name: w.otherChat(userName(chat.ownerId), state.bot.name), tag: w.tagReadOnly };
}
