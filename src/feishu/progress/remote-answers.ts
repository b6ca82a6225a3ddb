import type { AskRegistry } from "../../asks/registry.ts";
import type { SettledElsewhere } from "../../asks/row-follow.ts";
import type { RunFeed } from "../../domain/run-feed.ts";
import { describeError } from "../../errors.ts";
import type { Logger } from "../../logger.ts";
import type { FeishuStore } from "../../store/feishu.ts";
import type { CallbackRelay } from "../cluster-options.ts";
import type { ActiveCard, CardBook } from "./card-book.ts";

/**
 * Card clicks with several instances (issue 27): any instance may get a click on any card. One on a card whose
 * task another instance runs is answered here with the card as the rows have it (`cardFromRows`,
 * card-actions.ts); that instance is told when the click arrives (`answering`) and once its answer is sent
 * (`responded`). A reply quoting such a card is read the same way (`repliedTo`, card-replies.ts).
 *
 * On the card's own instance, its only writer, the card's PATCHes are held from the first word of such a click
 * (its arrival, or the settle of its question if that word was lost) until its answer is sent, as for a click
 * it answers itself (publisher.ts `hold`): Feishu reverts an update that lands while a callback is answered.
 * Then the state of now goes out in one PATCH, for everyone the answer's card did not reach. Without word from
 * the other instance the hold ends when the platform's 3 s for the answer are over.
 */

/** How long Feishu waits for a callback's answer: no answer can land later than this after the click. */
export const CALLBACK_ANSWER_MS = 3_000;

interface Hold {
  release: () => void;
  timer: ReturnType<typeof setTimeout>;
}

export interface RemoteAnswersDeps {
  registry: Pick<AskRegistry, "on" | "mirrorPending">;
  book: Pick<CardBook, "get" | "byMessage" | "detached">;
  /** The app's card rows. */
  store: Pick<FeishuStore, "cardByMessage">;
  runs: Pick<RunFeed, "getRun" | "session">;
  relay: CallbackRelay;
  now: () => number;
}

export class RemoteAnswers {
  readonly #d: RemoteAnswersDeps;
  /** By the card's message id: one hold per card, whatever number of its questions the click answered. */
  readonly #holds = new Map<string, Hold>();
  readonly #offs: (() => void)[];

  constructor(deps: RemoteAnswersDeps) {
    this.#d = deps;
    this.#offs = [
      deps.relay.onCallback((event, messageId) => {
        if (event === "responded") return this.#release(messageId);
        // From the click's arrival there, as a click here holds from its arrival (publisher.ts `hold`).
        const card = deps.book.byMessage(messageId);
        if (card) this.#hold(card, CALLBACK_ANSWER_MS);
      }),
      // Told before the settle's own event, whose PATCH the hold then defers.
      deps.registry.on("settledElsewhere", (settled) => this.#settled(settled)),
    ];
  }

  /**
   * A card this app sent whose task another instance runs, drawn from the rows: its card row, its run as last
   * written, its session, and its questions as copies held here. Undefined when the app sent no such card, or
   * it is gone. Four reads; the card is kept nowhere here.
   */
  async cardFromRows(messageId: string): Promise<ActiveCard | undefined> {
    const row = await this.#d.store.cardByMessage(messageId);
    if (!row || row.gone) return undefined;
    const run = await this.#d.runs.getRun(row.runId);
    if (!run) return undefined;
    // Its questions as copies here, should a wake-up not have brought them yet (one read of the pending rows):
    // the card answered with, and a reply read against, show every question the run waits on.
    await this.#d.registry.mirrorPending();
    return this.#d.book.detached(run, row, await this.#d.runs.session(run.sessionId));
  }

  /**
   * The card a message replies to (its parent, else its root) when another instance runs its task, drawn from
   * the rows: a reply to it may answer its question here (card-replies.ts). Undefined when it is no such card,
   * or the database did not say (then the message is an ordinary one, as on one process for a card not ours).
   */
  async repliedTo(
    message: { parentId?: string | undefined; rootId?: string | undefined },
    log: Logger,
  ): Promise<ActiveCard | undefined> {
    for (const id of [message.parentId, message.rootId]) {
      if (id === undefined) continue;
      const card = await this.cardFromRows(id).catch((error: unknown) => {
        log.warn({ err: describeError(error), messageId: id }, "replied-to card not read from the rows");
        return undefined;
      });
      if (card) return card;
    }
    return undefined;
  }

  /** A click on a card drawn from the rows was answered here: its instance may PATCH it again. */
  responded(messageId: string): void {
    this.#d.relay.responded(messageId);
  }

  #settled({ ask, outcome, settledAt }: SettledElsewhere): void {
    if (outcome.kind !== "answered" && outcome.kind !== "declined") return;
    if (outcome.surface !== "feishu") return;
    const card = this.#d.book.get(ask.runId);
    if (!card) return;
    // Measured from the settle by the other instance's clock, bounded both ways: a settle this instance heard
    // of late (its poll, not the wake-up) holds nothing, and a clock far behind cannot hold for longer.
    const now = this.#d.now();
    this.#hold(card, Math.min(CALLBACK_ANSWER_MS, (settledAt ?? now) + CALLBACK_ANSWER_MS - now));
  }

  /** Holds the card's PATCHes for at most `ms`, unless it is held already (one hold per card). */
  #hold(card: ActiveCard, ms: number): void {
    const { messageId, publisher } = card;
    if (ms <= 0 || !messageId || !publisher || card.gone || this.#holds.has(messageId)) return;
    const release = publisher.hold();
    const timer = setTimeout(() => this.#release(messageId), ms);
    timer.unref?.();
    this.#holds.set(messageId, { release: () => release(undefined), timer });
  }

  /** A click on a card drawn from the rows is being answered here: its instance holds its PATCHes. */
  answering(messageId: string): void {
    this.#d.relay.answering(messageId);
  }

  /** How many cards wait for another instance's answer now (tests). */
  get holding(): number {
    return this.#holds.size;
  }

  close(): void {
    for (const off of this.#offs.splice(0)) off();
    for (const messageId of [...this.#holds.keys()]) this.#release(messageId);
  }

  #release(messageId: string): void {
    const hold = this.#holds.get(messageId);
    if (!hold) return;
    this.#holds.delete(messageId);
    clearTimeout(hold.timer);
    hold.release();
  }
}
