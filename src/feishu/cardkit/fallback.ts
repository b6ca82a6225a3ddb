import type { Card } from "../../cards/model.ts";
import { describeError } from "../../errors.ts";
import type { Logger } from "../../logger.ts";
import type { CardEntityRow, CardEntityStore } from "../../store/cardkit.ts";
import { FeishuApiError, type FeishuMessenger } from "../messenger.ts";
import type { CardShape, SendMode } from "../publish-state.ts";
import { hasForm } from "./card-shape.ts";

/**
 * A CardKit card after CardKit refused it: the same message by IM PATCH. Whether IM PATCH works on a message
 * sent by `card_id` is not documented (feishu-platform §3.5, UNCONFIRMED), so the first PATCH settles it for
 * this card: refused too (anything but a rate limit, a transient failure, the audit or a card that is gone), it is
 * left as it is and nothing more is sent to it; its final state goes as a new static card message, a reply in
 * the same thread, once (recorded, so a restart does not send it again). Never a retry in a loop.
 *
 * A form the static card would have to show cannot wait for the end: a question nobody sees only runs out its
 * timeout. So the card moves: its state of now, form included, goes as a new IM card where the progress card
 * is (`moved`: the channel finds the run by it, a restart continues there), and every later state is PATCHed
 * onto that card, its failures the publisher's as any IM card's. If the new card is refused, the questions end
 * (`unplaceable`) with the reason the agent gets; a rate limit or a transient failure is retried by the
 * publisher with the latest state.
 */
export interface FallbackDeps {
  store: CardEntityStore;
  log: Logger;
  key: string;
  messageId: string;
  cardId: string;
  messenger: Pick<FeishuMessenger, "patchCard">;
  /** The static message: the card as a new message where the progress card is (its uuid makes it once). */
  reply?: (card: Card, uuid: string) => Promise<{ messageId: string }>;
  /** The static card moved to this new IM card, to show a form. */
  moved?: (messageId: string) => void;
  /** The card could not move: its questions cannot be shown anywhere. */
  unplaceable?: () => void;
}

export class ImFallback {
  readonly #d: FallbackDeps;
  /** A PATCH of this card landed: IM PATCH works here, and its failures are the publisher's to read. */
  #patched = false;
  #static: boolean;
  #staticMessageId: string | undefined;
  /** The new IM card the static card moved to for a form: every later state is PATCHed there. */
  #home: string | undefined;

  /** `row`: the entity's row as the transport read it before either existed (transport.ts `open`). */
  constructor(deps: FallbackDeps, row: CardEntityRow | undefined) {
    this.#d = deps;
    this.#static = row?.static ?? false;
    this.#staticMessageId = row?.staticMessageId;
  }

  /** Nothing more goes to the card itself (IM PATCH was refused too). */
  get static(): boolean {
    return this.#static;
  }

  get staticMessageId(): string | undefined {
    return this.#staticMessageId;
  }

  async update(card: Card, shape: CardShape, mode: SendMode): Promise<void> {
    if (this.#static) return this.#whenStatic(card, shape, mode);
    // By IM PATCH the texts cannot go alone: the whole card waits for its full update.
    if (mode === "text") return;
    try {
      await this.#d.messenger.patchCard(this.#d.messageId, card);
      this.#patched = true;
    } catch (error) {
      if (this.#patched || !refused(error) || !this.#d.reply) throw error;
      this.#static = true;
      await this.#d.store.toStatic(this.#d.key);
      const code = error instanceof FeishuApiError ? (error.feishuCode ?? error.httpStatus) : undefined;
      this.#d.log.warn(
        { messageId: this.#d.messageId, cardId: this.#d.cardId, code, err: describeError(error) },
        "IM PATCH of the CardKit card was refused too; its final state goes as a new message",
      );
      await this.#whenStatic(card, shape, mode);
    }
  }

  /** Nothing goes to the card itself: a form moves it to a new IM card; else only its final state goes. */
  async #whenStatic(card: Card, shape: CardShape, mode: SendMode): Promise<void> {
    if (this.#home !== undefined) {
      if (mode === "text") return;
      return this.#d.messenger.patchCard(this.#home, card);
    }
    const form = shape.final !== true && (shape.formOpen || hasForm(card));
    if (form && this.#d.reply && this.#d.moved) return this.#move(card, this.#d.reply, this.#d.moved);
    return this.#final(card, shape);
  }

  async #move(
    card: Card,
    reply: NonNullable<FallbackDeps["reply"]>,
    moved: NonNullable<FallbackDeps["moved"]>,
  ): Promise<void> {
    let sent: { messageId: string };
    try {
      sent = await reply(card, `moved-${this.#d.key}`);
    } catch (error) {
      if (error instanceof FeishuApiError && (error.rateLimited || error.transient)) throw error;
      this.#d.log.warn(
        { messageId: this.#d.messageId, err: describeError(error) },
        "a static CardKit card could not move to a new card for its form; its questions are cancelled",
      );
      this.#d.unplaceable?.();
      return;
    }
    this.#home = sent.messageId;
    moved(sent.messageId);
  }

  /** The final state as a new message, once; any earlier state is not sent (the card stays as it was). */
  async #final(card: Card, shape: CardShape): Promise<void> {
    const reply = this.#d.reply;
    if (shape.final !== true || this.#staticMessageId !== undefined || !reply) return;
    const sent = await reply(card, `static-${this.#d.key}`);
    this.#staticMessageId = sent.messageId;
    await this.#d.store.staticSent(this.#d.key, sent.messageId);
    this.#d.log.info(
      { messageId: this.#d.messageId, staticMessageId: sent.messageId },
      "the final state of a card CardKit and IM PATCH refused went as a new message",
    );
  }
}

/**
 * A refusal that says the call will not work: not a wait-and-try-again, not a card that is gone, not the
 * tenant's audit (its own ladder re-renders the text, and a new message would be refused the same).
 */
function refused(error: unknown): boolean {
  return (
    error instanceof FeishuApiError &&
    !error.rateLimited &&
    !error.transient &&
    !error.auditRefused &&
    // Refused content (230099/230025) has the publisher's degrade ladder; it says nothing of PATCH itself.
    !error.cardRefused &&
    !error.messageGone &&
    !error.messageRemoved
  );
}
