import { checkCardContent, contentBytes } from "./content.ts";
import { CODES, fail } from "./errors.ts";
import { SlidingWindow } from "./limits.ts";
import type { MessageStore } from "./state.ts";

/**
 * CardKit card entities (feishu-platform §3.5, Addendum §6), shared by the emulator's routes and the fake
 * messenger's CardKit so both refuse the same things in the same order: an unknown entity, then 14 days, then a
 * callback in progress (200810), then 10 operations per second per entity, then the sequence (strictly
 * increasing, 300317), then the operation's own rules. A refused operation uses no sequence. Streaming mode
 * closes itself 600 s after it was turned on whatever the traffic: the next text update gets 200850, later ones
 * 300309, until it is turned on again (settings or a full update). An entity sent in a message updates that
 * message for every member, like a PATCH (so a callback's revert undoes it too).
 */

export const CARDKIT_CODES = {
  /** The field's answer for an entity id that is not (or no longer) one: "cardid is invalid". */
  cardIdInvalid: 11310,
  entityExpired: 200750,
  /** Assumed: the docs name no code for an entity sent twice. */
  alreadySent: 200740,
  callbackInProgress: 200810,
  streamingTimedOut: 200850,
  cardTooLarge: 200860,
  duplicateElementId: 300301,
  tooManyComponents: 300305,
  streamingClosed: 300309,
  /** Assumed: the docs give the limit (10/s per entity) but no code of its own. */
  entityRateLimited: 300316,
  sequenceNotIncreasing: 300317,
  elementNotFound: 300302,
} as const;

export const STREAMING_LIFETIME_MS = 600_000;
export const ENTITY_VALID_MS = 14 * 86_400_000;
export const ENTITY_OPS_PER_SECOND = 10;
const MAX_COMPONENTS = 200;

export interface CardEntity {
  cardId: string;
  card: Record<string, unknown>;
  createdAt: number;
  /** The last sequence an operation succeeded with (0: none yet). */
  sequence: number;
  messageId: string | undefined;
  /** When streaming mode was last turned on; undefined while it is off. */
  streamingSince: number | undefined;
  /** Streaming closed itself: the next text update is told so once (200850). */
  timedOutUnreported: boolean;
  /** Text updates that typed out (the new text extends the old) and that replaced at once. */
  typed: number;
  replaced: number;
  ops: SlidingWindow;
}

export type CardKitOp = "create" | "update" | "settings" | "content";

export class CardEntities {
  readonly #entities = new Map<string, CardEntity>();
  /** Messages whose callback is being answered now. */
  readonly #busy = new Map<string, number>();
  #next = 0;

  constructor(
    readonly messages: Pick<MessageStore, "get" | "applyUpdate">,
    readonly onUpdate: (messageId: string, via: "cardkit" | "stream") => void = () => undefined,
  ) {}

  get(cardId: string): CardEntity | undefined {
    return this.#entities.get(cardId);
  }

