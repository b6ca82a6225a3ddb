import type { Card } from "../../cards/model.ts";
import { describeError } from "../../errors.ts";
import { FeishuApiError, type MessageTarget } from "../messenger.ts";
import { type CardJson, entityCard, hasForm } from "./card-shape.ts";
import type { CardKitDeps } from "./transport.ts";

/**
 * The first send of a CardKit card: the entity (created once per key, so a retried reply reuses it), then the
 * message that shows it. Undefined when CardKit refused either step: the caller sends the card the IM way (one
 * warning line; a refused send is recorded, so the card is not tried by CardKit again).
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
  },
): Promise<{ messageId: string; shown: CardJson | undefined } | undefined> {
  const { api, store, log, now } = deps;
  const row = store.byKey(input.key);
  if (row?.fallback) return undefined;
  const stream = !hasForm(input.card);
  const shown = entityCard(input.card, stream);
  let cardId = row?.cardId;
  try {
    if (cardId === undefined) {
      const created = await input.limit(() => api.create(shown));
      cardId = created.cardId;
      store.created(input.key, cardId);
    }
    // Sent before a restart: the message exists; what the entity shows is not known here.
    if (row?.messageId !== undefined) return { messageId: row.messageId, shown: undefined };
    const entity = cardId;
    const sent = await input.limit(() => api.send(input.where, entity, input.uuid));
    store.sent(input.key, sent.messageId);
    if (stream) store.streaming(input.key, now());
    return { messageId: sent.messageId, shown };
  } catch (error) {
    if (cardId !== undefined) store.fallback(input.key);
    const code = error instanceof FeishuApiError ? (error.feishuCode ?? error.httpStatus) : undefined;
    log.warn(
      { key: input.key, code, err: describeError(error) },
      "CardKit refused the progress card; sending it by IM instead",
    );
    input.onRefused?.(code);
    return undefined;
  }
}
