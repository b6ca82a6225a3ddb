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

/**
 * Every statement of the store, prepared once per connection. Reads that start from a run, a queued message or
 * a time see only the store's app's rows (`(? IS NULL OR app_id = ?)`: a store without an app sees them all).
 */
function prepareStatements(db: Db) {
  return {
    inbound: {
      prune: db.prepare("DELETE FROM inbound_messages WHERE received_at < ?"),
      insert: db.prepare("INSERT OR IGNORE INTO inbound_messages (message_id, received_at) VALUES (?, ?)"),
    },
    claim: [
      db.prepare("UPDATE progress_cards SET app_id = ? WHERE app_id IS NULL"),
      db.prepare("UPDATE queued_cards SET app_id = ? WHERE app_id IS NULL"),
      db.prepare("UPDATE ask_pings SET app_id = ? WHERE app_id IS NULL"),
    ],
    cards: {
      save: db.prepare(
        `INSERT OR REPLACE INTO progress_cards (run_id, session_id, message_id, chat_id, sender_id, source_message_id, created_at, gone, app_id)
         VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?)`,
      ),
      forRun: db.prepare<[string, AppKey, AppKey]>(
        "SELECT * FROM progress_cards WHERE run_id = ? AND (? IS NULL OR app_id = ?)",
      ),
      byMessage: db.prepare<[string, AppKey, AppKey]>(
        "SELECT * FROM progress_cards WHERE message_id = ? AND (? IS NULL OR app_id = ?)",
      ),
      markGone: db.prepare("UPDATE progress_cards SET gone = 1 WHERE run_id = ?"),
      markFinalLanded: db.prepare("UPDATE progress_cards SET final_landed_at = ? WHERE run_id = ?"),
      // Cards whose final state has not landed, of any run (whether the run ended is its feed's to say: this
      // table names no other area's). Oldest first, bounded by age: an older card can no longer be PATCHed.
      finalPending: db.prepare<[number, AppKey, AppKey]>(
        `SELECT * FROM progress_cards
         WHERE final_landed_at IS NULL AND gone = 0 AND created_at >= ? AND (? IS NULL OR app_id = ?)
         ORDER BY created_at`,
      ),
    },
    reminders: {
      mark: db.prepare("INSERT OR IGNORE INTO ask_reminders (run_id, sent_at) VALUES (?, ?)"),
      sent: db.prepare<[string], number>("SELECT 1 FROM ask_reminders WHERE run_id = ?").pluck(),
    },
    pings: {
      save: db.prepare(
        `INSERT OR REPLACE INTO ask_pings (message_id, kind, run_id, request_ids, in_group, sent_at, app_id)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ),
      since: db.prepare<[number, AppKey, AppKey], AskPingDbRow>(
        "SELECT * FROM ask_pings WHERE sent_at >= ? AND (? IS NULL OR app_id = ?) ORDER BY sent_at",
      ),
      prune: db.prepare("DELETE FROM ask_pings WHERE sent_at < ?"),
      remove: db.prepare("DELETE FROM ask_pings WHERE message_id = ?"),
    },
    queuedCards: {
      save: db.prepare(
        `INSERT OR REPLACE INTO queued_cards (queue_id, session_id, message_id, source_message_id, chat_id, created_at, app_id)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ),
      get: db.prepare<[string, AppKey, AppKey], QueuedCardDbRow>(
        "SELECT * FROM queued_cards WHERE queue_id = ? AND (? IS NULL OR app_id = ?)",
      ),
      remove: db.prepare("DELETE FROM queued_cards WHERE queue_id = ?"),
    },
  };
}

/** The app a store's rows belong to; null: a store that sees every app's (tests, tools). */
type AppKey = string | null;

/**
 * The Feishu channel's rows of one app (issue 30: several apps in one process), or of all of them when no app is
 * given. Each app's channel has its own: it repairs, edits and reorders only the messages its app sent.
 */
export class FeishuStore {
  readonly #sql: ReturnType<typeof prepareStatements>;
  readonly #now: () => number;
  readonly #app: AppKey;
  /** Inbound ids are kept bare for this app (the one app of earlier versions wrote them so). */
  readonly #bareInbound: boolean;
  #lastPrune = 0;

  constructor(db: Db, now: () => number, app?: { appId: string; first?: boolean }) {
    this.#sql = prepareStatements(db);
    this.#now = now;
    this.#app = app?.appId ?? null;
    this.#bareInbound = app === undefined || app.first !== false;
  }

  /**
   * Rows written before apps were recorded (NULL) are the first app's: there was one app then. Called by the
   * first app's runtime at start; afterwards every row names its app.
   */
  claimUnowned(): void {
    if (this.#app === null) return;
    for (const statement of this.#sql.claim) statement.run(this.#app);
  }

  /**
   * True the first time this app sees a message id; false for a redelivery. Per app: one group message that
   * @-mentions two of our bots reaches both apps with the same message_id, and each must answer it once.
   * The first app keeps the bare id earlier versions recorded, so an upgrade does not take a redelivery anew.
   */
  markInbound(messageId: string): boolean {
    const now = this.#now();
    if (now - this.#lastPrune > 60 * 60 * 1000) {
      this.#lastPrune = now;
      this.#sql.inbound.prune.run(now - INBOUND_RETENTION_MS);
    }
    const key = this.#bareInbound || this.#app === null ? messageId : `${this.#app}:${messageId}`;
    return this.#sql.inbound.insert.run(key, now).changes === 1;
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
      this.#app,
    );
  }

  cardForRun(runId: string): ProgressCardRow | undefined {
    return toCard(this.#sql.cards.forRun.get(runId, this.#app, this.#app));
  }

  cardByMessage(messageId: string): ProgressCardRow | undefined {
    return toCard(this.#sql.cards.byMessage.get(messageId, this.#app, this.#app));
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
    return this.#sql.cards.finalPending.all(since, this.#app, this.#app).flatMap((row) => toCard(row) ?? []);
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
      this.#app,
    );
  }

  /**
   * Pings and reminders not yet edited, sent at or after `since`, oldest first; older rows are dropped (their
   * messages are past the edit window as a card is past its PATCH window).
   */
  pingsSince(since: number): AskPingRow[] {
    this.#sql.pings.prune.run(since);
    return this.#sql.pings.since.all(since, this.#app, this.#app).map((row) => ({
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
      this.#app,
    );
  }

  queuedCard(queueId: string): QueuedCardRow | undefined {
    const row = this.#sql.queuedCards.get.get(queueId, this.#app, this.#app);
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
