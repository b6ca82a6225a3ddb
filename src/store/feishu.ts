import type { Db } from "./db.ts";
import {
  type AskPingRow,
  type ProgressCardRow,
  type QueuedCardRow,
  toCard,
  toPing,
  toQueuedCard,
} from "./feishu-rows.ts";
import { insertionOrder, run, type StoreSql, sqliteSql } from "./sql.ts";

/**
 * What the Feishu channel must not lose on restart: seen message ids, card mappings, queued-message cards. On
 * either dialect (sql.ts; issue 27): every instance reads the same rows, and two instances handed one message
 * record it once.
 */

export type { AskPingRow, ProgressCardRow, QueuedCardRow } from "./feishu-rows.ts";

export interface BotIdentityRow {
  openId: string;
  name: string;
  /** When the platform last said so. */
  checkedAt: number;
}

/** Feishu refuses to PATCH a message older than this (230031): an older card is not repaired after a restart. */
export const CARD_PATCHABLE_MS = 14 * 24 * 60 * 60 * 1000;

/** Longer than Feishu's redelivery window (retries at 15 s, 5 min, 1 h and 6 h). */
export const INBOUND_RETENTION_MS = 24 * 60 * 60 * 1000;

const PRUNE_EVERY_MS = 60 * 60 * 1000;

/** The app a store's rows belong to; null: a store that sees every app's (tests, tools). */
type AppKey = string | null;

/** The tables whose rows name their app. */
type AppTable = "progress_cards" | "queued_cards" | "ask_pings";

/**
 * The Feishu channel's rows of one app (issue 30: several apps in one process), or of all of them when no app is
 * given. Each app's channel has its own: it repairs, edits and reorders only the messages its app sent. Reads
 * that start from a run, a queued message or a time see only the store's app's rows; each method is one
 * statement unless it says otherwise.
 */
export class FeishuStore {
  readonly #store: StoreSql;
  readonly #now: () => number;
  readonly #app: AppKey;
  /** Inbound ids are kept bare for this app (the one app of earlier versions wrote them so). */
  readonly #bareInbound: boolean;
  #lastPrune = 0;

  constructor(store: StoreSql, now: () => number, app?: { appId: string; first?: boolean }) {
    this.#store = store;
    this.#now = now;
    this.#app = app?.appId ?? null;
    this.#bareInbound = app === undefined || app.first !== false;
  }

  /** On the bot's SQLite file (tests, tools). */
  static onFile(db: Db, now: () => number, app?: { appId: string; first?: boolean }): FeishuStore {
    return new FeishuStore(sqliteSql(db), now, app);
  }

  /**
   * Rows written before apps were recorded (NULL) are the first app's: there was one app then. Called by the
   * first app's runtime at start; afterwards every row names its app. Three statements, no transaction: each
   * claims what is left (a start cut short claims the rest next time).
   */
  async claimUnowned(): Promise<void> {
    const app = this.#app;
    if (app === null) return;
    const { db } = this.#store;
    const claim = { app_id: app };
    await run(this.#store, () =>
      db.updateTable("progress_cards").set(claim).where("app_id", "is", null).execute(),
    );
    await run(this.#store, () =>
      db.updateTable("queued_cards").set(claim).where("app_id", "is", null).execute(),
    );
    await run(this.#store, () =>
      db.updateTable("ask_pings").set(claim).where("app_id", "is", null).execute(),
    );
  }

