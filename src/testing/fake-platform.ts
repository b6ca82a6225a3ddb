import type { MessageTarget } from "../feishu/messenger.ts";
import { checkCardContent, checkContent, EDITS_PER_MESSAGE } from "../local/emulator/content.ts";
import { dlpAuditOf } from "../local/emulator/context.ts";
import { auditContent, type DlpAudit } from "../local/emulator/dlp.ts";
import { CODES, fail } from "../local/emulator/errors.ts";
import { p2pChatId } from "../local/emulator/ids.ts";
import { KeyedWindows, SlidingWindow } from "../local/emulator/limits.ts";
import { MessageStore, UuidCache } from "../local/emulator/state.ts";
import type { MessageView } from "../local/emulator/types.ts";

/**
 * The platform behind the fake messenger: what each Open API endpoint does to the messages, in the order the
 * emulator's routes check things (src/local/emulator/message-routes.ts), over the emulator's own state
 * classes and content checks. Errors are the emulator's FeishuError; the messenger maps them as the SDK
 * messenger would see them over HTTP.
 */

const PATCHABLE_FOR_MS = 14 * 86_400_000;
/** The emulator's bound on `uuid` (field validation, 99992402). */
const UUID_MAX = 50;

export interface FakePlatformOptions {
  appId: string;
  now: () => number;
  perMessagePatchPerSecond: number;
  appCallsPerSecond: number;
  /** The tenant's data-loss-prevention audit, as the emulator's `dlpAudit` option. */
  dlpAudit?: boolean | DlpAudit;
}

export class FakePlatform {
  /** Every message, the bot's and the users' (fake-inbound.ts adds theirs). */
  readonly store = new MessageStore();
  readonly clock: { now(): number; advance(ms: number): void };
  readonly #appId: string;
  readonly #uuids = new UuidCache();
  readonly #appWindow: SlidingWindow;
  readonly #patchWindows: KeyedWindows;
  #dlpAudit: DlpAudit | undefined;

  constructor(options: FakePlatformOptions) {
    this.#appId = options.appId;
    this.#appWindow = new SlidingWindow(options.appCallsPerSecond);
    this.#patchWindows = new KeyedWindows(options.perMessagePatchPerSecond);
    this.#dlpAudit = dlpAuditOf(options.dlpAudit);
    let offset = 0;
    this.clock = {
      now: () => options.now() + offset,
      advance: (ms) => {
        offset += ms;
      },
    };
  }

  /** As the emulator's `setDlpAudit`: the tenant's audit on (with its keywords) or off, from now on. */
  setDlpAudit(audit: boolean | DlpAudit): void {
    this.#dlpAudit = dlpAuditOf(audit);
  }

  /** The app-wide window: how long until a slot frees, if none is free now. */
  takeAppSlot(): { ok: true } | { ok: false; retryAfterMs: number } {
    return this.#appWindow.tryTake(this.clock.now());
  }

  reply(
    parentId: string,
    msgType: string,
    content: string,
    options: { uuid?: string; inThread?: boolean } = {},
  ) {
    const replayed = this.#replayed(options.uuid);
    if (replayed) return replayed;
    const parent = this.store.require(parentId);
    if (parent.recalled) throw fail(CODES.messageRecalled, "the message was recalled");
    checkContent(msgType, content);
    auditContent(content, this.#dlpAudit);
    const message = this.store.create(
      {
        chatId: parent.chatId,
        chatType: parent.chatType,
        msgType,
        content,
        senderType: "app",
        senderId: this.#appId,
        parent,
        replyInThread: options.inThread ?? false,
      },
      this.clock.now(),
    );
    return this.#created(message, options.uuid);
  }

  create(target: MessageTarget, msgType: string, content: string, uuid?: string): { messageId: string } {
    const replayed = this.#replayed(uuid);
    if (replayed) return replayed;
    const byChat = "chatId" in target;
    const raw = byChat ? target.chatId : target.openId;
    if (!raw.startsWith(byChat ? "oc_" : "ou_"))
      throw fail(CODES.receiveIdInvalid, `invalid receive_id for ${byChat ? "chat_id" : "open_id"}`);
    const chatId = byChat ? target.chatId : p2pChatId(target.openId);
    checkContent(msgType, content);
    auditContent(content, this.#dlpAudit);
    const message = this.store.create(
      {
        chatId,
        chatType: this.store.chatTypeOf(chatId),
        msgType,
        content,
        senderType: "app",
        senderId: this.#appId,
      },
      this.clock.now(),
    );
    return this.#created(message, uuid);
  }

  patch(messageId: string, content: string): void {
    const message = this.store.require(messageId);
    const now = this.clock.now();
    if (message.recalled) throw fail(CODES.messageRecalled, "the message was recalled");
    if (message.senderType !== "app" || message.msgType !== "interactive")
      throw fail(CODES.messageInvalid, "only interactive messages sent by this app can be patched");
    if (now - message.createdAt > PATCHABLE_FOR_MS)
      throw fail(CODES.messageTooOld, "the message was sent more than 14 days ago and cannot be updated");
    if (!this.#patchWindows.for(messageId).tryTake(now).ok)
      throw fail(CODES.imRateLimited, "This operation triggers the frequency limit");
    checkCardContent(content, { update: true });
    auditContent(content, this.#dlpAudit);
    this.store.applyUpdate(messageId, content, now);
  }

  /** 编辑消息, checked in the order of the emulator's PUT route. */
  edit(messageId: string, msgType: "text" | "post", content: string): void {
    const message = this.store.require(messageId);
    if (message.recalled) throw fail(CODES.messageRecalled, "the message was recalled");
    if (message.senderType !== "app")
      throw fail(CODES.messageInvalid, "only messages sent by this app can be edited");
    if (message.msgType !== "text" && message.msgType !== "post")
      throw fail(CODES.messageInvalid, "only text and post messages can be edited; cards are patched");
    if ((message.edits ?? 0) >= EDITS_PER_MESSAGE)
      throw fail(CODES.messageInvalid, `a message can be edited at most ${EDITS_PER_MESSAGE} times`);
    checkContent(msgType, content);
    this.store.applyEdit(messageId, content, this.clock.now());
  }

  recall(messageId: string): void {
    const message = this.store.require(messageId);
    if (message.recalled) throw fail(CODES.messageRecalled, "the message was recalled");
    if (message.senderType !== "app")
      throw fail(CODES.messageInvalid, "only messages sent by this app can be recalled");
    this.store.recall(messageId, this.clock.now());
  }

  status(messageId: string): { deleted: boolean } {
    return { deleted: this.store.require(messageId).recalled };
  }

  #replayed(uuid: string | undefined): { messageId: string } | undefined {
    if (uuid !== undefined && uuid.length > UUID_MAX)
      throw fail(CODES.fieldValidation, `field validation failed: uuid: longer than ${UUID_MAX}`);
    const previous = uuid === undefined ? undefined : this.#uuids.lookup(uuid, this.clock.now());
    return previous !== undefined && this.store.get(previous) ? { messageId: previous } : undefined;
  }

  #created(message: MessageView, uuid: string | undefined): { messageId: string } {
    if (uuid !== undefined) this.#uuids.remember(uuid, message.messageId, message.createdAt);
    return { messageId: message.messageId };
  }
}
