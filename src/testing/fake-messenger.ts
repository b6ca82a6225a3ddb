import type { Card } from "../cards/model.ts";
import {
  DEFAULT_REQUEST_TIMEOUT_MS,
  FEISHU_CODES,
  FeishuApiError,
  type FeishuMessenger,
  type MessageTarget,
  textContent,
} from "../feishu/messenger.ts";
import { CODES, fail } from "../local/emulator/errors.ts";
import { contentFor, type MessageStore } from "../local/emulator/state.ts";
import type { MessageView } from "../local/emulator/types.ts";
import {
  type FakeFault,
  type FakeFaultHandle,
  FakeFaultQueue,
  type FakeFaultResponse,
  faultError,
  type MessengerMethod,
  toApiError,
} from "./fake-faults.ts";
import { FakePlatform, type FakePlatformOptions } from "./fake-platform.ts";

/**
 * An in-memory FeishuMessenger that answers as the SDK messenger over the emulator does — same messages,
 * same FeishuApiError (method, Feishu code, HTTP status, retry-after) — without HTTP, tokens or sockets, so
 * channel tests run on fake timers in milliseconds. test/messenger-contract.test.ts runs the same cases
 * against both; where they differ, the emulator is right and this file is fixed.
 *
 * What a message may become is the emulator's own state (MessageStore, uuid cache, rate windows, content
 * checks): fake-platform.ts re-implements each endpoint's order of checks, this file the SDK messenger's
 * error mapping, faults, delays and timeouts. Delays and timeouts run on `setTimeout`, looked up at call
 * time, so `vi.useFakeTimers()` drives them whenever it was installed.
 */

export interface FakeMessengerOptions {
  appId?: string;
  botOpenId?: string;
  botName?: string;
  /** The tenant's people by open_id, as 获取单个用户信息 names them (default: nobody), like the emulator's. */
  userNames?: Readonly<Record<string, string>>;
  /** The platform's time before `advance()`; read at every call (default `Date.now()`, faked by vitest too). */
  now?: () => number;
  /** The SDK messenger's per-call timeout: a call delayed this long fails as a timeout (no HTTP status). */
  timeoutMs?: number;
  perMessagePatchPerSecond?: number;
  appCallsPerSecond?: number;
  /** The tenant's data-loss-prevention audit (the emulator's `dlpAudit`): 230028 for e-mail addresses and phone numbers. */
  dlpAudit?: FakePlatformOptions["dlpAudit"];
}

/** One messenger call as it was made and how it ended. */
export interface FakeCall {
  method: MessengerMethod;
  at: number;
  /** The message the call is about (a reply's parent), or the one it created. */
  messageId?: string;
  target?: MessageTarget;
  card?: Card;
  text?: string;
  options?: Record<string, unknown>;
  /** Undefined while a delayed call is still under way. */
  outcome?: { ok: true; messageId?: string } | { ok: false; error: FeishuApiError };
}

const API_NAMES: Record<MessengerMethod, string> = {
  replyCard: "im.message.reply",
  sendCard: "im.message.create",
  patchCard: "im.message.patch",
  sendText: "im.message.create",
  editText: "im.message.update",
  recall: "im.message.delete",
  messageStatus: "im.message.get",
  botInfo: "bot.info",
  userName: "contact.user.get",
};
const TOKEN_TTL_MS = 7200_000;

export class FakeMessenger implements FeishuMessenger {
  readonly appId: string;
  readonly botOpenId: string;
  readonly botName: string;
  readonly userNames: Readonly<Record<string, string>>;
  readonly platform: FakePlatform;
  readonly calls: FakeCall[] = [];
  /** Tenant tokens fetched: the first call's, and one more after every expiry or token fault. */
  tokenFetches = 0;
  /** Anything but a FeishuApiError thrown by a call its caller had given up on (a bug in the fake). */
  readonly lateErrors: unknown[] = [];
  readonly timeoutMs: number;
  readonly #faults = new FakeFaultQueue();
  /** When the tenant token the SDK messenger holds runs out (the emulator's 2 h), on the fake's clock. */
  #tokenExpiresAt = Number.NEGATIVE_INFINITY;

  constructor(options: FakeMessengerOptions = {}) {
    this.appId = options.appId ?? "cli_0123456789abcdef";
    this.botOpenId = options.botOpenId ?? "ou_bot0000000000000000000000000000";
    this.botName = options.botName ?? "Progress Bot";
    this.userNames = options.userNames ?? {};
    this.timeoutMs = options.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.platform = new FakePlatform({
      appId: this.appId,
      now: options.now ?? (() => Date.now()),
      perMessagePatchPerSecond: options.perMessagePatchPerSecond ?? 5,
      appCallsPerSecond: options.appCallsPerSecond ?? 50,
      ...(options.dlpAudit !== undefined ? { dlpAudit: options.dlpAudit } : {}),
    });
  }

