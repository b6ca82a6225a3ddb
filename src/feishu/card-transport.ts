import type { Card } from "../cards/model.ts";
import type { FeishuMessenger } from "./messenger.ts";
import type { CardShape, PendingChange, SendMode } from "./publish-state.ts";

/**
 * How a card's states reach the platform once it is in the chat: the seam between the publisher (which decides
 * when, publish-policy.ts) and the wire. `im` PATCHes the message; `cardkit` (cardkit/transport.ts) updates the
 * card entity the message shows and streams the answer's text into it. A transport throws what the platform
 * said as a FeishuApiError, and the publisher's policy reads it as it reads a failed PATCH.
 */
export interface CardTransport {
  readonly kind: "im" | "cardkit";
  /**
   * The card as the policy decided to send it; `shape` says whether a form is open or the run ended. `text`:
   * only its markdown texts, as element updates, the rest left as the entity shows it (the policy asks for
   * that when `pending` said text can go and the full update is not due yet).
   */
  update(card: Card, shape: CardShape, mode?: SendMode): Promise<void>;
  /**
   * What sending `card` now would take, from what the platform shows (CardKit): text the transport can send
   * as element updates, and whether anything only a full update shows changed. Absent (IM PATCH): every
   * update is a full one, and the policy spaces them all by the card's interval.
   */
  pending?(card: Card, shape: CardShape): PendingChange;
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

/** An update refused because this instance no longer runs the card's task (fencedTransport). */
export class CardWriterLostError extends Error {
  constructor() {
    super("the card's task runs on another instance now: this one does not write its card");
    this.name = "CardWriterLostError";
  }
}

/**
 * Several instances (issue 27): a card's one writer is the instance that runs its task. `lapsed` says, by this
 * instance's clock and at each update, that its hold on the task ran out or was lost (run-leases.ts), so an
 * instance paused past its lease sends nothing once it wakes, even before its renewal finds out. The update
 * is refused and `onLapsed` told (the card is let go: its new instance writes it).
 */
export function fencedTransport(
  inner: CardTransport,
  lapsed: () => boolean,
  onLapsed: () => void,
): CardTransport {
  return {
    kind: inner.kind,
    update: (card, shape, mode) => {
      if (!lapsed()) return inner.update(card, shape, mode);
      setImmediate(onLapsed);
      return Promise.reject(new CardWriterLostError());
    },
    ...(inner.pending ? { pending: inner.pending.bind(inner) } : {}),
    close: () => inner.close(),
  };
}
