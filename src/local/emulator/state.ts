import { CODES, fail } from "./errors.ts";
import { newId } from "./ids.ts";
import type { Journal } from "./journal.ts";
import { type ChatMode, ChatModes, placeMessage } from "./topics.ts";
import type { CardRevision, MessageMention, MessageView, SenderType } from "./types.ts";

const HOUR_MS = 3_600_000;
const MIN_MS = 60_000;

export interface NewMessage {
  chatId: string;
  chatType: "p2p" | "group";
  msgType: string;
  content: string;
  senderType: SenderType;
  senderId: string;
  messageId?: string;
  parent?: MessageView;
  replyInThread?: boolean;
  mentions?: MessageMention[];
  /** An ephemeral card: only this open_id sees it (ephemeral-routes.ts). */
  visibleTo?: string;
}

/**
 * Every message the emulator knows: the bot's own and the ones users "sent" through `userMessage`. With a
 * journal, every change is written through (synchronously, so a kill loses nothing acknowledged) and the
 * messages are read back on start.
 */
export class MessageStore {
  readonly #messages = new Map<string, MessageView>();
  readonly #journal: Journal | undefined;
  /** Normal groups and topic groups (topics.ts); p2p chats have no mode. */
  readonly chatModes = new ChatModes();

  constructor(journal?: Journal) {
    this.#journal = journal;
    for (const message of journal?.loaded.messages ?? []) this.#messages.set(message.messageId, message);
  }

  chatMode(chatId: string): ChatMode {
    return this.chatModes.get(chatId);
  }

  create(input: NewMessage, now: number): MessageView {
    const messageId = input.messageId ?? newId.message();
    if (this.#messages.has(messageId)) throw new Error(`message ${messageId} already exists`);
    const message: MessageView = {
      messageId,
      chatId: input.chatId,
      chatType: input.chatType,
      msgType: input.msgType,
      content: input.content,
      createdAt: now,
      updatedAt: now,
      patches: 0,
      recalled: false,
      senderType: input.senderType,
      senderId: input.senderId,
      revision: 1,
      ...(input.mentions && input.mentions.length > 0 ? { mentions: input.mentions } : {}),
      ...(input.visibleTo !== undefined ? { visibleTo: input.visibleTo } : {}),
    };
    const placement = placeMessage({
      mode: this.chatModes.get(input.chatId),
      chatType: input.chatType,
      ...(input.parent ? { parent: input.parent } : {}),
      replyInThread: input.replyInThread ?? false,
    });
    if (placement.parentId !== undefined) message.parentId = placement.parentId;
    if (placement.rootId !== undefined) message.rootId = placement.rootId;
    const thread = placement.thread;
    if (thread?.kind === "existing") message.threadId = thread.threadId;
    else if (thread?.kind === "new")
      message.threadId =
        thread.on === "self" ? newId.thread() : this.#openThread(placement.rootId ?? messageId);
    this.#messages.set(messageId, message);
    this.#persist(message, "sent");
    return { ...message };
  }

  get(messageId: string): MessageView | undefined {
    const message = this.#messages.get(messageId);
    return message ? { ...message } : undefined;
  }

  /** The message, or the platform's "invalid message id" error. */
  require(messageId: string): MessageView {
    const message = this.get(messageId);
    if (!message) throw fail(CODES.messageInvalid, `invalid message_id: ${messageId}`);
    return message;
  }

  /** The type of a chat seen before; otherwise p2p for "oc_p2p_…" ids and group for the rest. */
  chatTypeOf(chatId: string): "p2p" | "group" {
    for (const message of this.#messages.values()) if (message.chatId === chatId) return message.chatType;
    return chatId.startsWith("oc_p2p_") ? "p2p" : "group";
  }

  list(chatId?: string): MessageView[] {
    return [...this.#messages.values()]
      .filter((message) => chatId === undefined || message.chatId === chatId)
      .map((message) => ({ ...message }));
  }

  cardHistory(messageId: string): CardRevision[] {
    return this.#journal?.revisions(messageId) ?? [];
  }

  /**
   * Replaces a card's content for every member (a PATCH, a delayed update): cards a callback showed to its
   * clicker alone (`views`) are gone, everyone sees this one.
   */
  applyUpdate(
    messageId: string,
    content: string,
    now: number,
    options: { via?: "patch" | "card_update" } = {},
  ): MessageView {
    const message = this.#mutable(messageId);
    message.content = content;
    delete message.views;
    message.updatedAt = now;
    message.revision += 1;
    message.patches += 1;
    this.#persist(message, options.via ?? "patch");
    return { ...message };
  }

  /**
   * A callback's card, shown to the one who clicked: every other member keeps seeing `content` (feishu-platform
   * Addendum, later, §1). No API call: not counted in `patches`.
   */
  showTo(messageId: string, viewer: string, content: string, now: number): MessageView {
    const message = this.#mutable(messageId);
    message.views = { ...message.views, [viewer]: content };
    message.updatedAt = now;
    message.revision += 1;
    this.#persist(message, "callback");
    return { ...message };
  }

  /**
   * Puts back what every member saw before a callback began: an update that landed while the callback was
   * answered is reverted (feishu-platform §2.3 "Card reverts"). Its PATCH still counts: it was made.
   */
  restore(messageId: string, seen: Pick<MessageView, "content" | "views">, now: number): MessageView {
    const message = this.#mutable(messageId);
    message.content = seen.content;
    if (seen.views) message.views = seen.views;
    else delete message.views;
    message.updatedAt = now;
    message.revision += 1;
    this.#persist(message, "revert");
    return { ...message };
  }

  /** A text message's new content (编辑消息): counted apart from PATCHes, which are for cards. */
  applyEdit(messageId: string, content: string, now: number): MessageView {
    const message = this.#mutable(messageId);
    message.content = content;
    message.updatedAt = now;
    message.revision += 1;
    message.edits = (message.edits ?? 0) + 1;
    this.#persist(message);
    return { ...message };
  }

  recall(messageId: string, now: number): MessageView {
    const message = this.#mutable(messageId);
    message.recalled = true;
    message.updatedAt = now;
    message.revision += 1;
    this.#persist(message);
    return { ...message };
  }

  /** Writes the message through; a card's new content also becomes a revision. */
  #persist(message: MessageView, via?: CardRevision["via"]): void {
    if (!this.#journal) return;
    this.#journal.save(message);
    if (via !== undefined && message.msgType === "interactive") {
      this.#journal.addRevision({
        messageId: message.messageId,
        revision: message.revision,
        at: message.updatedAt,
        via,
        content: message.content,
      });
    }
  }

  #mutable(messageId: string): MessageView {
    const message = this.#messages.get(messageId);
    if (!message) throw new Error(`unknown message ${messageId}`);
    return message;
  }

