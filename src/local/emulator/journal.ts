import fs from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { z } from "zod";
import type { CardRevision, MessageView } from "./types.ts";

/**
 * Where the emulator keeps what Feishu would still know after our process restarts: every message (the
 * chats are their messages), each card's revisions, and the uuids of the last hour. A SQLite file of its
 * own (local mode: `DATA_DIR/emulator.sqlite`), never the bot's database: the bot must not be able to read
 * "Feishu's" state except through the Open API. Without a file the emulator keeps all of it in memory.
 */
export interface Journal {
  /** Every message, in the order they were created. */
  messages(): MessageView[];
  save(message: MessageView): void;
  /** Each content the card had; `via` says what put it there. Oldest first, the last `limit` kept. */
  addRevision(revision: CardRevision): void;
  revisions(messageId: string): CardRevision[];
  uuids(): { uuid: string; messageId: string; at: number }[];
  saveUuid(uuid: string, messageId: string, at: number): void;
  close(): void;
}

/** Revisions kept per card: enough to see a restart's recovery state, bounded for the long-running console. */
export const REVISIONS_KEPT = 50;

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS messages (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id TEXT NOT NULL UNIQUE,
    json       TEXT NOT NULL
  );
  CREATE TABLE IF NOT EXISTS card_revisions (
    message_id TEXT NOT NULL,
    revision   INTEGER NOT NULL,
    at         INTEGER NOT NULL,
    via        TEXT NOT NULL,
    content    TEXT NOT NULL,
    PRIMARY KEY (message_id, revision)
  );
  CREATE TABLE IF NOT EXISTS uuids (
    uuid       TEXT PRIMARY KEY,
    message_id TEXT NOT NULL,
    at         INTEGER NOT NULL
  );
`;

const mention = z.object({ key: z.string(), openId: z.string(), name: z.string() });
/** The file is ours, but it outlives versions of this code: read it back through a schema, not a cast. */
const storedMessage = z.object({
  messageId: z.string(),
  chatId: z.string(),
  chatType: z.enum(["p2p", "group"]),
  msgType: z.string(),
  content: z.string(),
  createdAt: z.number(),
  updatedAt: z.number(),
  parentId: z.string().optional(),
  rootId: z.string().optional(),
  threadId: z.string().optional(),
  patches: z.number(),
  recalled: z.boolean(),
  senderType: z.enum(["app", "user"]),
  senderId: z.string(),
  revision: z.number().default(1),
  mentions: z.array(mention).optional(),
});
const revisionRow = z.object({
  message_id: z.string(),
  revision: z.number(),
  at: z.number(),
  via: z.enum(["sent", "patch", "card_update", "callback"]),
  content: z.string(),
});
const uuidRow = z.object({ uuid: z.string(), message_id: z.string(), at: z.number() });

export function openJournal(file: string): Journal {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.exec(SCHEMA);
  const sql = {
    messages: db.prepare("SELECT json FROM messages ORDER BY seq"),
    save: db.prepare(
      "INSERT INTO messages (message_id, json) VALUES (?, ?) ON CONFLICT(message_id) DO UPDATE SET json = excluded.json",
    ),
    addRevision: db.prepare(
      "INSERT OR REPLACE INTO card_revisions (message_id, revision, at, via, content) VALUES (?, ?, ?, ?, ?)",
    ),
    trimRevisions: db.prepare("DELETE FROM card_revisions WHERE message_id = ? AND revision <= ?"),
    revisions: db.prepare("SELECT * FROM card_revisions WHERE message_id = ? ORDER BY revision"),
    uuids: db.prepare("SELECT * FROM uuids"),
    saveUuid: db.prepare("INSERT OR REPLACE INTO uuids (uuid, message_id, at) VALUES (?, ?, ?)"),
  };
  return {
    messages() {
      return sql.messages.all().map((row) => {
        const { json } = z.object({ json: z.string() }).parse(row);
        return storedMessage.parse(JSON.parse(json));
      });
    },
    save(message) {
      sql.save.run(message.messageId, JSON.stringify(message));
    },
    addRevision(revision) {
      sql.addRevision.run(revision.messageId, revision.revision, revision.at, revision.via, revision.content);
      sql.trimRevisions.run(revision.messageId, revision.revision - REVISIONS_KEPT);
    },
    revisions(messageId) {
      return sql.revisions.all(messageId).map((row) => {
        const parsed = revisionRow.parse(row);
        return {
          messageId: parsed.message_id,
          revision: parsed.revision,
          at: parsed.at,
          via: parsed.via,
          content: parsed.content,
        };
      });
    },
    uuids() {
      return sql.uuids.all().map((row) => {
        const parsed = uuidRow.parse(row);
        return { uuid: parsed.uuid, messageId: parsed.message_id, at: parsed.at };
      });
    },
    saveUuid(uuid, messageId, at) {
      sql.saveUuid.run(uuid, messageId, at);
    },
    close() {
      db.close();
    },
  };
}
