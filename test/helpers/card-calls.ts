import type { Card } from "../../src/cards/model.ts";
import type { FakeCardKit } from "../../src/testing/fake-cardkit.ts";
import type { FakeMessenger } from "../../src/testing/fake-messenger.ts";

/**
 * What the bot sent to one card, on either card transport (issue 29: the scenario suites run on `im` and on
 * `cardkit`): its IM PATCHes, and the operations on the CardKit entity the message shows (element updates,
 * settings, full updates). A CardKit card that fell back to IM PATCH has both, entity operations first.
 */

export interface CardCall {
  kind: "patch" | "content" | "settings" | "update";
  at: number;
  /** 0, Feishu's code, the bare HTTP status, -1 timed out, -2 under way. */
  code: number;
  /** The card a full update (a PATCH, a CardKit full update) sent. */
  card?: Card;
}

interface Platform {
  fake: FakeMessenger;
  cardkit: FakeCardKit | undefined;
}

/** Every update of the card, in the order it was made (entity operations, then IM PATCHes, by time). */
export function cardCalls(r: Platform, messageId: string): CardCall[] {
  const patches: CardCall[] = r.fake.callsTo("patchCard", messageId).map((c) => ({
    kind: "patch",
    at: c.at,
    code:
      c.outcome === undefined
        ? -2
        : c.outcome.ok
          ? 0
          : (c.outcome.error.feishuCode ?? c.outcome.error.httpStatus ?? -1),
    ...(c.card ? { card: c.card } : {}),
  }));
  return [...entityCalls(r, messageId), ...patches].sort((a, b) => a.at - b.at);
}

/** The operations on the entity a message shows (none on `im`, or when the card went the IM way). */
export function entityCalls(r: Platform, messageId: string): CardCall[] {
  const cardId = r.cardkit?.entityOf(messageId)?.cardId;
  if (!r.cardkit || cardId === undefined) return [];
  return r.cardkit.callsOn(cardId).flatMap((c): CardCall[] =>
    c.op === "content" || c.op === "settings" || c.op === "update"
      ? [
          {
            kind: c.op,
            at: c.at,
            code: c.code ?? -2,
            ...(c.op === "update" && c.body ? { card: c.body as unknown as Card } : {}),
          },
        ]
      : [],
  );
}

/** The cards full updates sent (what a PATCH or a CardKit full update made every member see). */
export function fullUpdates(r: Platform, messageId: string): CardCall[] {
  return cardCalls(r, messageId).filter((c) => c.card !== undefined);
}

/**
 * The card's next `times` updates are refused with `code` (IM: its PATCHes; CardKit: every operation on
 * its entity).
 */
export function refuseUpdates(
  r: Platform,
  messageId: string,
  refusal: { times: number; im: number; cardkit: number; httpStatus?: number },
): void {
  if (r.cardkit?.entityOf(messageId)) {
    r.cardkit.fail({
      op: ["content", "settings", "update"],
      times: refusal.times,
      code: refusal.cardkit,
      ...(refusal.httpStatus !== undefined ? { httpStatus: refusal.httpStatus } : {}),
    });
    return;
  }
  r.fake.fail({
    method: "patchCard",
    messageId,
    times: refusal.times,
    response: {
      code: refusal.im,
      ...(refusal.httpStatus !== undefined ? { httpStatus: refusal.httpStatus } : {}),
    },
  });
}

/**
 * A card as a reader sees it: without what only CardKit reads (`config.streaming_mode`, the `element_id`s the
 * transport gives markdown elements so their text can stream), so an entity's card and the same card sent by
 * IM compare equal.
 */
export function visible(card: Card | undefined): unknown {
  if (card === undefined) return undefined;
  return JSON.parse(
    JSON.stringify(card, (key, value: unknown) =>
      key === "streaming_mode" ||
      (key === "element_id" && typeof value === "string" && value.startsWith("ck_md_"))
        ? undefined
        : value,
    ),
  );
}
