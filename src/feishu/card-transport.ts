import type { Card } from "../cards/model.ts";
import type { FeishuMessenger } from "./messenger.ts";
import type { CardShape } from "./publish-state.ts";

/**
 * How a card's states reach the platform once it is in the chat: the seam between the publisher (which decides
 * when, publish-policy.ts) and the wire. `im` PATCHes the message; `cardkit` (cardkit/transport.ts) updates the
 * card entity the message shows and streams the answer's text into it. A transport throws what the platform
 * said as a FeishuApiError, and the publisher's policy reads it as it reads a failed PATCH.
 */
export interface CardTransport {
  readonly kind: "im" | "cardkit";
  /** The whole card as the policy decided to send it; `shape` says whether a form is open or the run ended. */
  update(card: Card, shape: CardShape): Promise<void>;
  /** Nothing more is sent (its timers, if any, are dropped). */
  close(): void;
}

/** IM PATCH: the message's card replaced whole (feishu-platform §3.3), the default. */
export function imTransport(messenger: Pick<FeishuMessenger, "patchCard">, messageId: string): CardTransport {
  return {
    kind: "im",
    update: (card) => messenger.patchCard(messageId, card),
    close: () => undefined,
  };
}