  /**
   * True the first time this app sees a message id; false for a redelivery (or another instance's copy of it:
   * the insert is the one winner). Per app: one group message that @-mentions two of our bots reaches both apps
   * with the same message_id, and each must answer it once. The first app keeps the bare id earlier versions
   * recorded, so an upgrade does not take a redelivery anew. `tx`: the transaction that records the message's
   * run or queue row (the runner's claim), so the id is recorded with it or not at all.
   */
  async markInbound(messageId: string, tx?: StoreSql): Promise<boolean> {
    const store = tx ?? this.#store;
    const now = this.#now();
    if (this.#pruneDue(now)) {
      const before = now - INBOUND_RETENTION_MS;
      await run(store, () =>
        store.db.deleteFrom("inbound_messages").where("received_at", "<", before).execute(),
      );
    }
    const result = await run(store, () =>
      store.db
        .insertInto("inbound_messages")
        .values({ message_id: this.#inboundKey(messageId), received_at: now })
        .onConflict((conflict) => conflict.column("message_id").doNothing())
        .executeTakeFirst(),
    );
    return result.numInsertedOrUpdatedRows === 1n;
  }

  async saveCard(row: Omit<ProgressCardRow, "gone" | "finalLandedAt">): Promise<void> {
    const { db } = this.#store;
    const values = {
      run_id: row.runId,
      session_id: row.sessionId,
      message_id: row.messageId,
      chat_id: row.chatId,
      sender_id: row.senderId,
      source_message_id: row.sourceMessageId,
      created_at: row.createdAt,
      gone: 0,
      final_landed_at: null,
      app_id: this.#app,
    };
    // A card saved again (moved, resent) starts over: not gone, its final state not landed.
    const { run_id: _key, ...update } = values;
    await run(this.#store, () =>
      db
        .insertInto("progress_cards")
        .values(values)
        .onConflict((conflict) => conflict.column("run_id").doUpdateSet(update))
        .execute(),
    );
  }

  async cardForRun(runId: string): Promise<ProgressCardRow | undefined> {
    const row = await run(this.#store, () =>
      this.#own("progress_cards").selectAll().where("run_id", "=", runId).executeTakeFirst(),
    );
    return row && toCard(row);
  }

  async cardByMessage(messageId: string): Promise<ProgressCardRow | undefined> {
    const row = await run(this.#store, () =>
      this.#own("progress_cards")
        .selectAll()
        .where("message_id", "=", messageId)
        .orderBy(insertionOrder(this.#store))
        .limit(1)
        .executeTakeFirst(),
    );
    return row && toCard(row);
  }

  async markCardGone(runId: string): Promise<void> {
    const { db } = this.#store;
    await run(this.#store, () =>
      db.updateTable("progress_cards").set({ gone: 1 }).where("run_id", "=", runId).execute(),
    );
  }

  /** The card shows its run's final state: a restart does not PATCH it again. */
  async markFinalLanded(runId: string, at: number): Promise<void> {
    const { db } = this.#store;
    await run(this.#store, () =>
      db.updateTable("progress_cards").set({ final_landed_at: at }).where("run_id", "=", runId).execute(),
    );
  }

  /**
   * Cards whose final state never landed, recorded at or after `since`, oldest first: live runs' cards and
   * those a kill left behind alike (whether the run ended is its feed's to say: this table names no other
   * area's). Bounded by age: an older card can no longer be PATCHed.
   */
  async finalPending(since: number): Promise<ProgressCardRow[]> {
    const rows = await run(this.#store, () =>
      this.#own("progress_cards")
        .selectAll()
        .where("final_landed_at", "is", null)
        .where("gone", "=", 0)
        .where("created_at", ">=", since)
        .orderBy("created_at")
        .orderBy(insertionOrder(this.#store))
        .execute(),
    );
    return rows.map(toCard);
  }

  /**
   * The run's card has had its @-mention reminder (at most one per card, a restart included). True for the
   * one writer that marked it (a reminder marked before it is sent goes out once, whoever else tries).
   */
  async markReminded(runId: string, at: number): Promise<boolean> {
    const { db } = this.#store;
    const result = await run(this.#store, () =>
      db
        .insertInto("ask_reminders")
        .values({ run_id: runId, sent_at: at })
        .onConflict((conflict) => conflict.column("run_id").doNothing())
        .executeTakeFirst(),
    );
    return result.numInsertedOrUpdatedRows === 1n;
  }

  async wasReminded(runId: string): Promise<boolean> {
    const { db } = this.#store;
    const row = await run(this.#store, () =>
      db.selectFrom("ask_reminders").select("run_id").where("run_id", "=", runId).executeTakeFirst(),
    );
    return row !== undefined;
  }

  /** A ping or reminder that landed, with every ask it points at now (replaces what was recorded). */
  async savePing(row: AskPingRow): Promise<void> {
    const { db } = this.#store;
    const update = {
      kind: row.kind,
      run_id: row.runId,
      request_ids: JSON.stringify(row.requestIds),
      in_group: row.group ? 1 : 0,
      sent_at: row.sentAt,
      app_id: this.#app,
    };
    await run(this.#store, () =>
      db
        .insertInto("ask_pings")
        .values({ message_id: row.messageId, ...update })
        .onConflict((conflict) => conflict.column("message_id").doUpdateSet(update))
        .execute(),
    );
  }

  /**
   * Pings and reminders not yet edited, sent at or after `since`, oldest first (ties in the order they were
   * first saved); older rows are dropped (their messages are past the edit window as a card is past its PATCH
   * window). Two statements: the drop, then the read.
   */
  async pingsSince(since: number): Promise<AskPingRow[]> {
    const { db } = this.#store;
    await run(this.#store, () => db.deleteFrom("ask_pings").where("sent_at", "<", since).execute());
    const rows = await run(this.#store, () =>
      this.#own("ask_pings")
        .selectAll()
        .where("sent_at", ">=", since)
        .orderBy("sent_at")
        .orderBy(insertionOrder(this.#store))
        .execute(),
    );
    return rows.map(toPing);
  }

  /** The message was edited to say how its questions ended: nothing is left to do for it. */
  async deletePing(messageId: string): Promise<void> {
    const { db } = this.#store;
    await run(this.#store, () => db.deleteFrom("ask_pings").where("message_id", "=", messageId).execute());
  }

  async saveQueuedCard(row: QueuedCardRow): Promise<void> {
    const { db } = this.#store;
    const update = {
      session_id: row.sessionId,
      message_id: row.messageId,
      source_message_id: row.sourceMessageId,
      chat_id: row.chatId,
      created_at: this.#now(),
      app_id: this.#app,
    };
    await run(this.#store, () =>
      db
        .insertInto("queued_cards")
        .values({ queue_id: row.queueId, ...update })
        .onConflict((conflict) => conflict.column("queue_id").doUpdateSet(update))
        .execute(),
    );
  }

  async queuedCard(queueId: string): Promise<QueuedCardRow | undefined> {
    const raw = await run(this.#store, () =>
      this.#own("queued_cards").selectAll().where("queue_id", "=", queueId).executeTakeFirst(),
    );
    return raw && toQueuedCard(raw);
  }

  async deleteQueuedCard(queueId: string): Promise<void> {
    const { db } = this.#store;
    await run(this.#store, () => db.deleteFrom("queued_cards").where("queue_id", "=", queueId).execute());
  }

  /**
   * The app's bot as the platform last described it (bot/v3/info), so that a start needs no call before it
   * listens (feishu/bot-identity.ts). Keyed by the store's app ('' for a store of every app).
   */
  async botIdentity(): Promise<BotIdentityRow | undefined> {
    const { db } = this.#store;
    const row = await run(this.#store, () =>
      db
        .selectFrom("bot_identities")
        .selectAll()
        .where("app_id", "=", this.#app ?? "")
        .executeTakeFirst(),
    );
    return row && { openId: row.open_id, name: row.name, checkedAt: row.checked_at };
  }

  async saveBotIdentity(identity: BotIdentityRow): Promise<void> {
    const { db } = this.#store;
    const update = { open_id: identity.openId, name: identity.name, checked_at: identity.checkedAt };
    await run(this.#store, () =>
      db
        .insertInto("bot_identities")
        .values({ app_id: this.#app ?? "", ...update })
        .onConflict((conflict) => conflict.column("app_id").doUpdateSet(update))
        .execute(),
    );
  }

  /** A select on `table` that sees this store's app's rows only (every app's when it has none). */
  #own(table: AppTable) {
    const app = this.#app;
    return this.#store.db
      .selectFrom(table)
      .where((eb) => (app === null ? eb.lit(true) : eb("app_id", "=", app)));
  }

  #inboundKey(messageId: string): string {
    return this.#bareInbound || this.#app === null ? messageId : `${this.#app}:${messageId}`;
  }

  /** Seen ids older than the redelivery window are dropped once an hour (per store, either path). */
  #pruneDue(now: number): boolean {
    if (now - this.#lastPrune <= PRUNE_EVERY_MS) return false;
    this.#lastPrune = now;
    return true;
  }
}
