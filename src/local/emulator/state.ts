import { CODES, fail } from "./errors.ts";
import { newId } from "./ids.ts";
import type { MessageView, SenderType } from "./types.ts";

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
}

/** Every message the emulator knows: the bot's own and the ones users "sent" through `userMessage`. */
export class MessageStore {
  readonly #messages = new Map<string, MessageView>();

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
    };
    if (input.parent) {
      const rootId = input.parent.rootId ?? input.parent.messageId;
      message.parentId = input.parent.messageId;
      message.rootId = rootId;
      const threadId = input.parent.threadId ?? (input.replyInThread ? this.#openThread(rootId) : undefined);
      if (threadId) message.threadId = threadId;
    }
    this.#messages.set(messageId, message);
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

  /** Replaces a card's content. `countAsPatch: false` for updates that are no API call (a callback's card). */
  applyUpdate(
    messageId: string,
    content: string,
    now: number,
    options: { countAsPatch?: boolean } = {},
  ): MessageView {
    const message = this.#mutable(messageId);
    message.content = content;
    message.updatedAt = now;
    if (options.countAsPatch ?? true) message.patches += 1;
    return { ...message };
  }

  recall(messageId: string, now: number): MessageView {
    const message = this.#mutable(messageId);
    message.recalled = true;
    message.updatedAt = now;
    return { ...message };
  }

  #mutable(messageId: string): MessageView {
    const message = this.#messages.get(messageId);
    if (!message) throw new Error(`unknown message ${messageId}`);
    return message;
  }

  #openThread(rootId: string): string {
    const root = this.#mutable(rootId);
    root.threadId ??= newId.thread();
    return root.threadId;
  }
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
  }
}
