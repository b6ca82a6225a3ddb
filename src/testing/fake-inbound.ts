import { randomBytes } from "node:crypto";
import {
  applyCallbackCard as applyEmulatorCallbackCard,
  type BeforeCallback,
  beforeCallback as beforeEmulatorCallback,
  type CallbackCardContext,
  revertUpdatesDuring as revertEmulatorUpdates,
} from "../local/emulator/callback-card.ts";
import { type CardActionContext, cardActionEvent, userMessageEvent } from "../local/emulator/events.ts";
import type { CallbackCardResult, CardActionInput, UserMessageInput } from "../local/emulator/types.ts";
import type { FakeMessenger } from "./fake-messenger.ts";

/**
 * What Feishu pushes to the bot, for the fake: a user's message and a click, stored in the fake's messages
 * and returned in the flattened shape both transports hand the handlers (`{...header, ...event}`, see
 * feishu/events.ts), so a test calls `deliverMessage` / `answerCardAction` with it as a transport would.
 * Built by the emulator's own builders (local/emulator/events.ts), so the fake pushes what the emulator pushes.
 */

const TENANT = "tenant_fake";

/**
 * The fake's side of the emulator's event builders (local/emulator/events.ts): its app, clock and messages.
 * Nobody watches its messages, and its delayed-update tokens are never redeemed (the fake has no
 * delayed-update endpoint), so any fresh token will do.
 */
function eventsOf(fake: FakeMessenger): CardActionContext & CallbackCardContext {
  return {
    config: {
      appId: fake.appId,
      botOpenId: fake.botOpenId,
      botName: fake.botName,
      tenantKey: TENANT,
      verificationToken: undefined,
    },
    clock: fake.clock,
    messages: fake.store,
    observer: { emit: () => undefined },
    updateTokens: { issue: () => `c-${randomBytes(20).toString("hex")}` },
  };
}

/** As a transport hands an event to the handlers: the header's fields and the event's side by side. */
const flatten = (payload: { header: object; event: object }): Record<string, unknown> => ({
  ...payload.header,
  ...payload.event,
});

/** A user's message: stored (so the bot can reply to it) and returned as flattened `im.message.receive_v1`. */
export function userMessage(
  fake: FakeMessenger,
  input: UserMessageInput,
): { messageId: string; data: Record<string, unknown> } {
  const { payload, message } = userMessageEvent(eventsOf(fake), input);
  return { messageId: message.messageId, data: flatten(payload) };
}

/** A click or form submit on one of the bot's cards, flattened `card.action.trigger`. */
export function cardAction(fake: FakeMessenger, input: CardActionInput): Record<string, unknown> {
  return flatten(cardActionEvent(eventsOf(fake), input));
}

/**
 * The card of a callback answer, applied as the Feishu client applies it: to the clicker's (`viewer`'s) view
 * alone, no API call, no rate-limit slot, not counted in `patches`; refused (not applied) where the emulator
 * refuses it, by the emulator's own code.
 */
export function applyCallbackCard(
  fake: FakeMessenger,
  messageId: string,
  card: unknown,
  viewer: string,
): CallbackCardResult {
  return applyEmulatorCallbackCard(eventsOf(fake), messageId, card, viewer);
}

/** What every member sees of a card as its callback begins (for `revertUpdatesDuring`). */
export function beforeCallback(fake: FakeMessenger, messageId: string): BeforeCallback | undefined {
  return beforeEmulatorCallback(eventsOf(fake), messageId);
}

/** The callback was answered: updates that landed meanwhile are reverted, as the emulator reverts them. */
export function revertUpdatesDuring(
  fake: FakeMessenger,
  messageId: string,
  before: BeforeCallback | undefined,
): number {
  return revertEmulatorUpdates(eventsOf(fake), messageId, before);
}
