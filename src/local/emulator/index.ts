import { applyCallbackCard } from "./callback-card.ts";
import { click } from "./callback-flow.ts";
import { createContext, dlpAuditOf, type EmulatorContext } from "./context.ts";
import { type UrlVerification, urlVerification } from "./crypto.ts";
import { createDeliverer, type Subscription } from "./delivery.ts";
import type { DlpAudit } from "./dlp.ts";
import {
  type CardActionEvent,
  cardActionEvent,
  type MessageReceiveEvent,
  userMessageEvent,
} from "./events.ts";
import type { DeliverOptions } from "./long-connection/deliveries.ts";
import { type RegistrationControl, Registrations } from "./registration.ts";
import { createApp, listen, shutdown } from "./server.ts";
import { contentFor } from "./state.ts";
import type { ChatMode } from "./topics.ts";
import type {
  AckResult,
  CallbackCardResult,
  CardActionInput,
  ClickOutcome,
  EmulatorClock,
  EmulatorEvents,
  EmulatorOptions,
  Fault,
  FaultHandle,
  FrameRecord,
  MessagesApi,
  MessageView,
  RecordedCall,
  UserMessageInput,
  WebhookResult,
} from "./types.ts";
import { deliverWebhook } from "./webhook.ts";

export { decryptBody, encryptBody, signBody, type UrlVerification, urlVerification } from "./crypto.ts";
export type { Subscription } from "./delivery.ts";
export { AUDIT_MESSAGE, type DlpAudit } from "./dlp.ts";
export type { CardActionEvent, EventHeader, Mention, MessageReceiveEvent } from "./events.ts";
export { ACK_DEADLINE_MS } from "./long-connection/deliveries.ts";
export { decodeFrame, encodeFrame, type Frame, METHOD } from "./long-connection/frame.ts";
export type { RegistrationControl, RegistrationView } from "./registration.ts";
export type { ChatMode } from "./topics.ts";
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
  /** The language its clients read cards and toasts in when a click does not say (`zh_cn`, `en_us`). */
  readonly clientLocale: string;
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
  /** Makes a chat a topic group (话题群) or a normal group again (topics.ts). */
  setChatMode(chatId: string, mode: ChatMode): void;
  chatMode(chatId: string): ChatMode;
  /** Recalls a message as its sender would; later reply/PATCH/card update fail. */
  recall(messageId: string): MessageView;
  /** Invalidates every tenant token issued so far (calls then get 99991663). */
  expireTokens(): void;
  /** The app's granted scopes from now on (`undefined`: all of them); calls lacking one get 99991672. */
  setGrantedScopes(scopes: string[] | undefined): void;
  /** Turns the tenant's data-loss-prevention audit on (with its keywords, if any) or off (`false`), from now on. */
  setDlpAudit(audit: boolean | DlpAudit): void;
  /** A user's message: stored, and returned as an `im.message.receive_v1` payload to deliver. */
  userMessage(input: UserMessageInput): MessageReceiveEvent;
  /** A click on one of the bot's cards: a `card.action.trigger` payload with a fresh update token. */
  cardAction(input: CardActionInput): CardActionEvent;
  /**
   * Applies the card of a callback response to the clicked message, as Feishu does when the answer carries
   * `card: {type: "raw", data}` (§2.3): to the clicker's (`viewer`'s) view alone. Listeners get
   * `message_patched` with `via: "callback"`. Not an Open API call: not recorded, not rate limited, not
   * counted in `patches`. A card the client would refuse is not applied.
   */
  applyCallbackCard(messageId: string, card: unknown, viewer: string): CallbackCardResult;
  /** The URL check payload, carrying this emulator's verification token. */
  urlVerification(challenge: string): UrlVerification;
  /** Where events and callbacks go (the developer console's 事件与回调 setting); unset until subscribed. */
  subscribe(subscription: Subscription): void;
  /**
   * Pushes an event or callback over the subscribed transport; resolves with the answer (webhook HTTP response,
   * or the ack: `status` = its code, `body` = its decoded data). Rejects with a `TimeoutError` past `timeoutMs`.
   */
  deliver(payload: unknown, options?: { timeoutMs?: number }): Promise<WebhookResult>;
  /** A click as the Feishu client sees it: delivered, answered within 3 s, its toast shown and card applied. */
  click(input: CardActionInput, options?: { timeoutMs?: number }): Promise<ClickOutcome>;
  /** One-scan app creation (`registerApp()`): scan, confirm or decline a registration's QR (registration.ts). */
  readonly registrations: RegistrationControl;
  /** The long-connection server: the bot's WSClient connects here through `POST /callback/ws/endpoint`. */
  readonly longConnection: LongConnectionControl;
  /** An app of the tenant by id: the first (this emulator's own) or one of `otherApps` (apps.ts). */
  app(appId: string): EmulatorApp;
  /** POSTs a payload like Feishu does: encrypted and signed when `encryptKey` is set. */
  deliverWebhook(
    targetUrl: string,
    payload: unknown,
    options?: { timeoutMs?: number },
  ): Promise<WebhookResult>;
  close(): Promise<void>;
}

