import { svgIcon } from "../../../web/public/icons.ts";
import type { CardAction } from "./card-values.ts";
import { formatTime, type MessageView, messagePreview, renderMessage } from "./chat.ts";
import { createComposer } from "./composer.ts";
import { h } from "./dom.ts";
import { createLogPanel } from "./log.ts";
import { openAs } from "./sign-in.ts";
import {
  createThreadNav,
  mainFlow,
  threadFooter,
  threadHeader,
  threadMessages,
  topicPlaceholder,
} from "./topics.ts";
import type { ConsoleChat, ConsoleEvent, ConsoleMessage, LocalUser, LogEntry, Toast } from "./types.ts";

/**
 * The local console: a Feishu-like chat over the emulator. State comes from /console/api (loaded on every
 * (re)connect of the event stream) and stays live through the stream; the newest revision of a message wins.
 */

/** An element of index.html by its data-testid; the page cannot work without it, so a missing one throws. */
function $(testid: string): HTMLElement;
function $<T extends HTMLElement>(testid: string, type: new () => T): T;
function $(testid: string, type: new () => HTMLElement = HTMLElement): HTMLElement {
  const element = document.querySelector(`[data-testid="${testid}"]`);
  if (!(element instanceof type)) throw new Error(`console: index.html has no ${testid} element`);
  return element;
}
const TOAST_MS = 3000;
const TOAST_ICONS: Record<Toast["type"], string> = { success: "✓", error: "✕", warning: "!", info: "i" };

const isToastType = (type: string): type is Toast["type"] => Object.hasOwn(TOAST_ICONS, type);
const LOCALE_KEY = "fpb-console-locale";

const state = {
  bot: { openId: "", name: "机器人" },
  users: [] as LocalUser[],
  chats: [] as ConsoleChat[],
  userId: "",
  chatId: "",
  messages: new Map<string, ConsoleMessage>(),
  unread: new Map<string, number>(),
  /** The root message of the thread (topic) open in the chat view; undefined: the chat's main view. */
  threadRoot: undefined as string | undefined,
  // The language the console's people read cards and toasts in, like a Feishu client's (issue 19).
  locale: readLocale(),
};

const els = {
  chatList: $("chat-list"),
  switcher: $("user-switcher"),
  title: $("chat-title"),
  members: $("chat-members"),
  list: $("message-list"),
  toasts: $("toasts"),
  conn: $("connection-status"),
  language: $("language-switch"),
};

const composer = createComposer(
  {
    input: $("composer-input", HTMLTextAreaElement),
    send: $("composer-send", HTMLButtonElement),
    mention: $("mention-bot", HTMLButtonElement),
    hint: $("composer-hint"),
    replyTarget: $("reply-target"),
  },
  { onSend: sendMessage, preview: messagePreview },
);

const log = createLogPanel({
  list: $("call-log"),
  stats: $("log-stats"),
  filter: $("log-filter", HTMLSelectElement),
  clearButton: $("log-clear", HTMLButtonElement),
  onSelectMessage: jumpTo,
});

// Which thread (topic) the chat view shows, if any (topics.ts).
const threads = createThreadNav({
  state,
  list: els.list,
  onChange: () => {
    composer.setReplyTo(undefined);
    saveLocation();
    renderChat();
  },
  renderRoot: (root) => renderMessage(root, messageView()),
});
const openThread = (rootId: string) => threads.open(rootId);
const closeThread = () => threads.close();

/**
 * The console's own JSON API (src/local/console/api.ts). Its bodies are the server's types (types.ts);
 * `body` is left loose here and read field by field where it is used.
 */
// biome-ignore lint/suspicious/noExplicitAny: a response body of our own server, read where it is used
type ApiBody = any;

async function api(path: string, body?: unknown): Promise<{ ok: boolean; status: number; body: ApiBody }> {
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
    return { ok: false, status: 0, body: { error: { message: `无法连接控制台：${reason}` } } };
  }
}