  /** Every message, the bot's and the users' (fake-inbound.ts adds theirs). */
  get store(): MessageStore {
    return this.platform.store;
  }

  /** The platform's time: `advance()` moves it on (a card 15 days old) without moving timers. */
  get clock(): FakePlatform["clock"] {
    return this.platform.clock;
  }

  // platform side ------------------------------------------------------------------------------------

  /** The next matching calls fail or are delayed (see FakeFault). */
  fail(fault: FakeFault): FakeFaultHandle {
    return this.#faults.add(fault);
  }

  clearFaults(): void {
    this.#faults.clear();
  }

  /** Invalidates the tenant token: the next call fetches a new one, as the SDK messenger does, unseen. */
  expireTokens(): void {
    this.#tokenExpiresAt = Number.NEGATIVE_INFINITY;
  }

  /** Recalls a message as its sender would; later reply/PATCH/recall fail with 230011. */
  recallMessage(messageId: string): MessageView {
    const message = this.store.get(messageId);
    if (!message) throw new Error(`recall: unknown message ${messageId}`);
    return message.recalled ? message : this.store.recall(messageId, this.clock.now());
  }

  message(messageId: string): MessageView | undefined {
    return this.store.get(messageId);
  }

  messages(chatId?: string): MessageView[] {
    return this.store.list(chatId);
  }

  /**
   * The card a message shows now: to every member, or to `viewer` (who may see a callback's card that the
   * others do not, until the next PATCH).
   */
  cardOf(messageId: string, viewer?: string): Card {
    const message = this.store.get(messageId);
    if (!message) throw new Error(`no message ${messageId}`);
    return JSON.parse(contentFor(message, viewer)) as Card;
  }

  /** How each call of `method` ended: 0, Feishu's code, the bare HTTP status, -1 timed out, -2 under way. */
  codesOf(method: MessengerMethod, messageId?: string): number[] {
    return this.callsTo(method, messageId).map((c) =>
      c.outcome === undefined
        ? -2
        : c.outcome.ok
          ? 0
          : (c.outcome.error.feishuCode ?? c.outcome.error.httpStatus ?? -1),
    );
  }

  callsTo(method: MessengerMethod, messageId?: string): FakeCall[] {
    return this.calls.filter(
      (c) => c.method === method && (messageId === undefined || c.messageId === messageId),
    );
  }

  // FeishuMessenger ------------------------------------------------------------------------------------

