import { applyCallbackCard } from "./callback-card.ts";
import { createContext } from "./context.ts";
import { type UrlVerification, urlVerification } from "./crypto.ts";
import {
  type CardActionEvent,
  cardActionEvent,
  type MessageReceiveEvent,
  userMessageEvent,
} from "./events.ts";
import { createApp, listen, shutdown } from "./server.ts";
import type {
  CallbackCardResult,
  CardActionInput,
  EmulatorClock,
  EmulatorEvents,
  EmulatorOptions,
  Fault,
  FaultHandle,
  MessagesApi,
  MessageView,
  RecordedCall,
  UserMessageInput,
  WebhookResult,
} from "./types.ts";
import { deliverWebhook } from "./webhook.ts";

export { decryptBody, encryptBody, signBody, type UrlVerification, urlVerification } from "./crypto.ts";
export type { CardActionEvent, EventHeader, Mention, MessageReceiveEvent } from "./events.ts";
export type * from "./types.ts";
export type { WireMessage } from "./wire.ts";

/** A running emulator: the Feishu Open API on 127.0.0.1, plus the platform's side of events. */
export interface Emulator {
  /** Base URL to pass as the SDK's `domain`. */
  readonly url: string;
  readonly appId: string;
  readonly appSecret: string;
  readonly botOpenId: string;
  readonly botName: string;
  readonly tenantKey: string;
  readonly encryptKey: string | undefined;
  readonly verificationToken: string | undefined;
  /** Every call in arrival order (the live array). */
  readonly calls: readonly RecordedCall[];
  /** Calls with this method whose path starts with the string or matches the RegExp. */
  callsTo(method: string, pathPrefixOrRegex: string | RegExp): RecordedCall[];
  readonly messages: MessagesApi;
  /** Subscribe to live events; returns an unsubscribe function. */
  on<K extends keyof EmulatorEvents>(event: K, listener: (payload: EmulatorEvents[K]) => void): () => void;
  readonly clock: EmulatorClock;
  /**
   * The next `times` matching calls fail (or are delayed) as described. Checked before anything else; a
   * fault with `match.bodyIncludes` right after the body is read.
   */
  injectFault(fault: Fault): FaultHandle;
  clearFaults(): void;
  /** Recalls a message as its sender would; later reply/PATCH/card update fail. */
  recall(messageId: string): MessageView;
  /** Invalidates every tenant token issued so far (calls then get 99991663). */
  expireTokens(): void;
  /** A user's message: stored, and returned as an `im.message.receive_v1` payload to deliver. */
  userMessage(input: UserMessageInput): MessageReceiveEvent;
  /** A click on one of the bot's cards: a `card.action.trigger` payload with a fresh update token. */
  cardAction(input: CardActionInput): CardActionEvent;
  /**
   * Applies the card of a callback response to the clicked message, as Feishu does when the answer carries
   * `card: {type: "raw", data}` (§2.3). Listeners get `message_patched` with `via: "callback"`. Not an Open API
   * call: not recorded, not rate limited, not counted in `patches`. A card the client would refuse is not applied.
   */
  applyCallbackCard(messageId: string, card: unknown): CallbackCardResult;
  /** The URL check payload, carrying this emulator's verification token. */
  urlVerification(challenge: string): UrlVerification;
  /** POSTs a payload like Feishu does: encrypted and signed when `encryptKey` is set. */
  deliverWebhook(
    targetUrl: string,
    payload: unknown,
    options?: { timeoutMs?: number },
  ): Promise<WebhookResult>;
  close(): Promise<void>;
}

export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const ctx = createContext(options);
  const { config, clock, messages, observer } = ctx;
  const { server, url } = await listen(createApp(ctx));
  let closed: Promise<void> | undefined;

  return {
    url,
    appId: config.appId,
    appSecret: config.appSecret,
    botOpenId: config.botOpenId,
    botName: config.botName,
    tenantKey: config.tenantKey,
    encryptKey: config.encryptKey,
    verificationToken: config.verificationToken,
    calls: observer.calls,
    callsTo: (method, path) => observer.callsTo(method, path),
    messages: {
      getMessage: (messageId) => messages.get(messageId),
      listMessages: (chatId) => messages.list(chatId),
      cardHistory: (messageId) => messages.cardHistory(messageId),
    },
    on: (event, listener) => observer.on(event, listener),
    clock,
    injectFault: (fault) => ctx.faults.add(fault),
    clearFaults: () => ctx.faults.clear(),
    recall(messageId) {
      const message = messages.get(messageId);
      if (!message) throw new Error(`recall: unknown message ${messageId}`);
      if (message.recalled) return message;
      const recalled = messages.recall(messageId, clock.now());
      observer.emit("message_recalled", recalled);
      return recalled;
    },
    expireTokens: () => ctx.tokens.expireAll(),
    userMessage: (input) => userMessageEvent(ctx, input).payload,
    cardAction: (input) => cardActionEvent(ctx, input),
    applyCallbackCard: (messageId, card) => applyCallbackCard(ctx, messageId, card),
    urlVerification: (challenge) => urlVerification(challenge, config.verificationToken ?? ""),
    deliverWebhook: (targetUrl, payload, deliveryOptions = {}) =>
      deliverWebhook(targetUrl, payload, {
        encryptKey: config.encryptKey,
        now: clock.now(),
        ...deliveryOptions,
      }),
    close: () => {
      closed ??= shutdown(server).finally(() => ctx.journal?.close());
      return closed;
    },
  };
}