function toast(type: string, content: string, durationMs = TOAST_MS): void {
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

const currentChat = () => state.chats.find((chat) => chat.chatId === state.chatId);
const userName = (openId: string | undefined): string =>
  state.users.find((user) => user.openId === openId)?.name ?? openId ?? "";
const privateChatOf = (openId: string) =>
  state.chats.find((chat) => chat.type === "p2p" && chat.ownerId === openId);
const canWrite = (chat: ConsoleChat | undefined): boolean =>
  chat !== undefined && (chat.type === "group" || chat.ownerId === state.userId);
// An ephemeral card (仅特定人可见) is only in its one reader's client.
const messagesOf = (chatId: string) =>
  [...state.messages.values()]
    .filter((m) => m.chatId === chatId && (m.visibleTo === undefined || m.visibleTo === state.userId))
    .sort((a, b) => a.createdAt - b.createdAt);

function saveLocation() {
  history.replaceState(
    null,
    "",
    `#user=${encodeURIComponent(state.userId)}&chat=${encodeURIComponent(state.chatId)}${
      state.threadRoot ? `&thread=${encodeURIComponent(state.threadRoot)}` : ""
    }`,
  );
}

function renderSwitcher() {
  els.switcher.replaceChildren(
    h("span", { class: "switcher-label", text: "你是：" }),
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

function chatLabel(chat: ConsoleChat): { name: string; tag: string } {
  if (chat.type === "group") return { name: chat.name, tag: chat.mode === "topic" ? "话题群" : "群聊" };
  if (chat.ownerId === state.userId) return { name: state.bot.name, tag: "单聊" };
  return { name: `${userName(chat.ownerId)} 与 ${state.bot.name}`, tag: "只读" };
}

function renderChatList() {
  const item = (chat: ConsoleChat) => {
    const last = messagesOf(chat.chatId).at(-1);
    const label = chatLabel(chat);
    const unread = state.unread.get(chat.chatId) ?? 0;
    const preview = last
      ? `${chat.type === "group" ? `${last.sender.name}: ` : ""}${messagePreview(last)}`
      : "暂无消息";
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
          { class: `avatar ${chat.type === "group" ? "avatar-group" : "avatar-bot"}`, "aria-hidden": "true" },
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
    ...(others.length > 0 ? [h("li", { class: "chat-section", text: "其他成员的单聊" })] : []),
    ...others.map(item),
  );
}

const messageView = (): MessageView => ({
  users: state.users,
  currentUserId: state.userId,
  lookup: (messageId: string) => state.messages.get(messageId),
  onAction: sendAction,
  onNotice: (text: string) => toast("warning", text),
  onReply: (message: ConsoleMessage) =>
    canWrite(currentChat()) ? composer.setReplyTo(message) : toast("info", "你不能在这个会话里发言"),
  onJump: jumpTo,
  // 会话详情 opens as the person the console is acting as (sign-in.ts).
  openUrl: (url: string) =>
    window.open(openAs(url, state.userId, location.origin), "_blank", "noopener,noreferrer"),
  mentionName: (openId: string) => state.users.find((user) => user.openId === openId)?.name,
  threadFooter: (message: ConsoleMessage) =>
    threadFooter(message, {
      chat: currentChat(),
      messages: messagesOf(state.chatId),
      inThreadView: state.threadRoot !== undefined,
      onOpen: openThread,
    }),
  locale: state.locale,
});

/** Signs this origin in as `userId` (the same cookie /auth/local sets for a session page). */
async function followUser(userId: string): Promise<boolean> {
  const response = await fetch(`/auth/local?user=${encodeURIComponent(userId)}&next=/auth/me`, {
    credentials: "same-origin",
    cache: "no-store",
  });
  return response.ok;
}

type Locale = "zh_cn" | "en_us";

/** The saved 中文/English choice; the console starts in Chinese. */
function readLocale(): Locale {
  try {
    return localStorage.getItem(LOCALE_KEY) === "en_us" ? "en_us" : "zh_cn";
  } catch (error) {
    console.warn("localStorage unavailable; the console reads cards in Chinese", error);
    return "zh_cn";
  }
}

function setLocale(locale: Locale): void {
  state.locale = locale;
  try {
    localStorage.setItem(LOCALE_KEY, locale);
  } catch (error) {
    console.warn("could not keep the language choice", error);
  }
  showLocale();
  renderChat();
}

function showLocale(): void {
  els.language.textContent = state.locale === "en_us" ? "English" : "中文";
  els.language.dataset.locale = state.locale;
  els.language.title =
    state.locale === "en_us"
      ? "卡片与提示以英文客户端显示，点击切换为中文"
      : "卡片与提示以中文客户端显示，点击切换为英文";
}

/** Keeps the session pages' sign-in cookie on the console's current user; a failure only costs a toast. */
function signInAs(openId: string): void {
  followUser(openId)
    .then((ok) => {
      if (!ok) toast("warning", "会话详情页未能切换到当前用户，打开时请重新登录");
    })
    .catch(() => toast("warning", "会话详情页未能切换到当前用户，打开时请重新登录"));
}

const nearBottom = () => els.list.scrollHeight - els.list.scrollTop - els.list.clientHeight < 120;
const toBottom = () => {
  els.list.scrollTop = els.list.scrollHeight;
};

function renderChat() {
  const chat = currentChat();
  if (!chat) return;
  const label = chatLabel(chat);
  els.title.textContent = label.name;
  els.members.textContent =
    chat.type === "group"
      ? `${chat.memberIds.map(userName).join("、")}、${state.bot.name}（机器人）`
      : `${userName(chat.ownerId)} 与 ${state.bot.name} 的单聊`;
  const all = messagesOf(chat.chatId);
  const messages = state.threadRoot ? threadMessages(all, state.threadRoot) : mainFlow(all, chat);
  const view = messageView();
  els.list.replaceChildren(
    ...(state.threadRoot
      ? [threadHeader(state.messages.get(state.threadRoot), { preview: messagePreview, onBack: closeThread })]
      : []),
    ...(messages.length > 0
      ? messages.map((message) => renderMessage(message, view))
      : [
          h("div", {
            class: "empty",
            "data-testid": "empty-chat",
            text: "还没有消息。在下面输入框里给机器人派个任务吧。",
          }),
        ]),
  );
  configureComposer(chat);
  toBottom();
}

function configureComposer(chat: ConsoleChat): void {
  composer.configure({
    group: chat.type === "group",
    canWrite: canWrite(chat),
    ownerName: userName(chat.ownerId),
    botName: state.bot.name,
    onSwitchToOwner: () => setUser(chat.ownerId),
  });
  const placeholder = topicPlaceholder(chat, state.threadRoot !== undefined);
  if (placeholder && canWrite(chat)) $("composer-input", HTMLTextAreaElement).placeholder = placeholder;
}

/** Puts a new or changed message on screen, keeping the reader at the bottom if they were there. */
function showMessage(message: ConsoleMessage, change: string): void {
  if (message.chatId !== state.chatId) return;
  if (!threads.inView(message)) return threads.offView(message);
  const stick = nearBottom() || message.sender.id === state.userId;
  const element = renderMessage(message, messageView());
  const existing = els.list.querySelector(`[data-message-id="${CSS.escape(message.messageId)}"]`);
  if (existing) existing.replaceWith(element);
  else {
    els.list.querySelector('[data-testid="empty-chat"]')?.remove();
    els.list.append(element);
  }
  for (const quote of els.list.querySelectorAll(`[data-parent-id="${CSS.escape(message.messageId)}"]`))
    quote.textContent = `回复 ${message.sender.name}：${messagePreview(message)}`;
  if (stick || change === "created") toBottom();
}

function upsert(message: ConsoleMessage): boolean {
  const known = state.messages.get(message.messageId);
  if (known && known.rev >= message.rev) return false;
  state.messages.set(message.messageId, message);
  return true;
}

function selectChat(chatId: string): void {
  if (!state.chats.some((chat) => chat.chatId === chatId)) return;
  state.chatId = chatId;
  state.threadRoot = undefined;
  state.unread.delete(chatId);
  composer.setReplyTo(undefined);
  saveLocation();
  renderChatList();
  renderChat();
}

function setUser(openId: string | undefined): void {
  if (!state.users.some((user) => user.openId === openId)) return;
  if (openId === undefined) return;
  state.userId = openId;
  signInAs(openId);
  renderSwitcher();
  const chat = currentChat();
  if (chat?.type === "p2p") return selectChat(privateChatOf(openId)?.chatId ?? state.chatId);
  saveLocation();
  renderChatList();
  if (!chat) return;
  // Another person's client: cards as the bot sent them, never the previous user's unsent form input.
  const scrollTop = els.list.scrollTop;
  renderChat();
  els.list.scrollTop = scrollTop;
}

function jumpTo(messageId: string): void {
  const message = state.messages.get(messageId);
  if (!message) return;
  if (message.chatId !== state.chatId) selectChat(message.chatId);
  threads.reveal(message);
  const element = els.list.querySelector(`[data-message-id="${CSS.escape(messageId)}"]`);
  if (!element) return;
  element.scrollIntoView({ block: "center", behavior: "smooth" });
  element.classList.remove("is-flash");
  if (element instanceof HTMLElement) void element.offsetWidth;
  element.classList.add("is-flash");
}

async function sendMessage(text: string, replyTo: string | undefined): Promise<boolean> {
  // Inside a thread view every message is a reply in the thread (to the one quoted, or to the root).
  const target = replyTo ?? state.threadRoot;
  const result = await api("messages", {
    chatId: state.chatId,
    userId: state.userId,
    text,
    ...(target ? { replyTo: target } : {}),
    ...(state.threadRoot ? { inThread: true } : {}),
  });
  if (result.ok) return true;
  if (result.body.messageId) {
    toast("error", `消息已发出，但没能投递给机器人：${result.body.error ?? result.status}`);
    return true;
  }
  toast("error", result.body.error?.message ?? `发送失败（HTTP ${result.status}）`);
  return false;
}

async function sendAction(messageId: string, action: CardAction): Promise<unknown> {
  const result = await api("actions", { messageId, userId: state.userId, locale: state.locale, ...action });
  if (!result.ok) return toast("error", result.body.error?.message ?? `操作失败（HTTP ${result.status}）`);
  if (result.body.toast) toast(result.body.toast.type, result.body.toast.content);
  return result.body;
}

function onEvent(event: ConsoleEvent): void {
  if (event.type === "log") {
    log.push(event.entry);
    return;
  }
  if (event.type !== "message" || !upsert(event.message)) return;
  const { message } = event;
  if (event.change === "created" && message.chatId !== state.chatId)
    state.unread.set(message.chatId, (state.unread.get(message.chatId) ?? 0) + 1);
  showMessage(message, event.change);
  renderChatList();
}

async function resync(): Promise<void> {
  const [messages, calls] = await Promise.all([api("messages"), api("calls")]);
  if (!messages.ok || !calls.ok) return toast("error", "加载会话失败，稍后自动重试");
  const known: ConsoleMessage[] = messages.body.messages;
  const entries: LogEntry[] = calls.body.entries;
  for (const message of known) upsert(message);
  log.addAll(entries);
  renderChatList();
  renderChat();
  return undefined;
}

function connect() {
  const source = new EventSource("/console/api/events");
  const status = (value: string, text: string) => {
    els.conn.dataset.state = value;
    els.conn.textContent = text;
  };
  source.addEventListener("open", () => {
    status("open", "已连接");
    void resync();
  });
  source.addEventListener("error", () => status("retrying", "连接断开，正在重连…"));
  source.addEventListener("message", (event) => {
    try {
      onEvent(JSON.parse(event.data));
    } catch (error) {
      console.error("console: bad event", error);
    }
  });
}

async function start(): Promise<void> {
  const chats = await api("chats");
  if (!chats.ok) {
    els.conn.dataset.state = "retrying";
    els.conn.textContent = "无法加载控制台，3 秒后重试…";
    setTimeout(start, 3000);
    return;
  }
  Object.assign(state, { bot: chats.body.bot, users: chats.body.users, chats: chats.body.chats });
  const params = new URLSearchParams(location.hash.slice(1));
  const user = state.users.find((u) => u.openId === params.get("user")) ?? state.users[0];
  const chat =
    state.chats.find((c) => c.chatId === params.get("chat")) ??
    (user && privateChatOf(user.openId)) ??
    state.chats[0];
  if (!user || !chat) throw new Error("console: the server listed no users or no chats");
  state.userId = user.openId;
  signInAs(user.openId);
  state.chatId = chat.chatId;
  state.threadRoot = params.get("thread") || undefined;
  saveLocation();
  renderSwitcher();
  showLocale();
  els.language.addEventListener("click", () => setLocale(state.locale === "en_us" ? "zh_cn" : "en_us"));
  renderChatList();
  renderChat();
  connect();
}

void start();
