import type { Router } from "express";
import { z } from "zod";
import type { EmulatorContext } from "./context.ts";
import { CODES, cardContentError, fail } from "./errors.ts";
import { callLocals, ok, parse } from "./http.ts";

const createBody = z.object({ type: z.literal("card_json"), data: z.string() });
const updateBody = z.object({
  card: z.object({ type: z.literal("card_json"), data: z.string() }),
  sequence: z.number().int(),
  uuid: z.string().optional(),
});
const settingsBody = z.object({
  settings: z.string(),
  sequence: z.number().int(),
  uuid: z.string().optional(),
});
const contentBody = z.object({
  content: z.string(),
  sequence: z.number().int(),
  uuid: z.string().optional(),
});
const cardParams = z.object({ card_id: z.string().min(1) });
const elementParams = z.object({ card_id: z.string().min(1), element_id: z.string().min(1) });

/**
 * The CardKit endpoints (feishu-platform §3.5): create an entity, replace it whole, change its settings,
 * stream one element's text. The rules live in cardkit.ts, shared with the fake messenger.
 */
export function mountCardKitRoutes(router: Router, ctx: EmulatorContext): void {
  const entities = ctx.cardkit;
  const located = (res: Parameters<typeof callLocals>[0], cardId: string) => {
    const messageId = entities.get(cardId)?.messageId;
    if (messageId !== undefined) callLocals(res).messageId = messageId;
  };

  router.post("/open-apis/cardkit/v1/cards", (req, res) => {
    const body = parse(createBody, req.body);
    const entity = entities.create(body.data, ctx.clock.now());
    ok(res, { card_id: entity.cardId });
  });

  router.put("/open-apis/cardkit/v1/cards/:card_id", (req, res) => {
    const { card_id: cardId } = parse(cardParams, req.params);
    located(res, cardId);
    const body = parse(updateBody, req.body);
    entities.update(cardId, body.card.data, body.sequence, ctx.clock.now());
    ok(res, {});
  });

  router.patch("/open-apis/cardkit/v1/cards/:card_id/settings", (req, res) => {
    const { card_id: cardId } = parse(cardParams, req.params);
    located(res, cardId);
    const body = parse(settingsBody, req.body);
    entities.settings(cardId, body.settings, body.sequence, ctx.clock.now());
    ok(res, {});
  });

  router.put("/open-apis/cardkit/v1/cards/:card_id/elements/:element_id/content", (req, res) => {
    const { card_id: cardId, element_id: elementId } = parse(elementParams, req.params);
    located(res, cardId);
    const body = parse(contentBody, req.body);
    entities.content(cardId, elementId, body.content, body.sequence, ctx.clock.now());
    ok(res, {});
  });
}

/**
 * A message's `interactive` content that names an entity (`{"type":"card","data":{"card_id"}}`): the entity's
 * card, claimed (an entity is sent once); any other content as it came. `attach` links the entity to the
 * message once it exists.
 */
export function entityContent(
  ctx: EmulatorContext,
  msgType: string,
  content: string,
): { content: string; attach: (messageId: string) => void } {
  const none = { content, attach: () => undefined };
  if (msgType !== "interactive") return none;
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch {
    return none;
  }
  const card = parsed as { type?: unknown; data?: { card_id?: unknown } };
  if (card?.type !== "card") return none;
  const cardId = card.data?.card_id;
  if (typeof cardId !== "string" || cardId === "") throw cardContentError("data.card_id is missing");
  if (!ctx.cardkit.get(cardId)) throw fail(CODES.cardContentFailed, "cardid is invalid");
  return {
    content: ctx.cardkit.claim(cardId, ctx.clock.now()),
    attach: (messageId) => ctx.cardkit.attach(cardId, messageId),
  };
}
