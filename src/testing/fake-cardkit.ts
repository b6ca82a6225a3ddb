import type { CardKitApi } from "../feishu/cardkit/api.ts";
import { FeishuApiError, type MessageTarget } from "../feishu/messenger.ts";
import { CardEntities, type CardEntity } from "../local/emulator/cardkit.ts";
import { CODES, fail } from "../local/emulator/errors.ts";
import { toApiError } from "./fake-faults.ts";
import type { FakeMessenger } from "./fake-messenger.ts";

/**
 * CardKit for the fake messenger (FEISHU_CARD_TRANSPORT=cardkit on fake time): create an entity, send it once
 * by card_id, replace it whole, change its settings, stream one element's text, each with a strictly
 * increasing sequence, in the order the emulator's routes check them (src/local/emulator/cardkit-routes.ts).
 * The entity rules are the emulator's own (local/emulator/cardkit.ts: 300317, 10 ops/s, the 600 s close with
 * 200850 then 300309, 200810 while a callback is answered), written from Feishu's docs; nothing here comes
 * from src/feishu/cardkit/, the code under test (a checker must not share its rules with what it checks).
 *
 * The entities live over the fake's messages: an operation on a sent entity changes the message every member
 * sees, as on Feishu, so a test reads what the user sees with `fake.cardOf(messageId)` on either transport.
 * Each call takes a slot of the app-wide window the fake's IM calls use (the app limits are shared). Keep one
 * FakeCardKit per FakeMessenger across a restart, as the platform stays.
 */

export type CardKitOp = "create" | "send" | "update" | "settings" | "content";

/** One CardKit call as it was made and how it ended (0, or Feishu's code). */
export interface FakeCardKitCall {
  op: CardKitOp;
  at: number;
  cardId?: string;
  sequence?: number;
  /** The element a text update went to, and its text. */
  elementId?: string;
  text?: string;
  /** A full update's card, or a settings call's config. */
  body?: Record<string, unknown>;
  code?: number;
}

export interface FakeCardKitFault {
  op?: CardKitOp | readonly CardKitOp[];
  /** How many matching calls it refuses (default 1). */
  times?: number;
  /** Feishu's code; absent, a bare gateway failure of `httpStatus`. */
  code?: number;
  httpStatus?: number;
  /** The rate-limit reset header, in seconds. */
  resetSeconds?: number;
  msg?: string;
}

const API_NAMES: Record<CardKitOp, string> = {
  create: "cardkit.card.create",
  send: "im.message.reply",
  update: "cardkit.card.update",
  settings: "cardkit.card.settings",
  content: "cardkit.cardElement.content",
};

export class FakeCardKit implements CardKitApi {
  readonly calls: FakeCardKitCall[] = [];
  readonly entities: CardEntities;
  readonly #fake: FakeMessenger;
  #faults: (FakeCardKitFault & { left: number })[] = [];
  /** A send's uuid and the message it made: sent again, the same message (the platform's de-duplication). */
  readonly #uuids = new Map<string, string>();

  constructor(fake: FakeMessenger) {
    this.#fake = fake;
    this.entities = new CardEntities(fake.store);
  }

  /** The next matching calls are refused with Feishu's code (first added, first used). */
  fail(fault: FakeCardKitFault): void {
    this.#faults.push({ ...fault, left: fault.times ?? 1 });
  }

  /** The entity a message shows, if it was sent by card_id. */
  entityOf(messageId: string): CardEntity | undefined {
    return this.entities.byMessage(messageId);
  }

  /** A user's click on the message is being answered: every operation on its entity gets 200810 meanwhile. */
  callbackStarted(messageId: string): void {
    this.entities.callbackStarted(messageId);
  }

  callbackEnded(messageId: string): void {
    this.entities.callbackEnded(messageId);
  }

  /** The calls about one entity, in order. */
  callsOn(cardId: string): FakeCardKitCall[] {
    return this.calls.filter((c) => c.cardId === cardId);
  }

  // CardKitApi -------------------------------------------------------------------------------------------

