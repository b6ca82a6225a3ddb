/**
 * Public types of the Feishu Open API emulator. The emulator is a real HTTP server that speaks the
 * platform's wire format (feishu-platform §2–§5), so anything that talks HTTP, including the official
 * SDK pointed at `domain: emulator.url`, can use it.
 */

import type { DlpAudit } from "./dlp.ts";
import type { FrameRecord, LongConnectionOptions } from "./long-connection/types.ts";

export type { AckResult, FrameRecord, LongConnectionOptions } from "./long-connection/types.ts";

/** The one-scan app registration (RFC 8628 device flow, `registerApp()` in the SDK): registration.ts. */
export interface RegistrationOptions {
  /** The `interval` begin returns, in seconds (the SDK waits this long between polls). Default 5. */
  intervalS?: number;
  /** Polls closer together than this get `slow_down` (RFC 8628 §3.5). Default: `intervalS`. */
  minPollGapMs?: number;
  /** How long a device code lives. Default 600. */
  expiresInS?: number;
}

/** One more app of the emulated tenant (the first is `EmulatorOptions`' own appId, appSecret, …). */
export interface EmulatorAppOptions {
  /** Must match /^cli_[0-9a-fA-F]{16}$/ (the SDK's WSClient refuses others). */
  appId: string;
  /** Default `<appId>-secret`. */
  appSecret?: string;
  /** Default `ou_bot_<appId without cli_>`. */
  botOpenId?: string;
  /** Default "Progress Bot <n>". */
  botName?: string;
  encryptKey?: string;
  verificationToken?: string;
}

export interface EmulatorOptions {
  /** The tenant's brand: a `lark` tenant's registration is confirmed on the Lark endpoint only. Default feishu. */
  tenantBrand?: "feishu" | "lark";
  registration?: RegistrationOptions;
  /** The app's granted tenant scopes; a call none of whose scopes is granted gets 99991672. Default: all. */
  grantedScopes?: string[];
  /** Must match /^cli_[0-9a-fA-F]{16}$/ for the SDK's WSClient. Default "cli_0123456789abcdef". */
  appId?: string;
  /** Default "emulator-secret". */
  appSecret?: string;
  /** Default "ou_bot0000000000000000000000000000". */
  botOpenId?: string;
  /** Default "Progress Bot". */
  botName?: string;
  /** Tenant key stamped on events and senders. Default "tenant_emulator". */
  tenantKey?: string;
  /**
   * The language of the tenant's clients (`zh_cn`, `en_us`, …; default zh_cn): which toast text a click
   * shows when it names none itself. Local mode passes the bot's locale, so a Lark-like setup reads English.
   */
  clientLocale?: string;
  /** The tenant's people by open_id, as 获取单个用户信息 names them (default: nobody). */
  userNames?: Readonly<Record<string, string>>;
  /** When set, webhook deliveries are encrypted and signed with it (§2.5). */
  encryptKey?: string;
  /** Put in `header.token` of events and callbacks. */
  verificationToken?: string;
  /** Base clock in ms (default Date.now). `clock.advance()` adds an offset on top of it. */
  now?: () => number;
  /** PATCHes per message in any sliding 1 s window (default 5, §3.2). */
  perMessagePatchPerSecond?: number;
  /** Calls per app in any sliding 1 s window, token endpoint excluded (default 50, §3.2). */
  appCallsPerSecond?: number;
  /** Lifetime of a tenant_access_token (default 7200, §3.4). */
  tokenTtlSeconds?: number;
  /** Called when an `on(...)` listener throws. Default: console.error. */
  onListenerError?: (error: unknown) => void;
  /**
   * A SQLite file that keeps messages, card revisions and send uuids across restarts, as Feishu keeps them
   * while a bot restarts (local mode: `DATA_DIR/emulator.sqlite`). Default: everything in memory.
   */
  stateFile?: string;
  /** The long-connection server's ClientConfig, redelivery schedule and framing (docs/long-connection.md). */
  longConnection?: LongConnectionOptions;
  /** Chats that are topic groups (话题群); every other group chat is a normal one (topics.ts). */
  topicGroups?: string[];
  /**
   * The tenant's data-loss-prevention audit (dlp.ts): send, reply and PATCH of content with a plain e-mail
   * address or phone number (or one of `keywords`) fail with 230028. Off by default; `setDlpAudit` changes it.
   */
  dlpAudit?: boolean | DlpAudit;
  /**
   * More apps of the same tenant (apps.ts): each its own credentials, bot, tokens, rate budget, subscription and
   * long connections; chats and messages are shared. Reach each through `emulator.app(appId)`.
   */
  otherApps?: EmulatorAppOptions[];
}