  list(): CardEntity[] {
    return [...this.#entities.values()];
  }

  byMessage(messageId: string): CardEntity | undefined {
    return this.list().find((entity) => entity.messageId === messageId);
  }

  create(data: string, now: number): CardEntity {
    const card = parseCard(data);
    const entity: CardEntity = {
      cardId: `7${String(++this.#next).padStart(18, "0")}`,
      card,
      createdAt: now,
      sequence: 0,
      messageId: undefined,
      streamingSince: streamingOf(card) ? now : undefined,
      timedOutUnreported: false,
      typed: 0,
      replaced: 0,
      ops: new SlidingWindow(ENTITY_OPS_PER_SECOND),
    };
    this.#entities.set(entity.cardId, entity);
    return entity;
  }

  /** The card a message sent by `card_id` shows; an entity is sent once, by the app that made it. */
  claim(cardId: string, now: number): string {
    const entity = this.#live(cardId, now);
    if (entity.messageId !== undefined)
      throw fail(CARDKIT_CODES.alreadySent, "the card entity was already sent");
    return JSON.stringify(entity.card);
  }

  attach(cardId: string, messageId: string): void {
    const entity = this.#entities.get(cardId);
    if (entity) entity.messageId = messageId;
  }

  callbackStarted(messageId: string): void {
    this.#busy.set(messageId, (this.#busy.get(messageId) ?? 0) + 1);
  }

  callbackEnded(messageId: string): void {
    const left = (this.#busy.get(messageId) ?? 1) - 1;
    if (left > 0) this.#busy.set(messageId, left);
    else this.#busy.delete(messageId);
  }

  /** `PUT /cards/:card_id`: the whole card; its `config.streaming_mode` turns streaming on or off. */
  update(cardId: string, data: string, sequence: number, now: number): void {
    const entity = this.#admit(cardId, sequence, now);
    const card = parseCard(data);
    entity.sequence = sequence;
    entity.card = card;
    this.#setStreaming(entity, streamingOf(card), now);
    this.#show(entity, "cardkit", now);
  }

  /** `PATCH /cards/:card_id/settings`: `{config:{streaming_mode,…}}`, merged into the card's config. */
  settings(cardId: string, settings: string, sequence: number, now: number): void {
    const entity = this.#admit(cardId, sequence, now);
    const parsed = parseObject(settings, "settings");
    const config = isRecord(parsed.config) ? parsed.config : {};
    entity.sequence = sequence;
    entity.card = {
      ...entity.card,
      config: { ...(isRecord(entity.card.config) ? entity.card.config : {}), ...config },
    };
    if (typeof config.streaming_mode === "boolean") this.#setStreaming(entity, config.streaming_mode, now);
    this.#show(entity, "cardkit", now);
  }

  /** `PUT /cards/:card_id/elements/:element_id/content`: the full text of one markdown or plain_text element. */
  content(cardId: string, elementId: string, text: string, sequence: number, now: number): void {
    const entity = this.#admit(cardId, sequence, now);
    this.#expire(entity, now);
    if (entity.streamingSince === undefined) {
      if (entity.timedOutUnreported) {
        entity.timedOutUnreported = false;
        throw fail(
          CARDKIT_CODES.streamingTimedOut,
          "streaming mode timed out (10 minutes after it was opened)",
        );
      }
      throw fail(CARDKIT_CODES.streamingClosed, "streaming mode is closed");
    }
    const element = findElement(entity.card, elementId);
    if (!element || (element.tag !== "markdown" && element.tag !== "plain_text"))
      throw fail(CARDKIT_CODES.elementNotFound, `no markdown or plain_text element "${elementId}"`);
    const before = typeof element.content === "string" ? element.content : "";
    element.content = text;
    checkLimits(entity.card);
    entity.sequence = sequence;
    if (text.startsWith(before)) entity.typed += 1;
    else entity.replaced += 1;
    this.#show(entity, "stream", now);
  }

  /** Whether streaming is on at `now` (it closes itself after 600 s). */
  streaming(cardId: string, now: number): boolean {
    const entity = this.#entities.get(cardId);
    if (!entity) return false;
    this.#expire(entity, now);
    return entity.streamingSince !== undefined;
  }

  #live(cardId: string, now: number): CardEntity {
    const entity = this.#entities.get(cardId);
    if (!entity) throw fail(CARDKIT_CODES.cardIdInvalid, "cardid is invalid");
    if (now - entity.createdAt > ENTITY_VALID_MS)
      throw fail(CARDKIT_CODES.entityExpired, "the card entity expired");
    return entity;
  }

  #admit(cardId: string, sequence: number, now: number): CardEntity {
    const entity = this.#live(cardId, now);
    if (entity.messageId !== undefined && this.#busy.has(entity.messageId))
      throw fail(CARDKIT_CODES.callbackInProgress, "a callback of this card is in progress");
    const window = entity.ops.tryTake(now);
    if (!window.ok)
      throw fail(CARDKIT_CODES.entityRateLimited, "more than 10 operations per second on this card", 429);
    if (!Number.isInteger(sequence) || sequence <= entity.sequence || sequence > 2 ** 31 - 1)
      throw fail(CARDKIT_CODES.sequenceNotIncreasing, `sequence ${sequence} is not above ${entity.sequence}`);
    return entity;
  }

  #expire(entity: CardEntity, now: number): void {
    if (entity.streamingSince !== undefined && now - entity.streamingSince >= STREAMING_LIFETIME_MS) {
      entity.streamingSince = undefined;
      entity.timedOutUnreported = true;
      setStreamingFlag(entity.card, false);
    }
  }