export interface LongConnectionControl {
  /** Connections open now. */
  readonly online: number;
  connectionIds(): string[];
  /** Every frame sent and received, oldest first (the live array, capped). */
  readonly frames: readonly FrameRecord[];
  /** Redeliveries of unacked events waiting for their time. */
  readonly scheduledRedeliveries: number;
  /** Delivers to one online connection and resolves with its ack (no subscription needed). */
  deliver(payload: unknown, options?: DeliverOptions): Promise<AckResult>;
  /** Cuts all connections (or one), as a platform restart does. Returns how many. */
  drop(connectionId?: string): number;
  /** Sends bytes as they are, to test a client's handling of malformed frames. Returns how many got them. */
  sendRaw(data: Uint8Array | string, connectionId?: string): number;
  /** The next `count` acks are lost on the way, so their deliveries time out (and events come again). */
  loseAcks(count: number): void;
  /** Changes ClientConfig for the next endpoint calls and pongs. */
  configure(change: { pingIntervalS?: number; reconnectIntervalS?: number }): void;
}

/**
 * One app of the emulated tenant (apps.ts), as the platform sees it: its identity, its events (built with its
 * app id, verification token and bot), its subscription and deliveries, its long connections.
 */
export interface EmulatorApp {
  readonly appId: string;
  readonly appSecret: string;
  readonly botOpenId: string;
  readonly botName: string;
  readonly encryptKey: string | undefined;
  readonly verificationToken: string | undefined;
  /** A user's message to this app: stored in the tenant's chat, returned as this app's event. */
  userMessage(input: UserMessageInput): MessageReceiveEvent;
  /** A click on one of this app's cards (a card of another app is refused: its callbacks go to that app). */
  cardAction(input: CardActionInput): CardActionEvent;
  subscribe(subscription: Subscription): void;
  deliver(payload: unknown, options?: { timeoutMs?: number }): Promise<WebhookResult>;
  click(input: CardActionInput, options?: { timeoutMs?: number }): Promise<ClickOutcome>;
  /** This app's long connections open now. */
  readonly online: number;
  /** Invalidates this app's tokens only. */
  expireTokens(): void;
}

function otherApp(ctx: EmulatorContext, deliverer: ReturnType<typeof createDeliverer>): EmulatorApp {
  const { config } = ctx;
  return {
    appId: config.appId,
    appSecret: config.appSecret,
    botOpenId: config.botOpenId,
    botName: config.botName,
    encryptKey: config.encryptKey,
    verificationToken: config.verificationToken,
    userMessage: (input) => userMessageEvent(ctx, input).payload,
    cardAction: (input) => cardActionEvent(ctx, input),
    subscribe: (subscription) => deliverer.subscribe(subscription),
    deliver: (payload, options) => deliverer.deliver(payload, options),
    click: (input, options) => click(ctx, deliverer, input, options),
    get online() {
      return ctx.longConnection.online;
    },
    expireTokens: () => ctx.tokens.expireAll(),
  };
}

