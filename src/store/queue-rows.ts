import { sql } from "kysely";
import type { QueuedMessage } from "../domain/types.ts";
import { queuedFromRow } from "./run-rows.ts";
import { insertionOrder, run, type StoreSql } from "./sql.ts";

/**
 * The sessions' queues (`queued_messages`), on either dialect. Order is `seq` (a real: 插队 puts a message
 * before the first), ties by insertion; a position is counted, never stored. Taking the next message off is
 * one statement that gives it to exactly one taker, on Postgres too (the row is locked and skipped by others).
 */
export class QueueRows {
  readonly #store: StoreSql;

  constructor(store: StoreSql) {
    this.#store = store;
  }

  #run<T>(statement: (db: StoreSql["db"]) => Promise<T>): Promise<T> {
    return run(this.#store, () => statement(this.#store.db));
  }

  /** Adds a message at the end of its session's queue; its 1-based position. */
  async enqueue(message: QueuedMessage): Promise<number> {
    await this.#run((db) =>
      db
        .insertInto("queued_messages")
        .values({
          id: message.id,
          session_id: message.sessionId,
          sender_id: message.senderId,
          text: message.text,
          source_json: message.source ? JSON.stringify(message.source) : null,
          // Computed in the statement, inside the caller's transaction. Two instances enqueueing at the same
          // instant may tie on Postgres; ties keep insertion order.
          seq: sql<number>`(SELECT COALESCE(MAX(last.seq), 0) + 1 FROM queued_messages last
                            WHERE last.session_id = ${message.sessionId})`,
          created_at: message.createdAt,
        })
        .execute(),
    );
    return (await this.position(message.id)) ?? 1;
  }

  async queued(sessionId: string): Promise<QueuedMessage[]> {
    const rows = await this.#run((db) =>
      db
        .selectFrom("queued_messages")
        .selectAll()
        .where("session_id", "=", sessionId)
        .orderBy("seq")
        .orderBy(insertionOrder(this.#store, "inserted"))
        .execute(),
    );
    return rows.map(queuedFromRow);
  }

  /** The first `limit` queued messages of a session, their text cut to `chars` characters. */
  async preview(
    sessionId: string,
    limit: number,
    chars: number,
  ): Promise<Pick<QueuedMessage, "id" | "senderId" | "text" | "createdAt">[]> {
    // Snapshots and the queue cap read this on every subscribe and message: never the whole texts.
    const rows = await this.#run((db) =>
      db
        .selectFrom("queued_messages")
        .select(["id", "sender_id", sql<string>`substr(text, 1, ${chars})`.as("text"), "created_at"])
        .where("session_id", "=", sessionId)
        .orderBy("seq")
        .orderBy(insertionOrder(this.#store, "inserted"))
        .limit(limit)
        .execute(),
    );
    return rows.map((row) => ({
      id: row.id,
      senderId: row.sender_id,
      text: row.text,
      createdAt: row.created_at,
    }));
  }

  async count(sessionId: string): Promise<number> {
    const row = await this.#run((db) =>
      db
        .selectFrom("queued_messages")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("session_id", "=", sessionId)
        .executeTakeFirst(),
    );
    return Number(row?.n ?? 0);
  }

  async hasFrom(sessionId: string, senderId: string): Promise<boolean> {
    const row = await this.#run((db) =>
      db
        .selectFrom("queued_messages")
        .select("id")
        .where("session_id", "=", sessionId)
        .where("sender_id", "=", senderId)
        .limit(1)
        .executeTakeFirst(),
    );
    return row !== undefined;
  }

  async get(id: string): Promise<QueuedMessage | undefined> {
    const row = await this.#run((db) =>
      db.selectFrom("queued_messages").selectAll().where("id", "=", id).executeTakeFirst(),
    );
    return row ? queuedFromRow(row) : undefined;
  }

  /** 1-based position in its session's queue; undefined when it is not queued. */
  async position(id: string): Promise<number | undefined> {
    const row = await this.#run((db) =>
      db
        .selectFrom("queued_messages as q")
        .innerJoin("queued_messages as ahead", (join) =>
          join
            .onRef("ahead.session_id", "=", "q.session_id")
            .on((eb) =>
              eb.or([
                eb("ahead.seq", "<", eb.ref("q.seq")),
                eb.and([eb("ahead.seq", "=", eb.ref("q.seq")), eb("ahead.id", "=", eb.ref("q.id"))]),
              ]),
            ),
        )
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("q.id", "=", id)
        .executeTakeFirst(),
    );
    const n = Number(row?.n ?? 0);
    return n > 0 ? n : undefined;
  }

  /** 插队: moves a queued message to the front of its session's queue. False when it is not queued. */
  async moveToFront(id: string): Promise<boolean> {
    const result = await this.#run((db) =>
      db
        .updateTable("queued_messages")
        .set({
          seq: sql<number>`(SELECT MIN(first.seq) FROM queued_messages first
                            WHERE first.session_id = queued_messages.session_id) - 1`,
        })
        .where("id", "=", id)
        .executeTakeFirst(),
    );
    return result.numUpdatedRows > 0n;
  }

  async remove(id: string): Promise<boolean> {
    const result = await this.#run((db) =>
      db.deleteFrom("queued_messages").where("id", "=", id).executeTakeFirst(),
    );
    return result.numDeletedRows > 0n;
  }

  /** Takes the next queued message of a session off the queue: one statement, one taker. */
  async dequeue(sessionId: string): Promise<QueuedMessage | undefined> {
    const { dialect } = this.#store;
    const row = await this.#run((db) =>
      db
        .deleteFrom("queued_messages")
        .where("id", "=", (eb) => {
          const next = eb
            .selectFrom("queued_messages")
            .select("id")
            .where("session_id", "=", sessionId)
            .orderBy("seq")
            .orderBy(insertionOrder(this.#store, "inserted"))
            .limit(1);
          // SQLite has one writer at a time; on Postgres a second taker skips the row the first locked.
          return dialect === "postgres" ? next.forUpdate().skipLocked() : next;
        })
        .returningAll()
        .executeTakeFirst(),
    );
    return row ? queuedFromRow(row) : undefined;
  }

  /** Messages waiting in any chat's queue (for /metrics). */
  async total(): Promise<number> {
    const row = await this.#run((db) =>
      db
        .selectFrom("queued_messages")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .executeTakeFirst(),
    );
    return Number(row?.n ?? 0);
  }

  async sessions(): Promise<string[]> {
    const rows = await this.#run((db) =>
      db.selectFrom("queued_messages").select("session_id").distinct().execute(),
    );
    return rows.map((row) => row.session_id);
  }
}
