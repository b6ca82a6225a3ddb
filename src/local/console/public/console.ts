import type { CardAction } from "./card-values.ts";
import { type MessageView, messagePreview, renderMessage } from "./chat.ts";
import { createComposer } from "./composer.ts";
import {
  $,
  api,
  canWrite,
  chatLabel,
  currentChat,
  els,
  messagesOf,
  privateChatOf,
  saveLocation,
  state,
  toast,
  userName,
} from "./console-state.ts";
import { h } from "./dom.ts";
import { createLogPanel } from "./log.ts";
import { createSidebar } from "./sidebar.ts";
import { openAs } from "./sign-in.ts";
import {
  createThreadNav,
  mainFlow,
  threadFooter,
  threadHeader,
  threadMessages,
  topicPlaceholder,
} from "./topics.ts";
import type { ConsoleChat, ConsoleEvent, ConsoleMessage, LogEntry } from "./types.ts";
import { savedLocale, saveLocale, showLocale, signInAs } from "./viewer.ts";
import { type ConsoleLocale, isConsoleLocale, words } from "./words.ts";

/**
 * The local console: a Feishu-like chat over the emulator. State comes from /console/api (loaded on every
 * (re)connect of the event stream) and stays live through the stream; the newest revision of a message wins.
 *
 * This file wires the chat view, the composer, the call log and the event stream together; its parts:
 * console-state.ts (state, elements, API, toasts), sidebar.ts (user switcher, chat list), viewer.ts
 * (language, sign-in cookie), chat.ts (a message), topics.ts (threads), composer.ts, log.ts.
 */

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

const { renderSwitcher, renderChatList } = createSidebar({ setUser, selectChat });

const messageView = (): MessageView => ({
  users: state.users,
  currentUserId: state.userId,
  lookup: (messageId: string) => state.messages.get(messageId),
  onAction: sendAction,
  onNotice: (text: string) => toast("warning", text),
  onReply: (message: ConsoleMessage) =>
    canWrite(currentChat()) ? composer.setReplyTo(message) : toast("info", words().cannotWriteHere),
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

function setLocale(locale: ConsoleLocale): void {
  state.locale = locale;
  saveLocale(locale);
  showLocale();
  renderSwitcher();
  renderChatList();
  renderChat();
  log.redraw();
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
  const w = words();
  els.members.textContent =
    chat.type === "group"
      ? w.groupMembers(chat.memberIds.map(userName).join(w.memberSeparator), state.bot.name)
      : w.privateMembers(userName(chat.ownerId), state.bot.name);
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
            text: w.emptyChat,
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
    quote.textContent = words().replyTo(message.sender.name, messagePreview(message));
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
    toast("error", words().notDelivered(String(result.body.error ?? result.status)));
    return true;
  }
  toast("error", result.body.error?.message ?? words().sendFailed(result.status));
  return false;
}

async function sendAction(messageId: string, action: CardAction): Promise<unknown> {
  const result = await api("actions", { messageId, userId: state.userId, locale: state.locale, ...action });
  if (!result.ok) return toast("error", result.body.error?.message ?? words().actionFailed(result.status));
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
  if (!messages.ok || !calls.ok) return toast("error", words().resyncFailed);
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
    status("open", words().connected);
    void resync();
  });
  source.addEventListener("error", () => status("retrying", words().reconnecting));
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
    els.conn.textContent = words().loadFailed;
    setTimeout(start, 3000);
    return;
  }
  Object.assign(state, { bot: chats.body.bot, users: chats.body.users, chats: chats.body.chats });
  const botLocale: unknown = chats.body.locale;
  state.locale = savedLocale() ?? (isConsoleLocale(botLocale) ? botLocale : "zh_cn");
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
  showLocale();
  renderSwitcher();
  els.language.addEventListener("click", () => setLocale(state.locale === "en_us" ? "zh_cn" : "en_us"));
  renderChatList();
  renderChat();
  connect();
}

void start();
