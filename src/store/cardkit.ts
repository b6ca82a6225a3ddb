import { type Selectable, sql, type Updateable } from "kysely";
import { type CardkitEntitiesTable, run, type StoreSql, transaction } from "./sql.ts";

/**
 * What the CardKit transport must not lose on restart: which entity a card message shows, the highest
 * sequence reserved for it (written before a call uses it, so a restart starts above every sequence ever
 * sent), when its streaming mode was last opened, and whether the card fell back to IM PATCH. On either
 * dialect (sql.ts): on Postgres the table is the store schema's (pg-schema.ts); on the SQLite file it is
 * created if missing, by the first statement, since the transport is opt-in and nothing else reads it.
 */
export interface CardEntityRow {
  /** The reply's uuid (one per run): an entity is created once per card, even when the reply is retried. */
  key: string;
  cardId: string;
  messageId: string | undefined;
  reserved: number;
  streamingSince: number | undefined;
  fallback: boolean;
  static: boolean;
  staticMessageId: string | undefined;
}

export class CardEntityStore {
  readonly #store: StoreSql;
  /** The SQLite table made (once per store, retried after a failure); Postgres has it from its schema. */
  #table: Promise<void> | undefined;

  constructor(store: StoreSql) {
    this.#store = store;
  }

  async created(key: string, cardId: string): Promise<void> {
    await this.#run((db) =>
      db
        .insertInto("cardkit_entities")
        .values({ key, card_id: cardId })
        .onConflict((conflict) => conflict.column("key").doNothing())
        .execute(),
    );
  }

  async byKey(key: string): Promise<CardEntityRow | undefined> {
    const row = await this.#run((db) =>
      db.selectFrom("cardkit_entities").selectAll().where("key", "=", key).executeTakeFirst(),
    );
    return row && toRow(row);
  }

  async byMessage(messageId: string): Promise<CardEntityRow | undefined> {
    const row = await this.#run((db) =>
      db.selectFrom("cardkit_entities").selectAll().where("message_id", "=", messageId).executeTakeFirst(),
    );
    return row && toRow(row);
  }

  async sent(key: string, messageId: string): Promise<void> {
    await this.#set(key, { message_id: messageId });
  }

  /** Never lowers it: a late or repeated reservation leaves the highest one stored. */
  async reserve(key: string, upTo: number): Promise<void> {
    await this.#run((db) =>
      db
        .updateTable("cardkit_entities")
        .set({ reserved: upTo })
        .where("key", "=", key)
        .where("reserved", "<", upTo)
        .execute(),
    );
  }

  async streaming(key: string, since: number | undefined): Promise<void> {
    await this.#set(key, { streaming_since: since ?? null });
  }

  async fallback(key: string): Promise<void> {
    await this.#set(key, { fallback: 1 });
  }

  /** IM PATCH was refused too: nothing more goes to the card; its final state goes as a new message. */
  async toStatic(key: string): Promise<void> {
    await this.#set(key, { fallback: 1, static: 1 });
  }

  /** The static message with the final state was sent: a restart never sends it again. */
  async staticSent(key: string, messageId: string): Promise<void> {
    await this.#set(key, { static_message_id: messageId });
  }

  async #set(key: string, values: Updateable<CardkitEntitiesTable>): Promise<void> {
    await this.#run((db) => db.updateTable("cardkit_entities").set(values).where("key", "=", key).execute());
  }

  /**
   * Makes the SQLite table now (at start, before any card): made lazily under a write lock another process
   * holds, a card's first read would fail and the card could neither use CardKit nor record its fallback.
   */
  async prepare(): Promise<void> {
    await this.#run(async () => undefined);
  }

  async #run<T>(statement: (db: StoreSql["db"]) => Promise<T>): Promise<T> {
    if (this.#store.dialect === "sqlite") {
      this.#table ??= sqliteTable(this.#store).catch((error: unknown) => {
        this.#table = undefined;
        throw error;
      });
      await this.#table;
    }
    const { db } = this.#store;
    return run(this.#store, () => statement(db));
  }
}

/** The table on the SQLite file, and the static fallback's columns a table of an earlier build lacks. */
async function sqliteTable(store: StoreSql): Promise<void> {
  const { db } = store;
  await sql`CREATE TABLE IF NOT EXISTS cardkit_entities (
    key TEXT PRIMARY KEY,
    card_id TEXT NOT NULL,
    message_id TEXT,
    reserved INTEGER NOT NULL DEFAULT 0,
    streaming_since INTEGER,
    fallback INTEGER NOT NULL DEFAULT 0,
    static INTEGER NOT NULL DEFAULT 0,
    static_message_id TEXT
  )`.execute(db);
  await sql`CREATE INDEX IF NOT EXISTS cardkit_entities_message ON cardkit_entities (message_id)`.execute(db);
  const columns = await sql<{ name: string }>`PRAGMA table_info(cardkit_entities)`.execute(db);
  if (!columns.rows.some((column) => column.name === "static"))
    await transaction(store, async (tx) => {
      await sql`ALTER TABLE cardkit_entities ADD COLUMN static INTEGER NOT NULL DEFAULT 0`.execute(tx.db);
      await sql`ALTER TABLE cardkit_entities ADD COLUMN static_message_id TEXT`.execute(tx.db);
    });
}

function toRow(row: Selectable<CardkitEntitiesTable>): CardEntityRow {
  return {
    key: row.key,
    cardId: row.card_id,
    messageId: row.message_id ?? undefined,
    reserved: row.reserved,
    streamingSince: row.streaming_since ?? undefined,
    fallback: row.fallback === 1,
    static: row.static === 1,
    staticMessageId: row.static_message_id ?? undefined,
  };
}