  async create(card: object): Promise<{ cardId: string }> {
    return this.#call({ op: "create" }, () => {
      const entity = this.entities.create(JSON.stringify(card), this.#now());
      return { cardId: entity.cardId };
    });
  }

  async send(
    where: { replyTo: string; inThread?: boolean } | { target: MessageTarget },
    cardId: string,
    uuid: string | undefined,
  ): Promise<{ messageId: string }> {
    return this.#call({ op: "send", cardId }, () => {
      const platform = this.#fake.platform;
      const replay = uuid === undefined ? undefined : this.#uuids.get(uuid);
      if (replay !== undefined && this.#fake.store.get(replay)) return { messageId: replay };
      if (!this.entities.get(cardId)) throw fail(CODES.cardContentFailed, "cardid is invalid");
      // The entity's card is what the message shows; an entity is sent once (claim refuses a second time).
      const content = this.entities.claim(cardId, this.#now());
      const sent =
        "replyTo" in where
          ? platform.reply(where.replyTo, "interactive", content, {
              ...(uuid ? { uuid } : {}),
              ...(where.inThread ? { inThread: true } : {}),
            })
          : platform.create(where.target, "interactive", content, uuid);
      this.entities.attach(cardId, sent.messageId);
      if (uuid !== undefined) this.#uuids.set(uuid, sent.messageId);
      return sent;
    });
  }

  async update(cardId: string, card: object, sequence: number): Promise<void> {
    const body = card as Record<string, unknown>;
    await this.#call({ op: "update", cardId, sequence, body }, () =>
      this.entities.update(cardId, JSON.stringify(card), sequence, this.#now()),
    );
  }

  async settings(cardId: string, config: Record<string, unknown>, sequence: number): Promise<void> {
    await this.#call({ op: "settings", cardId, sequence, body: config }, () =>
      this.entities.settings(cardId, JSON.stringify({ config }), sequence, this.#now()),
    );
  }

  async content(cardId: string, elementId: string, text: string, sequence: number): Promise<void> {
    await this.#call({ op: "content", cardId, sequence, elementId, text }, () =>
      this.entities.content(cardId, elementId, text, sequence, this.#now()),
    );
  }

  // the way every call goes --------------------------------------------------------------------------------

  /** Faults first, then the app-wide window, then the entity's rules; answered on the next turn, like I/O. */
  async #call<T>(record: Omit<FakeCardKitCall, "at">, handle: () => T): Promise<T> {
    const call: FakeCardKitCall = { ...record, at: this.#now() };
    this.calls.push(call);
    await Promise.resolve();
    const api = API_NAMES[call.op];
    try {
      const fault = this.#take(call.op);
      if (fault)
        throw new FeishuApiError({
          method: api,
          message: fault.msg ?? "refused",
          ...(fault.code !== undefined ? { feishuCode: fault.code } : {}),
          httpStatus: fault.httpStatus ?? 400,
          ...(fault.resetSeconds !== undefined ? { retryAfterMs: fault.resetSeconds * 1000 } : {}),
        });
      const slot = this.#fake.platform.takeAppSlot();
      if (!slot.ok)
        throw new FeishuApiError({
          method: api,
          message: "request trigger frequency limit",
          feishuCode: 99991400,
          httpStatus: 429,
          retryAfterMs: Math.max(1, Math.ceil(slot.retryAfterMs / 1000)) * 1000,
        });
      const value = handle();
      call.code = 0;
      if (call.op === "create" && typeof value === "object" && value !== null && "cardId" in value)
        call.cardId = String(value.cardId);
      return value;
    } catch (error) {
      const mapped = toApiError(api, error);
      call.code = mapped.feishuCode ?? mapped.httpStatus ?? -1;
      throw mapped;
    }
  }

  #take(op: CardKitOp): FakeCardKitFault | undefined {
    const index = this.#faults.findIndex(
      (f) =>
        f.left > 0 && (f.op === undefined || (typeof f.op === "string" ? f.op === op : f.op.includes(op))),
    );
    const fault = this.#faults[index];
    if (!fault) return undefined;
    fault.left -= 1;
    if (fault.left === 0) this.#faults.splice(index, 1);
    return fault;
  }

  #now(): number {
    return this.#fake.clock.now();
  }
}
