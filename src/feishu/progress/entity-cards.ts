import type { Logger } from "../../logger.ts";
import type { CardEntityStore } from "../../store/cardkit.ts";
import type { CardTransport } from "../card-transport.ts";
import type { CardKitApi } from "../cardkit/api.ts";
import type { CardJson } from "../cardkit/card-shape.ts";
import type { FallbackDeps } from "../cardkit/fallback.ts";
import { sendEntity } from "../cardkit/send.ts";
import { CardKitTransport } from "../cardkit/transport.ts";
import type { Limiter } from "../limits.ts";
import type { FeishuMessenger } from "../messenger.ts";
import { threadReply } from "../topics.ts";
import type { ActiveCard, CardBook } from "./card-book.ts";

/**
 * The CardKit side of placing a progress card (FEISHU_CARD_TRANSPORT=cardkit, issue 29): the first send as an
 * entity, and the transport of a card that was sent as one. Kept apart from placement.ts, which decides when
 * a card is placed; this file only says how an entity card gets there and is kept current.
 */

/** What placing an entity card needs of the placement's deps (placement.ts passes its own). */
interface EntityDeps {
  cardkit?: { api: CardKitApi; store: CardEntityStore };
  log: Logger;
  now: () => number;
  messenger: FeishuMessenger;
  sleep?: (ms: number) => Promise<void>;
  book: Pick<CardBook, "render">;
}

/** The app lacks a scope the call needs (here `cardkit:card:write`). */
const NO_PERMISSION = 99991672;

/**
 * The card as a CardKit entity (cardkit/send.ts), or undefined: the IM way. `denied` is told when the app may
 * not use CardKit at all (99991672), so that later cards go the IM way without a warning each.
 */
export async function sendEntityCard(
  deps: EntityDeps,
  card: ActiveCard,
  limiter: Limiter,
  fresh: boolean,
  denied: () => void,
): Promise<{ messageId: string; shown?: string; entityShown?: CardJson } | undefined> {
  const cardkit = deps.cardkit;
  if (!cardkit) return undefined;
  const content = deps.book.render(card, { level: 0, redaction: "none" });
  const key = `run-${card.runId}`;
  const sent = await sendEntity(
    { ...cardkit, log: deps.log, now: deps.now },
    {
      key,
      card: content,
      where: card.agent?.to
        ? { target: card.agent.to }
        : { replyTo: card.sourceMessageId, ...threadReply(card) },
      uuid: key,
      limit: (call) => limiter(() => call(), { urgent: true }),
      onRefused: (code) => {
        if (code === NO_PERMISSION) denied();
      },
      ...(deps.sleep ? { sleep: deps.sleep } : {}),
    },
  );
  if (!sent) return undefined;
  const known = fresh && sent.shown !== undefined;
  return {
    messageId: sent.messageId,
    ...(known ? { shown: JSON.stringify(content), entityShown: sent.shown } : {}),
  };
}

/**
 * The CardKit transport of a card sent as an entity (fallen back too: cardkit/fallback.ts), else undefined
 * (IM PATCH). `moved` and `unplaceable`: a card that went static and then had a form to show (fallback.ts).
 */
export async function entityTransport(
  deps: EntityDeps,
  card: ActiveCard,
  messageId: string,
  limiter: Limiter,
  options: { shown?: CardJson } & Pick<FallbackDeps, "moved" | "unplaceable">,
): Promise<CardTransport | undefined> {
  const cardkit = deps.cardkit;
  const row = await cardkit?.store.byMessage(messageId);
  if (!cardkit || !row) return undefined;
  const { messenger } = deps;
  return CardKitTransport.open(
    { ...cardkit, log: deps.log, now: deps.now, limit: (call) => limiter(() => call()) },
    {
      key: row.key,
      cardId: row.cardId,
      messageId,
      messenger,
      reply: (content, uuid) =>
        card.agent?.to
          ? messenger.sendCard(card.agent.to, content, { uuid })
          : messenger.replyCard(card.sourceMessageId, content, { uuid, ...threadReply(card) }),
      moved: options.moved,
      unplaceable: options.unplaceable,
      ...(options.shown ? { shown: options.shown } : {}),
    },
  );
}