  #setStreaming(entity: CardEntity, on: boolean, now: number): void {
    this.#expire(entity, now);
    if (!on) entity.streamingSince = undefined;
    else if (entity.streamingSince === undefined) entity.streamingSince = now;
    entity.timedOutUnreported = false;
  }

  #show(entity: CardEntity, via: "cardkit" | "stream", now: number): void {
    if (entity.messageId === undefined || !this.messages.get(entity.messageId)) return;
    this.messages.applyUpdate(entity.messageId, JSON.stringify(entity.card), now);
    this.onUpdate(entity.messageId, via);
  }
}

function parseObject(data: string, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    throw fail(CODES.invalidParam, `${what} is not valid JSON`);
  }
  if (!isRecord(value)) throw fail(CODES.invalidParam, `${what} is not a JSON object`);
  return value;
}

/** A 2.0 card within 30 KB and 200 components, with unique element ids; `update_multi:false` is refused. */
function parseCard(data: string): Record<string, unknown> {
  const card = parseObject(data, "card data");
  if (card.schema !== "2.0") throw fail(CODES.invalidParam, "CardKit takes 2.0 cards only");
  if (isRecord(card.config) && card.config.update_multi === false)
    throw fail(CODES.invalidParam, "update_multi:false is not allowed for card entities");
  checkLimits(card);
  // The same card rules as a message's (230099 naming the rule), after CardKit's own limits.
  checkCardContent(data);
  return card;
}

function checkLimits(card: Record<string, unknown>): void {
  const size = contentBytes(JSON.stringify(card));
  if (size > 30 * 1024)
    throw fail(CARDKIT_CODES.cardTooLarge, `the card is ${size} bytes; the limit is 30 KB`);
  const ids = new Set<string>();
  let components = 0;
  walk(card.body, (node) => {
    components += 1;
    const id = node.element_id;
    if (typeof id !== "string") return;
    if (ids.has(id)) throw fail(CARDKIT_CODES.duplicateElementId, `element_id "${id}" is used twice`);
    ids.add(id);
  });
  if (components > MAX_COMPONENTS)
    throw fail(CARDKIT_CODES.tooManyComponents, `${components} components; the limit is ${MAX_COMPONENTS}`);
}

function walk(value: unknown, visit: (node: Record<string, unknown>) => void): void {
  if (Array.isArray(value)) for (const item of value) walk(item, visit);
  else if (isRecord(value)) {
    if (typeof value.tag === "string") visit(value);
    for (const child of Object.values(value)) if (typeof child === "object") walk(child, visit);
  }
}

function findElement(card: Record<string, unknown>, elementId: string): Record<string, unknown> | undefined {
  let found: Record<string, unknown> | undefined;
  walk(card.body, (node) => {
    if (node.element_id === elementId) found ??= node;
  });
  return found;
}

function streamingOf(card: Record<string, unknown>): boolean {
  return isRecord(card.config) && card.config.streaming_mode === true;
}

function setStreamingFlag(card: Record<string, unknown>, on: boolean): void {
  if (isRecord(card.config)) card.config.streaming_mode = on;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
