import type { Card } from "../cards/model.ts";
import { AppError } from "../errors.ts";

/**
 * The narrow port the Feishu channel needs from the Open API. The SDK adapter (lark-messenger.ts)
 * implements it over HTTP; tests may hand in anything that satisfies it.
 */
export interface FeishuMessenger {
  /**
   * `inThread`: the reply goes into the message's topic, opening one under it if there is none
   * (`reply_in_thread`). A refusal is reported as it came; falling back is the channel's (thread-fallback.ts).
   */
  replyCard(
    messageId: string,
    card: Card,
    options?: { uuid?: string; inThread?: boolean },
  ): Promise<{ messageId: string }>;
  sendCard(target: MessageTarget, card: Card, options?: { uuid?: string }): Promise<{ messageId: string }>;
  patchCard(messageId: string, card: Card): Promise<void>;
  /** A short text message; `mentionOpenIds` are @-mentioned (a PATCH notifies nobody, a new message does). */
  sendText(
    target: MessageTarget,
    text: string,
    options?: { mentionOpenIds?: string[]; replyTo?: string; inThread?: boolean },
  ): Promise<{ messageId: string }>;
  /**
   * Rewrites one of the bot's own text messages (编辑消息, feishu-platform §3.6): the chat keeps the message,
   * marked edited, instead of a recall's 撤回了一条消息. `mentionOpenIds` as for `sendText`.
   */
  editText(messageId: string, text: string, options?: { mentionOpenIds?: string[] }): Promise<void>;
  recall(messageId: string): Promise<void>;
  /** What the platform says about one message now: `deleted` once it was recalled or deleted. */
  messageStatus(messageId: string): Promise<{ deleted: boolean }>;
  botInfo(): Promise<{ openId: string; name: string }>;
  /**
   * A person's name (获取单个用户信息, `contact/v3/users/:open_id`): for the words a toast cannot @-mention
   * (a toast is plain text). Fails for someone outside the app's contact scope, or without the permission.
   */
  userName(openId: string): Promise<string>;
}

/** A text message's body with its @-mentions in front, the same for every messenger (the contract compares them). */
export function textContent(text: string, mentionOpenIds: readonly string[] = []): string {
  const mentions = mentionOpenIds.map((id) => mentionTag(id)).join(" ");
  return JSON.stringify({ text: mentions ? `${mentions} ${text}` : text });
}

/** An @-mention inside a text message (Feishu shows the person's name). */
export function mentionTag(openId: string): string {
  return `<at user_id="${openId.replace(/"/g, "")}"></at>`;
}

/** An Open API call gives up after this long unless told otherwise. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

export type MessageTarget = { chatId: string } | { openId: string };

/** Feishu codes the channel acts on (feishu-platform §3.3). */
export const FEISHU_CODES = {
  patchRateLimited: 230020,
  cardTooLarge: 230025,
  /** The tenant's data-loss-prevention audit refused the content: plain e-mail addresses, phone numbers. */
  auditRefused: 230028,
  messageTooOld: 230031,
  messageRecalled: 230011,
  messageDeleted: 230110,
  /** Invalid parameter; for a message id the platform gave us, the message no longer (or never) exists. */
  invalidParam: 230001,
  invalidCard: 230099,
  appRateLimited: 99991400,
  tokenInvalid: 99991663,
  tokenMissing: 99991661,
} as const;

/** An Open API call that failed: the method, Feishu's code (when it sent one), the HTTP status, and how long to wait. */
export class FeishuApiError extends AppError {
  readonly method: string;
  readonly feishuCode: number | undefined;
  readonly httpStatus: number | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(init: {
    method: string;
    message: string;
    feishuCode?: number;
    httpStatus?: number;
    retryAfterMs?: number;
    cause?: unknown;
  }) {
    super("INTERNAL", `${init.method} failed: ${init.message}`, { cause: init.cause, status: 502 });
    this.name = "FeishuApiError";
    this.method = init.method;
    this.feishuCode = init.feishuCode;
    this.httpStatus = init.httpStatus;
    this.retryAfterMs = init.retryAfterMs;
  }

  /** 230020 or HTTP 429: slow down and try the latest state again. */
  get rateLimited(): boolean {
    return (
      this.feishuCode === FEISHU_CODES.patchRateLimited ||
      this.feishuCode === FEISHU_CODES.appRateLimited ||
      this.httpStatus === 429
    );
  }

  /** The message can no longer be updated: older than 14 days, recalled or deleted. */
  get messageGone(): boolean {
    return (
      this.feishuCode === FEISHU_CODES.messageTooOld ||
      this.feishuCode === FEISHU_CODES.messageRecalled ||
      this.feishuCode === FEISHU_CODES.messageDeleted
    );
  }

  /** The platform refused the card itself (230099 invalid content, 230025 too large): re-render it plainer. */
  get cardRefused(): boolean {
    return this.feishuCode === FEISHU_CODES.invalidCard || this.feishuCode === FEISHU_CODES.cardTooLarge;
  }

  /**
   * The tenant's data-loss-prevention audit refused this content (230028, on send, reply and PATCH): neither
   * a rate limit nor a gone message; the same text is refused again, so it is re-rendered masked, then without
   * the model's text (cards/redaction.ts).
   */
  get auditRefused(): boolean {
    return this.feishuCode === FEISHU_CODES.auditRefused;
  }

  /** Recalled or deleted: the message is no longer in the chat (230031 is not: that card is only too old). */
  get messageRemoved(): boolean {
    return (
      this.feishuCode === FEISHU_CODES.messageRecalled || this.feishuCode === FEISHU_CODES.messageDeleted
    );
  }

  /** No answer, a timeout, or a 5xx: worth a bounded retry. */
  get transient(): boolean {
    return this.httpStatus === undefined || this.httpStatus >= 500;
  }
}
