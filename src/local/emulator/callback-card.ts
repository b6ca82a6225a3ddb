import { checkCardContent } from "./content.ts";
import { CODES, FeishuError } from "./errors.ts";
import type { Observer } from "./observer.ts";
import type { MessageStore } from "./state.ts";
import type { CallbackCardResult, MessageView } from "./types.ts";

/**
 * The card of a callback response (`{"card":{"type":"raw","data":…}}`, feishu-platform §2.3), applied to the
 * clicked message the way the platform applies it when the answer arrives: to the clicker's view alone. The
 * docs say a shared card's answer reaches every viewer; field reports and the vendor's own plugin say only the
 * clicking user's view changes, and the others keep the old card until a PATCH (feishu-platform Addendum,
 * later, §1), so that is what the emulator shows. It is no Open API call: it is not recorded, takes no
 * rate-limit slot and does not count in `patches`. What the client would refuse is not applied: a card that
 * is not 2.0 answering a 2.0 card (200830), or one breaking the card rules (200673).
 */
/** What applying needs: the messages, the clock and who hears of the change (the emulator's, or the fake's). */
export interface CallbackCardContext {
  clock: { now(): number };
  messages: Pick<MessageStore, "get" | "showTo" | "restore">;
  observer: Pick<Observer, "emit">;
}

export function applyCallbackCard(
  ctx: CallbackCardContext,
  messageId: string,
  card: unknown,
  viewer: string,
): CallbackCardResult {
  const message = ctx.messages.get(messageId);
  if (!message) throw new Error(`applyCallbackCard: unknown message ${messageId}`);
  if (message.msgType !== "interactive" || message.senderType !== "app")
    throw new Error(`applyCallbackCard: ${messageId} is not a card sent by the app`);
  if (message.recalled) return { ok: false, code: CODES.messageRecalled, reason: "the message was recalled" };
  if (typeof card !== "object" || card === null || (card as { schema?: unknown }).schema !== "2.0") {
    return {
      ok: false,
      code: CODES.callbackCardVersion,
      reason: 'a 2.0 card must be answered with a 2.0 card ("schema":"2.0")',
    };
  }
  const content = JSON.stringify(card);
  try {
    checkCardContent(content, { update: true });
  } catch (error) {
    if (!(error instanceof FeishuError)) throw error;
    return { ok: false, code: CODES.callbackCardInvalid, reason: error.message };
  }
  const updated = ctx.messages.showTo(messageId, viewer, content, ctx.clock.now());
  ctx.observer.emit("message_patched", { message: updated, via: "callback" });
  return { ok: true, message: updated };
}

/** What every member saw of a card as its callback began, and how many updates it had had. */
export type BeforeCallback = Pick<MessageView, "content" | "views" | "patches">;

export function beforeCallback(ctx: CallbackCardContext, messageId: string): BeforeCallback | undefined {
  const message = ctx.messages.get(messageId);
  if (!message) return undefined;
  return {
    content: message.content,
    patches: message.patches,
    ...(message.views ? { views: message.views } : {}),
  };
}

/**
 * The callback was answered: an update (PATCH, delayed update) that landed while it was in progress is
 * reverted, and the answer wins (feishu-platform §2.3 "Card reverts", Addendum, later, §4). Returns how many
 * were reverted.
 */
export function revertUpdatesDuring(
  ctx: CallbackCardContext,
  messageId: string,
  before: BeforeCallback | undefined,
): number {
  const message = ctx.messages.get(messageId);
  if (!message || !before || message.recalled) return 0;
  const landed = message.patches - before.patches;
  if (landed <= 0) return 0;
  const restored = ctx.messages.restore(messageId, before, ctx.clock.now());
  ctx.observer.emit("message_patched", { message: restored, via: "revert" });
  return landed;
}