  replyCard(messageId: string, card: Card, options?: { uuid?: string; inThread?: boolean }) {
    return this.#call({ method: "replyCard", messageId, card, ...opts(options) }, () =>
      this.platform.reply(messageId, "interactive", JSON.stringify(card), options),
    );
  }

  sendCard(target: MessageTarget, card: Card, options?: { uuid?: string }) {
    return this.#call({ method: "sendCard", target, card, ...opts(options) }, () =>
      this.platform.create(target, "interactive", JSON.stringify(card), options?.uuid),
    );
  }

  async patchCard(messageId: string, card: Card): Promise<void> {
    await this.#call({ method: "patchCard", messageId, card }, () => {
      this.platform.patch(messageId, JSON.stringify(card));
      return {};
    });
  }

  sendText(
    target: MessageTarget,
    text: string,
    options?: { mentionOpenIds?: string[]; replyTo?: string; inThread?: boolean },
  ) {
    // The same text the SDK messenger sends: `<at>` tags in front of it (the contract compares contents).
    const body = textContent(text, options?.mentionOpenIds);
    const replyTo = options?.replyTo;
    return this.#call(
      { method: "sendText", target, text, ...(replyTo ? { messageId: replyTo } : {}), ...opts(options) },
      () =>
        replyTo
          ? this.platform.reply(replyTo, "text", body, options)
          : this.platform.create(target, "text", body),
      replyTo ? "im.message.reply" : undefined,
    );
  }

  async editText(messageId: string, text: string, options?: { mentionOpenIds?: string[] }): Promise<void> {
    await this.#call({ method: "editText", messageId, text, ...opts(options) }, () => {
      this.platform.edit(messageId, "text", textContent(text, options?.mentionOpenIds));
      return {};
    });
  }

  async recall(messageId: string): Promise<void> {
    await this.#call({ method: "recall", messageId }, () => {
      this.platform.recall(messageId);
      return {};
    });
  }

  messageStatus(messageId: string) {
    return this.#call({ method: "messageStatus", messageId }, () => this.platform.status(messageId));
  }

  botInfo() {
    return this.#call({ method: "botInfo" }, () => ({ openId: this.botOpenId, name: this.botName }));
  }

  userName(openId: string) {
    return this.#call({ method: "userName" }, () => {
      const name = Object.hasOwn(this.userNames, openId) ? this.userNames[openId] : undefined;
      if (name === undefined) throw fail(CODES.contactNoAuthority, "no user authority error");
      return name;
    });
  }

  // the way every call goes ----------------------------------------------------------------------------

  /**
   * Faults first (as the emulator checks them before anything), then the token, then the app-wide window,
   * then the endpoint. A delay postpones all of that; past `timeoutMs` the caller gets a timeout, and the
   * call is lost or (`landsLate`) applied when its delay ends, as with the emulator (fake-faults.ts).
   */
  async #call<T>(record: Omit<FakeCall, "at">, handle: () => T, apiName?: string): Promise<T> {
    const call: FakeCall = { ...record, at: this.clock.now() };
    this.calls.push(call);
    const api = apiName ?? API_NAMES[call.method];
    const first = this.#faults.take(call.method, call.messageId, contentOf(call), repliesInThread(call));
    if (first && "delayMs" in first) {
      if (first.delayMs < this.timeoutMs) {
        await this.#sleep(first.delayMs);
        return this.#attempt(call, api, handle, undefined);
      }
      const timeout = new FeishuApiError({ method: api, message: `timeout of ${this.timeoutMs}ms exceeded` });
      if (first.landsLate) {
        // The caller gives up; the platform applies the call later (what it did is recorded in `outcome`).
        void this.#sleep(first.delayMs).then(() => {
          try {
            this.#attempt(call, api, handle, undefined);
          } catch (error) {
            if (!(error instanceof FeishuApiError)) this.lateErrors.push(error);
          }
        });
      } else call.outcome = { ok: false, error: timeout };
      await this.#sleep(this.timeoutMs);
      throw timeout;
    }
    return this.#attempt(call, api, handle, first);
  }

  #attempt<T>(call: FakeCall, api: string, handle: () => T, fault: FakeFaultResponse | undefined): T {
    // The SDK messenger drops an invalidated token and tries once more; only a second refusal surfaces.
    for (
      let attempt = 0, next = fault;
      ;
      attempt += 1,
        next = this.#faults.take(call.method, call.messageId, contentOf(call), repliesInThread(call))
    ) {
      try {
        if (this.clock.now() >= this.#tokenExpiresAt) {
          this.tokenFetches += 1;
          this.#tokenExpiresAt = this.clock.now() + TOKEN_TTL_MS;
        }
        if (next && !("delayMs" in next)) throw faultError(api, next);
        const taken = this.platform.takeAppSlot();
        if (!taken.ok)
          throw new FeishuApiError({
            method: api,
            message: "request trigger frequency limit",
            feishuCode: FEISHU_CODES.appRateLimited,
            httpStatus: 429,
            retryAfterMs: Math.max(1, Math.ceil(taken.retryAfterMs / 1000)) * 1000,
          });
        const value = handle();
        const created =
          typeof value === "object" && value !== null && "messageId" in value ? value.messageId : undefined;
        call.outcome = { ok: true, ...(typeof created === "string" ? { messageId: created } : {}) };
        if (typeof created === "string" && call.messageId === undefined) call.messageId = created;
        return value;
      } catch (error) {
        const mapped = toApiError(api, error);
        const tokenProblem =
          mapped.feishuCode === FEISHU_CODES.tokenInvalid || mapped.feishuCode === FEISHU_CODES.tokenMissing;
        if (tokenProblem && attempt === 0) {
          this.#tokenExpiresAt = Number.NEGATIVE_INFINITY;
          continue;
        }
        call.outcome = { ok: false, error: mapped };
        throw mapped;
      }
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => globalThis.setTimeout(resolve, ms));
  }
}

/** A reply sent with `reply_in_thread` (a text without `replyTo` is a new message: the flag goes nowhere). */
function repliesInThread(call: FakeCall): boolean {
  const replying =
    call.method === "replyCard" || (call.method === "sendText" && call.options?.replyTo !== undefined);
  return replying && call.options?.inThread === true;
}

/** What `bodyIncludes` looks into: the card's JSON or the text, as the call carries them. */
function contentOf(call: FakeCall): string {
  return call.card !== undefined ? JSON.stringify(call.card) : (call.text ?? "");
}

/** The options worth recording (the uuid, mentions, the reply target), without undefined fields. */
function opts(options: object | undefined): { options?: Record<string, unknown> } {
  if (!options) return {};
  const entries = Object.entries(options).filter(([, value]) => value !== undefined);
  return entries.length > 0 ? { options: Object.fromEntries(entries) } : {};
}