export interface RecordedCall {
  /** Emulator clock (ms) when the request arrived. */
  at: number;
  method: string;
  /** Path without the query string. */
  path: string;
  /** Query parameters as received. */
  query: Record<string, string>;
  status: number;
  /** The Feishu `code` of a JSON response body; undefined for non-JSON bodies. */
  code: number | undefined;
  messageId?: string;
  /** Wall-clock time spent answering. */
  durationMs: number;
  /** The app the call was made as: whose tenant token it carried (or whose credentials it sent). */
  appId?: string;
  /** As received, secrets included: whoever shows them redacts (the console does). */
  requestHeaders?: Record<string, string>;
  /** The parsed JSON body, when the request had one. */
  requestBody?: unknown;
  /** The JSON envelope answered, or the text of a gateway-style fault. */
  responseBody?: unknown;
}

export type SenderType = "app" | "user";

/** A read-only snapshot of a message in the emulator's store. */
export interface MessageView {
  messageId: string;
  chatId: string;
  chatType: "p2p" | "group";
  msgType: string;
  /** The content string exactly as sent (or as last patched): what every member sees. */
  content: string;
  /**
   * Cards a callback's answer showed to its clicker alone, by open_id: Feishu updates only the clicking
   * user's view of a shared card (feishu-platform Addendum, later, §1); every other member keeps seeing
   * `content` until the next PATCH or delayed update, which clears these.
   */
  views?: Record<string, string>;
  /** Emulator clock, ms. */
  createdAt: number;
  updatedAt: number;
  parentId?: string;
  rootId?: string;
  threadId?: string;
  /** Successful PATCHes plus delayed updates through card/update. */
  patches: number;
  /** Edits of a text or post message (PUT, 编辑消息); absent until the first. */
  edits?: number;
  recalled: boolean;
  senderType: SenderType;
  /** appId for the bot, open_id for users. */
  senderId: string;
  /** 1 when created, +1 on every change a reader sees (update, callback card, recall): the newest copy wins. */
  revision: number;
  /** A user's message: whom each `@_user_N` placeholder stands for (Feishu keeps them with the message). */
  mentions?: MessageMention[];
  /** An ephemeral card (仅特定人可见): the one open_id that sees it. */
  visibleTo?: string;
}

export interface MessageMention {
  key: string;
  openId: string;
  name: string;
}

/** One content a card had (kept only with a `stateFile`). */
export interface CardRevision {
  messageId: string;
  revision: number;
  /** Emulator clock, ms. */
  at: number;
  /** `callback`: shown to the clicker alone; `revert`: an update that landed during a callback, undone. */
  via: "sent" | "patch" | "card_update" | "callback" | "revert";
  content: string;
}

export interface MessagesApi {
  getMessage(messageId: string): MessageView | undefined;
  /** Oldest first; all chats when chatId is omitted. */
  listMessages(chatId?: string): MessageView[];
  /** The card's contents, oldest first (the last 50); empty without a `stateFile`. */
  cardHistory(messageId: string): CardRevision[];
  /** The content one member sees: a callback's card if it showed them one since the last update (`views`). */
  contentFor(messageId: string, openId: string): string | undefined;
}

export interface EmulatorEvents {
  message_created: MessageView;
  /**
   * `callback`: the card of a callback response, shown to its clicker (`applyCallbackCard`); `revert`: an
   * update that landed while a callback was answered, undone as Feishu undoes it; `edit`: a text message the
   * bot edited (PUT /im/v1/messages/:id).
   */
  message_patched: {
    message: MessageView;
    /** `cardkit`: a CardKit entity's full update or settings; `stream`: one element's streamed text. */
    via: "patch" | "card_update" | "callback" | "revert" | "edit" | "cardkit" | "stream";
  };
  message_recalled: MessageView;
  call: RecordedCall;
  /** A long-connection frame sent or received (or a connection opened/closed). */
  frame: FrameRecord;
}

