import type { Db } from "./db.ts";

/** What the Feishu channel must not lose on restart: seen message ids, card mappings, queued-message cards. */

export interface ProgressCardRow {
  runId: string;
  sessionId: string;
  messageId: string;
  chatId: string;
  senderId: string;
  sourceMessageId: string;
  createdAt: number;
  gone: boolean;
  /** When the card's final state (its run ended) was confirmed on the platform; undefined until then. */
  finalLandedAt: number | undefined;
}

export interface QueuedCardRow {
  queueId: string;
  sessionId: string;
  messageId: string;
  sourceMessageId: string;
  chatId: string;
}

/**
 * A sent @-ping or expiry reminder (feishu/progress/pings.ts): its message, the run and asks it points at
 * (ended ones too), and whether it words people as a group does. Kept until the message was edited.
 */
export interface AskPingRow {
  messageId: string;
  kind: "ping" | "reminder";
  runId: string;
  requestIds: string[];
  group: boolean;
  sentAt: number;
}

/** Feishu refuses to PATCH a message older than this (230031): an older card is not repaired after a restart. */
export const CARD_PATCHABLE_MS = 14 * 24 * 60 * 60 * 1000;

/** Longer than Feishu's redelivery window (retries at 15 s, 5 min, 1 h and 6 h). */
export const INBOUND_RETENTION_MS = 24 * 60 * 60 * 1000;

interface AskPingDbRow {
  message_id: string;
  kind: "ping" | "reminder";
  run_id: string;
  request_ids: string;
  in_group: number;
  sent_at: number;
}

interface QueuedCardDbRow {
  queue_id: string;
  session_id: string;
  message_id: string;
  source_message_id: string;
  chat_id: string;
}

/** Every statement of the store, prepared once per connection. */
function prepareStatements(db: Db) {
  return {
    inbound: {
      prune: db.prepare("DELETE FROM inbound_messages WHERE received_at < ?"),
      insert: db.prepare("INSERT OR IGNORE INTO inbound_messages (message_id, received_at) VALUES (?, ?)"),
    },
    cards: {
      save: db.prepare(
        `INSERT OR REPLACE INTO progress_cards (run_id, session_id, message_id, chat_id, sender_id, source_message_id, created_at, gone)
         VALUES (?, ?, ?, ?, ?, ?, ?, 0)`,
      ),
      forRun: db.prepare<[string]>("SELECT * FROM progress_cards WHERE run_id = ?"),
      byMessage: db.prepare<[string]>("SELECT * FROM progress_cards WHERE message_id = ?"),
      markGone: db.prepare("UPDATE progress_cards SET gone = 1 WHERE run_id = ?"),
      markFinalLanded: db.prepare("UPDATE progress_cards SET final_landed_at = ? WHERE run_id = ?"),
      // Cards whose final state has not landed, of any run (whether the run ended is its feed's to say: this
      // table names no other area's). Oldest first, bounded by age: an older card can no longer be PATCHed.
      finalPending: db.prepare<[number]>(
        `SELECT * FROM progress_cards
         WHERE final_landed_at IS NULL AND gone = 0 AND created_at >= ?
         ORDER BY created_at`,
      ),
    },
    reminders: {
      mark: db.prepare("INSERT OR IGNORE INTO ask_reminders (run_id, sent_at) VALUES (?, ?)"),
      sent: db.prepare<[string], number>("SELECT 1 FROM ask_reminders WHERE run_id = ?").pluck(),
    },
    pings: {
      save: db.prepare(
        `INSERT OR REPLACE INTO ask_pings (message_id, kind, run_id, request_ids, in_group, sent_at)
         VALUES (?, ?, ?, ?, ?, ?)`,
      ),
      since: db.prepare<[number], AskPingDbRow>(
        "SELECT * FROM ask_pings WHERE sent_at >= ? ORDER BY sent_at",
      ),
      prune: db.prepare("DELETE FROM ask_pings WHERE sent_at < ?"),
      remove: db.prepare("DELETE FROM ask_pings WHERE message_id = ?"),
    },
    queuedCards: {
      save: db.prepare(
        `INSERT OR REPLACE INTO queued_cards (queue_id, session_id, message_id, source_message_id, chat_id, created_at)
         VALUES (?, ?, ?, ?, ?, ?)`,
      ),
      get: db.prepare<[string], QueuedCardDbRow>("SELECT * FROM queued_cards WHERE queue_id = ?"),
      remove: db.prepare("DELETE FROM queued_cards WHERE queue_id = ?"),
    },
  };
}

export class FeishuStore {
  readonly #sql: ReturnType<typeof prepareStatements>;
  readonly #now: () => number;
  #lastPrune = 0;