  #openThread(rootId: string): string {
    const root = this.#mutable(rootId);
    if (root.threadId === undefined) {
      root.threadId = newId.thread();
      this.#persist(root);
    }
    return root.threadId;
  }
}

/** What `viewer` sees of a message: the card a callback showed them alone, else what every member sees. */
export function contentFor(message: MessageView, viewer: string | undefined): string {
  return (viewer !== undefined ? message.views?.[viewer] : undefined) ?? message.content;
}

/**
 * Issued tenant_access_tokens (§3.4): a call while the newest token has ≥30 min left returns that token;
 * otherwise a new one is issued and the old one stays valid until it expires.
 */
export class TokenStore {
  readonly #expiresAt = new Map<string, number>();
  readonly #ttlMs: number;
  #newest: string | undefined;

  constructor(ttlMs: number) {
    this.#ttlMs = ttlMs;
  }

  issue(now: number): { token: string; expireSeconds: number } {
    const newest = this.#newest;
    const newestExpiry = newest === undefined ? undefined : this.#expiresAt.get(newest);
    if (newest !== undefined && newestExpiry !== undefined && newestExpiry - now >= 30 * MIN_MS) {
      return { token: newest, expireSeconds: Math.floor((newestExpiry - now) / 1000) };
    }
    const token = newId.tenantToken();
    this.#expiresAt.set(token, now + this.#ttlMs);
    this.#newest = token;
    return { token, expireSeconds: Math.floor(this.#ttlMs / 1000) };
  }

  isValid(token: string, now: number): boolean {
    const expiry = this.#expiresAt.get(token);
    return expiry !== undefined && now < expiry;
  }

  /** Invalidates every token issued so far. */
  expireAll(): void {
    this.#expiresAt.clear();
    this.#newest = undefined;
  }
}

interface UpdateToken {
  messageId: string;
  issuedAt: number;
  uses: number;
}

/** Delayed-update tokens from card callbacks (§2.4): valid 30 min, at most 2 uses. */
export class UpdateTokenStore {
  static readonly TTL_MS = 30 * MIN_MS;
  static readonly MAX_USES = 2;
  readonly #tokens = new Map<string, UpdateToken>();

  issue(messageId: string, now: number): string {
    const token = newId.updateToken();
    this.#tokens.set(token, { messageId, issuedAt: now, uses: 0 });
    return token;
  }

  /** Checks a token without using it; returns the message it belongs to. */
  check(token: string, now: number): string {
    const entry = this.#tokens.get(token);
    if (!entry) throw fail(CODES.updateTokenBadFormat, "invalid token: unknown or malformed");
    if (now - entry.issuedAt > UpdateTokenStore.TTL_MS) throw fail(CODES.updateTokenExpired, "token expired");
    if (entry.uses >= UpdateTokenStore.MAX_USES)
      throw fail(CODES.updateTokenUsedUp, "token usage count exceeds the limit");
    return entry.messageId;
  }

  /** Counts one use of a token that passed `check`. */
  consume(token: string): void {
    const entry = this.#tokens.get(token);
    if (entry) entry.uses += 1;
  }
}

/** `uuid` idempotency for send/reply (§3.1): the same uuid within 1 h yields the first message. */
export class UuidCache {
  readonly #seen = new Map<string, { messageId: string; at: number }>();
  readonly #journal: Journal | undefined;

  constructor(journal?: Journal) {
    this.#journal = journal;
    for (const { uuid, messageId, at } of journal?.loaded.uuids ?? [])
      this.#seen.set(uuid, { messageId, at });
  }

  lookup(uuid: string, now: number): string | undefined {
    const hit = this.#seen.get(uuid);
    if (!hit) return undefined;
    if (now - hit.at >= HOUR_MS) {
      this.#seen.delete(uuid);
      return undefined;
    }
    return hit.messageId;
  }

  remember(uuid: string, messageId: string, now: number): void {
    this.#seen.set(uuid, { messageId, at: now });
    this.#journal?.saveUuid(uuid, messageId, now);
  }
}
