import type { Card } from "../../cards/model.ts";
import { describeError } from "../../errors.ts";
import { FeishuApiError, type MessageTarget } from "../messenger.ts";
import { sleep, withRetries } from "../progress/retries.ts";
import { type CardJson, entityCard, hasForm } from "./card-shape.ts";
import type { CardKitDeps } from "./transport.ts";

/**
 * The first send of a CardKit card: the entity (created once per key, so a retried reply reuses it), then the
 * message that shows it. Undefined when CardKit refused either step: the caller sends the card the IM way (one
 * warning line; a refused send is recorded, so the card is not tried by CardKit again). A rate limit or a
 * transient failure is no refusal: each step is tried again as an IM reply is (withRetries, the reset header
 * honoured), and only once those tries are spent does the card go the IM way.
 */
export async function sendEntity(
  deps: CardKitDeps,
  input: {
    key: string;
    card: Card;
    where: { replyTo: string; inThread?: boolean } | { target: MessageTarget };
    uuid: string;
    /** Each call in the app-wide budget, as every Open API call. */
    limit: <T>(call: () => Promise<T>) => Promise<T>;
    /** Told Feishu's code when CardKit refused (99991672: the app lacks the scope, for every card). */
    onRefused?: (code: number | undefined) => void;
    /** The pause before a rate-limited or failed step is tried again (a timer by default). */
    sleep?: (ms: number) => Promise<void>;
  },
): Promise<{ messageId: string; shown: CardJson | undefined } | undefined> {
  const { api, store, log, now } = deps;
  let row: Awaited<ReturnType<typeof store.byKey>>;
  try {
    row = await store.byKey(input.key);
  } catch (error) {
    // Unread (the database refused), the card goes the IM way now, as below.
    log.warn(
      { key: input.key, err: describeError(error) },
      "the CardKit card's record could not be read; sending it by IM instead",
    );
    return undefined;
  }
  if (row?.fallback) return undefined;
  const stream = !hasForm(input.card);
  const shown = entityCard(input.card, stream);
  let cardId = row?.cardId;
  // A refused card is not re-rendered here: refused, it goes the IM way, whose reply has the degrade ladder.
  const retried = <T>(call: () => Promise<T>) =>
    withRetries(
      () => input.limit(call),
      () => false,
      input.sleep ?? sleep,
    );
  try {
    if (cardId === undefined) {
      const created = await retried(() => api.create(shown));
      cardId = created.cardId;
      await store.created(input.key, cardId);
    }
    // Sent before a restart: the message exists; what the entity shows is not known here.
    if (row?.messageId !== undefined) return { messageId: row.messageId, shown: undefined };
    const entity = cardId;
    // The same uuid each try: a send that landed unseen is the message a retry gets back.
    const sent = await retried(() => api.send(input.where, entity, input.uuid));
    await store.sent(input.key, sent.messageId);
    if (stream) await store.streaming(input.key, now());
    return { messageId: sent.messageId, shown };
  } catch (error) {
    // A database that refuses the entity's records (locked, full) loses nothing either: the card goes the IM
    // way now, whose own record is retried (RetriedWrites), and a restart finds no entity to continue.
    const refused = error instanceof FeishuApiError;
    if (cardId !== undefined) {
      try {
        await store.fallback(input.key);
      } catch (unrecorded) {
        log.warn(
          { key: input.key, err: describeError(unrecorded) },
          "the CardKit fallback could not be recorded",
        );
      }
    }
    const code = refused ? (error.feishuCode ?? error.httpStatus) : undefined;
    log.warn(
      { key: input.key, code, err: describeError(error) },
      refused
        ? "CardKit refused the progress card; sending it by IM instead"
        : "the CardKit card could not be recorded; sending it by IM instead",
    );
    if (refused) input.onRefused?.(code);
    return undefined;
  }
}