  constructor(db: Db, now: () => number) {
    this.#sql = prepareStatements(db);
    this.#now = now;
  }

  /** True the first time a message id is seen; false for a redelivery. */
  markInbound(messageId: string): boolean {
    const now = this.#now();
    if (now - this.#lastPrune > 60 * 60 * 1000) {
      this.#lastPrune = now;
      this.#sql.inbound.prune.run(now - INBOUND_RETENTION_MS);
    }
    return this.#sql.inbound.insert.run(messageId, now).changes === 1;
  }

  saveCard(row: Omit<ProgressCardRow, "gone" | "finalLandedAt">): void {
    this.#sql.cards.save.run(
      row.runId,
      row.sessionId,
      row.messageId,
      row.chatId,
      row.senderId,
      row.sourceMessageId,
      row.createdAt,
    );
  }

  cardForRun(runId: string): ProgressCardRow | undefined {
    return toCard(this.#sql.cards.forRun.get(runId));
  }

  cardByMessage(messageId: string): ProgressCardRow | undefined {
    return toCard(this.#sql.cards.byMessage.get(messageId));
  }

  markCardGone(runId: string): void {
    this.#sql.cards.markGone.run(runId);
  }

  /** The card shows its run's final state: a restart does not PATCH it again. */
  markFinalLanded(runId: string, at: number): void {
    this.#sql.cards.markFinalLanded.run(at, runId);
  }

  /**
   * Cards whose final state never landed, recorded at or after `since`, oldest first: live runs' cards and
   * those a kill left behind alike (the caller asks the run feed which runs ended).
   */
  finalPending(since: number): ProgressCardRow[] {
    return this.#sql.cards.finalPending.all(since).flatMap((row) => toCard(row) ?? []);
  }

  /** The run's card has had its @-mention reminder (at most one per card, a restart included). */
  markReminded(runId: string, at: number): void {
    this.#sql.reminders.mark.run(runId, at);
  }

  wasReminded(runId: string): boolean {
    return this.#sql.reminders.sent.get(runId) !== undefined;
  }

  /** A ping or reminder that landed, with every ask it points at now (replaces what was recorded). */
  savePing(row: AskPingRow): void {
    this.#sql.pings.save.run(
      row.messageId,
      row.kind,
      row.runId,
      JSON.stringify(row.requestIds),
      row.group ? 1 : 0,
      row.sentAt,
    );
  }

  /**
   * Pings and reminders not yet edited, sent at or after `since`, oldest first; older rows are dropped (their
   * messages are past the edit window as a card is past its PATCH window).
   */
  pingsSince(since: number): AskPingRow[] {
    this.#sql.pings.prune.run(since);
    return this.#sql.pings.since.all(since).map((row) => ({
      messageId: row.message_id,
      kind: row.kind,
      runId: row.run_id,
      requestIds: parseIds(row.request_ids),
      group: row.in_group === 1,
      sentAt: row.sent_at,
    }));
  }

  /** The message was edited to say how its questions ended: nothing is left to do for it. */
  deletePing(messageId: string): void {
    this.#sql.pings.remove.run(messageId);
  }

  saveQueuedCard(row: QueuedCardRow): void {
    this.#sql.queuedCards.save.run(
      row.queueId,
      row.sessionId,
      row.messageId,
      row.sourceMessageId,
      row.chatId,
      this.#now(),
    );
  }

  queuedCard(queueId: string): QueuedCardRow | undefined {
    const row = this.#sql.queuedCards.get.get(queueId);
    return row
      ? {
          queueId: row.queue_id,
          sessionId: row.session_id,
          messageId: row.message_id,
          sourceMessageId: row.source_message_id,
          chatId: row.chat_id,
        }
      : undefined;
  }

  deleteQueuedCard(queueId: string): void {
    this.#sql.queuedCards.remove.run(queueId);
  }
}

function toCard(row: unknown): ProgressCardRow | undefined {
  if (!row) return undefined;
  const r = row as {
    run_id: string;
    session_id: string;
    message_id: string;
    chat_id: string;
    sender_id: string;
    source_message_id: string;
    created_at: number;
    gone: number;
    final_landed_at: number | null;
  };
  return {
    runId: r.run_id,
    sessionId: r.session_id,
    messageId: r.message_id,
    chatId: r.chat_id,
    senderId: r.sender_id,
    sourceMessageId: r.source_message_id,
    createdAt: r.created_at,
    gone: r.gone === 1,
    finalLandedAt: r.final_landed_at ?? undefined,
  };
}

function parseIds(json: string): string[] {
  try {
    const ids: unknown = JSON.parse(json);
    return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === "string") : [];
  } catch {
    return [];
  }
}
