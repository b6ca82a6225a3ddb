import type { Card } from "../cards/model.ts";
import { buildQueuedCard, type QueuedView } from "../cards/queued.ts";
import type { Redaction } from "../cards/redaction.ts";
import type { SessionRuns } from "../domain/ports.ts";
import type { QueuedMessage } from "../domain/types.ts";
import { describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import type { FeishuStore } from "../store/feishu.ts";
import type { Limiter } from "./limits.ts";
import { FeishuApiError, type FeishuMessenger } from "./messenger.ts";
import { nextRedaction } from "./publish-state.ts";
import { threadReply } from "./topics.ts";

/**
 * The cards that answer messages which arrived while a task was running: posted when a message queues,
 * updated as its place in line changes, and retired when it starts or is withdrawn. The mapping lives in
 * the store (store/feishu.ts) so a restart keeps updating them. A card is updated only when what it shows changed: re-sending
 * every queued card on every change once made 60 queued messages cost 626 API calls.
 */
export class QueuedCards {
  readonly #o: {
    store: FeishuStore;
    runner: Pick<SessionRuns, "queued" | "getSession">;
    messenger: Pick<FeishuMessenger, "replyCard" | "patchCard">;
    appLimiter: Limiter;
    logger: Logger;
  };
  /**
   * How much of the message its card may quote, once the tenant's audit refused it (230028): the quote is
   * masked, then left out, and stays so for the card's later states. Absent: quoted as written.
   */
  readonly #redaction = new Map<string, Redaction>();
  /** The card each queued message shows now (as JSON), posted or patched; absent after a restart. */
  readonly #shown = new Map<string, string>();
  /**
   * Replies still on their way (and their records): the message's run can start (the task before it ended)
   * before its card exists, and that card's 已开始 update must wait for it, or the card would say 排队中 for good.
   */
  readonly #posting = new Map<string, Promise<unknown>>();

  constructor(options: {
    store: FeishuStore;
    runner: Pick<SessionRuns, "queued" | "getSession">;
    messenger: Pick<FeishuMessenger, "replyCard" | "patchCard">;
    appLimiter: Limiter;
    logger: Logger;
  }) {
    this.#o = options;
  }

  /** Replies to the queued message with its card and remembers which message to update. */
  async post(
    queued: QueuedMessage,
    position: number,
    where: { sourceMessageId: string; chatId: string },
  ): Promise<void> {
    const build = () =>
      this.#card({
        sessionId: queued.sessionId,
        queueId: queued.id,
        senderId: queued.senderId,
        text: queued.text,
        position,
        state: "queued",
      });
    const replying = (async () => {
      const thread = threadReply(await this.#o.runner.getSession(queued.sessionId));
      // Refused by the audit, the card is sent again with less of the message (same uuid: a refused reply
      // created no message), as progress cards are.
      for (;;) {
        const card = build();
        try {
          const sent = await this.#o.appLimiter(() =>
            // topics: a message queued inside a topic gets its card in the topic too.
            this.#o.messenger.replyCard(where.sourceMessageId, card, {
              uuid: `q-${queued.id}`,
              ...thread,
            }),
          );
          return { sent, card };
        } catch (error) {
          if (!this.#lessOnRefusal(queued.id, error)) throw error;
        }
      }
    })();
    // Its record included: the 已开始 update reads the row it writes.
    const posting = (async () => {
      const { sent, card } = await replying;
      this.#shown.set(queued.id, JSON.stringify(card));
      await this.#o.store.saveQueuedCard({
        queueId: queued.id,
        sessionId: queued.sessionId,
        messageId: sent.messageId,
        sourceMessageId: where.sourceMessageId,
        chatId: where.chatId,
      });
    })();
    this.#posting.set(queued.id, posting);
    try {
      await posting;
    } finally {
      this.#posting.delete(queued.id);
    }
  }

  /** The queue changed: every waiting message's card shows its new place. */
  async reorder(queue: readonly QueuedMessage[]): Promise<void> {
    await Promise.all(queue.map((queued, index) => this.#patch(queued.id, queued, index + 1, "queued")));
  }

  /** The message's run started: its card says so and is no longer tracked. */
  async started(
    queueId: string,
    message: { senderId: string; text: string; sessionId: string },
  ): Promise<void> {
    // A reply that failed left no card to update (post()'s caller reports it): settled is enough.
    await Promise.allSettled([this.#posting.get(queueId)]);
    await this.#patch(queueId, { ...message, id: queueId }, 1, "started");
    await this.#o.store.deleteQueuedCard(queueId);
    this.#shown.delete(queueId);
    this.#redaction.delete(queueId);
  }

  /**
   * A callback on this message's card was answered with `card` (from `cardFor`): Feishu shows an answer's
   * card to the clicker alone (docs/feishu-platform.md, Addendum, later, §1), so everyone else in the chat
   * would keep 插队 and 取消排队 for good. Call the returned function once the answer has settled (a PATCH
   * before that is reverted): it PATCHes the card's state of then once for everyone, even when it is the very
   * card the answer carried. Withdrawn, that is the withdrawn card (its row is gone by then); a message that
   * started meanwhile got its 已开始 from `started` and is left alone.
   */
  async afterAnswer(
    queueId: string,
    state: "queued" | "withdrawn",
    message: { senderId: string; text: string },
  ): Promise<() => Promise<void>> {
    const row = await this.#o.store.queuedCard(queueId);
    if (!row) return async () => {};
    const withdrawn: Withdrawn = {
      view: {
        sessionId: row.sessionId,
        queueId,
        senderId: message.senderId,
        text: message.text,
        position: 1,
        state: "withdrawn",
      },
      // Taken now: a withdrawn message is forgotten before this runs.
      redaction: this.#redaction.get(queueId),
    };
    // Never rejects: it runs from a timer, and a store closed under it (shutdown) is only logged.
    return () =>
      this.#followUp(queueId, state, message, row, withdrawn).catch((error: unknown) =>
        this.#o.logger.warn({ err: describeError(error), queueId }, "queued card update failed"),
      );
  }

  async #followUp(
    queueId: string,
    state: "queued" | "withdrawn",
    message: { senderId: string; text: string },
    row: { sessionId: string; messageId: string },
    withdrawn: Withdrawn,
  ): Promise<void> {
    if (state === "withdrawn") return this.#send(queueId, row.messageId, withdrawn.view, withdrawn.redaction);
    const current = await this.#o.store.queuedCard(queueId);
    const index = (await this.#o.runner.queued(row.sessionId)).findIndex((q) => q.id === queueId);
    if (!current || index < 0) return;
    const view: QueuedCardView = {
      sessionId: row.sessionId,
      queueId,
      senderId: message.senderId,
      text: message.text,
      position: index + 1,
      state: "queued",
    };
    this.#shown.set(queueId, JSON.stringify(this.#card(view)));
    await this.#send(queueId, current.messageId, view);
  }

  /** The card a callback answers with, for a message still in line (or just withdrawn). */
  async cardFor(
    queueId: string,
    state: "queued" | "withdrawn",
    message: { senderId: string; text: string },
  ): Promise<Card | undefined> {
    const row = await this.#o.store.queuedCard(queueId);
    if (!row) return undefined;
    const index = (await this.#o.runner.queued(row.sessionId)).findIndex((q) => q.id === queueId);
    const card = this.#card({
      sessionId: row.sessionId,
      queueId,
      senderId: message.senderId,
      text: message.text,
      position: Math.max(1, index + 1),
      state,
    });
    // The callback's answer replaces the card: the reorder that follows need not send it again.
    if (state === "queued") this.#shown.set(queueId, JSON.stringify(card));
    return card;
  }

  async forget(queueId: string): Promise<void> {
    this.#shown.delete(queueId);
    this.#redaction.delete(queueId);
    await this.#o.store.deleteQueuedCard(queueId);
  }

  /** The queued card as this message may be shown (its redaction rung). */
  #card(view: QueuedCardView): Card {
    const redaction = this.#redaction.get(view.queueId);
    return buildQueuedCard(redaction ? { ...view, redaction } : view);
  }

  /** After a refusal: true when the audit refused and there is a rung left to send with less. */
  #lessOnRefusal(queueId: string, error: unknown): boolean {
    if (!(error instanceof FeishuApiError) || !error.auditRefused) return false;
    const next = nextRedaction(this.#redaction.get(queueId) ?? "none");
    if (next === undefined) return false;
    this.#redaction.set(queueId, next);
    return true;
  }

  async #patch(
    queueId: string,
    message: { senderId: string; text: string; sessionId: string; id: string },
    position: number,
    state: "queued" | "started",
  ): Promise<void> {
    const row = await this.#o.store.queuedCard(queueId);
    if (!row) return;
    const view: QueuedCardView = {
      sessionId: row.sessionId,
      queueId,
      senderId: message.senderId,
      text: message.text,
      position,
      state,
    };
    const json = JSON.stringify(this.#card(view));
    if (this.#shown.get(queueId) === json) return;
    // Recorded before the call, so a second change meanwhile compares against what is on its way.
    this.#shown.set(queueId, json);
    await this.#send(queueId, row.messageId, view);
  }

  /**
   * One PATCH of `view` at the message's rung (`from`); refused by the audit, again with less of the message,
   * a rung at a time. A failure is logged, and forgets what the card shows so the next change sends again.
   */
  async #send(
    queueId: string,
    messageId: string,
    view: QueuedCardView,
    from: Redaction | undefined = this.#redaction.get(queueId),
  ): Promise<void> {
    let redaction = from;
    for (;;) {
      const card = buildQueuedCard(redaction ? { ...view, redaction } : view);
      const json = JSON.stringify(card);
      try {
        await this.#o.appLimiter(() => this.#o.messenger.patchCard(messageId, card));
        return;
      } catch (error) {
        const next =
          error instanceof FeishuApiError && error.auditRefused && nextRedaction(redaction ?? "none");
        if (next) {
          redaction = next;
          if (await this.#o.store.queuedCard(queueId)) this.#redaction.set(queueId, next);
          if (this.#shown.has(queueId))
            this.#shown.set(queueId, JSON.stringify(buildQueuedCard({ ...view, redaction })));
          continue;
        }
        if (this.#shown.get(queueId) === json) this.#shown.delete(queueId);
        this.#o.logger.warn({ err: describeError(error), queueId }, "queued card update failed");
        return;
      }
    }
  }
}

type QueuedCardView = Omit<QueuedView, "redaction">;

/** The withdrawn card a callback's follow-up sends, and the rung the message was at when it was withdrawn. */
interface Withdrawn {
  view: QueuedCardView;
  redaction: Redaction | undefined;
}