export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const ctx = createContext(options);
  const { config, clock, messages, observer } = ctx;
  const registrations = new Registrations(options.registration, {
    clock,
    brand: options.tenantBrand ?? "feishu",
    credentials: () => ({ appId: config.appId, appSecret: config.appSecret }),
  });
  let baseUrl = "";
  const { server, url } = await listen(createApp(ctx, { registrations, baseUrl: () => baseUrl }));
  baseUrl = url;
  const deliverer = createDeliverer(ctx);
  const lc = ctx.longConnection;
  // The app whose endpoint issued the ticket takes the connection; an unknown ticket is refused by the first.
  server.on("upgrade", (req, socket, head) =>
    (ctx.apps.all.find((app) => app.longConnection.issued(req))?.longConnection ?? lc).handleUpgrade(
      req,
      socket,
      head,
    ),
  );
  const others = new Map(
    ctx.apps.all.slice(1).map((app) => [app.config.appId, otherApp(app, createDeliverer(app))] as const),
  );
  let closed: Promise<void> | undefined;

  return {
    url,
    appId: config.appId,
    appSecret: config.appSecret,
    botOpenId: config.botOpenId,
    botName: config.botName,
    clientLocale: config.clientLocale,
    tenantKey: config.tenantKey,
    encryptKey: config.encryptKey,
    verificationToken: config.verificationToken,
    calls: observer.calls,
    callsTo: (method, path) => observer.callsTo(method, path),
    messages: {
      getMessage: (messageId) => messages.get(messageId),
      listMessages: (chatId) => messages.list(chatId),
      cardHistory: (messageId) => messages.cardHistory(messageId),
      contentFor: (messageId, openId) => {
        const message = messages.get(messageId);
        return message ? contentFor(message, openId) : undefined;
      },
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
    setChatMode: (chatId, mode) => messages.chatModes.set(chatId, mode),
    chatMode: (chatId) => messages.chatMode(chatId),
    expireTokens: () => ctx.tokens.expireAll(),
    setGrantedScopes: (scopes) => {
      ctx.tenant.grantedScopes = scopes ? new Set(scopes) : undefined;
    },
    setDlpAudit: (audit) => {
      ctx.tenant.dlpAudit = dlpAuditOf(audit);
    },
    userMessage: (input) => userMessageEvent(ctx, input).payload,
    cardAction: (input) => cardActionEvent(ctx, input),
    applyCallbackCard: (messageId, card, viewer) => applyCallbackCard(ctx, messageId, card, viewer),
    urlVerification: (challenge) => urlVerification(challenge, config.verificationToken ?? ""),
    subscribe: (subscription) => deliverer.subscribe(subscription),
    deliver: (payload, deliveryOptions) => deliverer.deliver(payload, deliveryOptions),
    click: (input, clickOptions) => click(ctx, deliverer, input, clickOptions),
    registrations,
    longConnection: {
      get online() {
        return lc.online;
      },
      connectionIds: () => lc.connectionIds(),
      frames: lc.frames,
      get scheduledRedeliveries() {
        return lc.deliveries.scheduledRedeliveries;
      },
      deliver: (payload, deliverOptions) => lc.deliveries.deliver(payload, deliverOptions),
      drop: (connectionId) => lc.drop(connectionId),
      sendRaw: (data, connectionId) => lc.sendRaw(data, connectionId),
      configure: (change) => lc.configure(change),
      loseAcks: (count) => lc.deliveries.loseAcks(count),
    },
    deliverWebhook: (targetUrl, payload, deliveryOptions = {}) =>
      deliverWebhook(targetUrl, payload, {
        encryptKey: config.encryptKey,
        now: clock.now(),
        ...deliveryOptions,
      }),
    app(appId) {
      if (appId === config.appId) return otherApp(ctx, deliverer);
      const other = others.get(appId);
      if (!other) throw new Error(`app: ${appId} is not an app of this emulator`);
      return other;
    },
    close: () => {
      if (!closed) for (const app of ctx.apps.all) app.longConnection.close();
      closed ??= shutdown(server).finally(() => ctx.journal?.close());
      return closed;
    },
  };
}
