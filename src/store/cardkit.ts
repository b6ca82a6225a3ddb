import type { Db } from "./db.ts";

/**
 * What the CardKit transport must not lose on restart: which entity a card message shows, the highest
 * sequence reserved for it (written before a call uses it, so a restart starts above every sequence ever
 * sent), when its streaming mode was last opened, and whether the card fell back to IM PATCH. Its own table,
 * created if missing: the transport is opt-in, and nothing else reads it.
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

interface DbRow {
  key: string;
  card_id: string;
  message_id: string | null;
  reserved: number;
  streaming_since: number | null;
  fallback: number;
  static: number;
  static_message_id: string | null;
}

export class CardEntityStore {
  readonly #sql;

  constructor(db: Db) {
    db.exec(`CREATE TABLE IF NOT EXISTS cardkit_entities (
      key TEXT PRIMARY KEY,
      card_id TEXT NOT NULL,
      message_id TEXT,
      reserved INTEGER NOT NULL DEFAULT 0,
      streaming_since INTEGER,
      fallback INTEGER NOT NULL DEFAULT 0,
      static INTEGER NOT NULL DEFAULT 0,
      static_message_id TEXT
    );
    CREATE INDEX IF NOT EXISTS cardkit_entities_message ON cardkit_entities (message_id);`);
    // A table an earlier build made lacks the static fallback's columns.
    const columns = db.prepare<[], { name: string }>("PRAGMA table_info(cardkit_entities)").all();
    if (!columns.some((c) => c.name === "static"))
      db.exec(`ALTER TABLE cardkit_entities ADD COLUMN static INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE cardkit_entities ADD COLUMN static_message_id TEXT;`);
    this.#sql = {
      insert: db.prepare("INSERT OR IGNORE INTO cardkit_entities (key, card_id) VALUES (?, ?)"),
      byKey: db.prepare<[string], DbRow>("SELECT * FROM cardkit_entities WHERE key = ?"),
      byMessage: db.prepare<[string], DbRow>("SELECT * FROM cardkit_entities WHERE message_id = ?"),
      sent: db.prepare("UPDATE cardkit_entities SET message_id = ? WHERE key = ?"),
      reserve: db.prepare("UPDATE cardkit_entities SET reserved = ? WHERE key = ? AND reserved < ?"),
      streaming: db.prepare("UPDATE cardkit_entities SET streaming_since = ? WHERE key = ?"),
      fallback: db.prepare("UPDATE cardkit_entities SET fallback = 1 WHERE key = ?"),
      toStatic: db.prepare("UPDATE cardkit_entities SET fallback = 1, static = 1 WHERE key = ?"),
      staticSent: db.prepare("UPDATE cardkit_entities SET static_message_id = ? WHERE key = ?"),
    };
  }

  created(key: string, cardId: string): void {
    this.#sql.insert.run(key, cardId);
  }

  byKey(key: string): CardEntityRow | undefined {
    return toRow(this.#sql.byKey.get(key));
  }

  byMessage(messageId: string): CardEntityRow | undefined {
    return toRow(this.#sql.byMessage.get(messageId));
  }

  sent(key: string, messageId: string): void {
    this.#sql.sent.run(messageId, key);
  }

  reserve(key: string, upTo: number): void {
    this.#sql.reserve.run(upTo, key, upTo);
  }

  streaming(key: string, since: number | undefined): void {
    this.#sql.streaming.run(since ?? null, key);
  }

  fallback(key: string): void {
    this.#sql.fallback.run(key);
  }

  /** IM PATCH was refused too: nothing more goes to the card; its final state goes as a new message. */
  toStatic(key: string): void {
    this.#sql.toStatic.run(key);
  }

  /** The static message with the final state was sent: a restart never sends it again. */
  staticSent(key: string, messageId: string): void {
    this.#sql.staticSent.run(messageId, key);
  }
}

function toRow(row: DbRow | undefined): CardEntityRow | undefined {
  if (!row) return undefined;
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