export type FaultResponse =
  | { httpStatus: number; code?: number; msg?: string; headers?: Record<string, string> }
  | { delayMs: number };

export interface Fault {
  /**
   * Omitted fields match everything. A string path matches as a prefix. `bodyIncludes` matches calls whose
   * JSON body (or the card JSON in its `content`) contains the text, e.g. to refuse one card's content.
   */
  match?: { method?: string; path?: string | RegExp; bodyIncludes?: string };
  /** How many matching calls this fault applies to. */
  times: number;
  response: FaultResponse;
}

export interface FaultHandle {
  /** Matching calls this fault will still affect. */
  readonly remaining: number;
  cancel(): void;
}

export interface EmulatorClock {
  now(): number;
  /** Moves the emulator's time forward (or back, with a negative value). */
  advance(ms: number): void;
}

export interface UserMessageInput {
  /** Default: "oc_p2p_<senderOpenId>" for p2p, "oc_group_emulator" for groups. */
  chatId?: string;
  chatType: "p2p" | "group";
  senderOpenId: string;
  text: string;
  /** Adds a mention of the bot, as the first `@_user_N` placeholder. */
  mentionBot?: boolean;
  mentions?: { openId: string; name: string }[];
  messageId?: string;
  messageType?: "text" | "post" | "image" | "file" | "audio" | "media" | "sticker";
  /** Makes the message a reply to this one (sets parent_id and root_id). */
  parentId?: string;
  /**
   * With `parentId` in a normal group: reply in a thread under that message (opening it if needed), as
   * 回复话题 does. A reply in a topic group, or to a message already in a thread, is in its topic anyway.
   */
  inThread?: boolean;
  /**
   * Leaves `thread_id` out of the event (the message keeps it): the shape the field reports for replies in
   * topic groups (larksuite/openclaw-lark, feishu-platform §5.1), which the docs do not describe.
   */
  eventWithoutThreadId?: boolean;
}

export interface CardActionInput {
  messageId: string;
  operatorOpenId: string;
  value?: Record<string, unknown>;
  formValue?: Record<string, unknown>;
  name?: string;
  /** Default "button" (a form submit also arrives as "button", §2.1). */
  tag?: string;
  /**
   * The clicking client's language (`zh_cn`, `en_us`, …; default the emulator's `clientLocale`): it picks the
   * toast's `i18n` text, as the Feishu client does. The callback does not carry it (feishu-platform §2.1).
   */
  locale?: string;
}

/** What became of a callback response's card (see `Emulator.applyCallbackCard`). */
export type CallbackCardResult =
  | { ok: true; message: MessageView }
  /** `code` is the error the Feishu client shows: 200830 (not a 2.0 card), 200673 (a bad card), 230011 (recalled). */
  | { ok: false; code: number; reason: string };

/** What a person sees after a click (see `Emulator.click`): the toast, and what became of the answer's card. */
export interface ClickOutcome {
  toast: { type: "success" | "error" | "warning" | "info"; content: string } | null;
  durationMs: number;
  /** HTTP status of a webhook answer, or the long connection's ack code. */
  status?: number;
  /** `applied`: shown to the clicker (every other member keeps the card as it was; see `MessageView.views`). */
  card: "none" | "applied" | "rejected";
  /**
   * Updates (PATCH, delayed update) that landed while the callback was answered: Feishu reverts them, the
   * answer's card wins (feishu-platform §2.3 "Card reverts").
   */
  revertedUpdates?: number;
  /** `code: reason` of the error the client shows. */
  error?: string;
  /** The bot's answer as it arrived (parsed JSON), when there was one in time. */
  answer?: unknown;
}

export interface WebhookResult {
  status: number;
  /** Parsed JSON when the response is JSON, else the text. */
  body: unknown;
  durationMs: number;
}
