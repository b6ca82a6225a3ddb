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
  /** What the file held when it was opened: every message in the order they were created, and the uuids. */
  readonly loaded: { messages: MessageView[]; uuids: { uuid: string; messageId: string; at: number }[] };
  save(message: MessageView): void;
  /** Each content the card had; `via` says what put it there. Oldest first, the last `limit` kept. */
  addRevision(revision: CardRevision): void;
  revisions(messageId: string): CardRevision[];
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
  edits: z.number().optional(),
  recalled: z.boolean(),
  senderType: z.enum(["app", "user"]),
  senderId: z.string(),
  revision: z.number().default(1),
  mentions: z.array(mention).optional(),
  visibleTo: z.string().optional(),
  views: z.record(z.string(), z.string()).optional(),
});
const revisionRow = z.object({
  message_id: z.string(),
  revision: z.number(),
  at: z.number(),
  via: z.enum(["sent", "patch", "card_update", "callback", "revert"]),
  content: z.string(),
});
const uuidRow = z.object({ uuid: z.string(), message_id: z.string(), at: z.number() });

/** A state file that cannot be read: said with the file and the way out, instead of a bare SQLite error. */
export class JournalError extends Error {
  constructor(file: string, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(
      `the emulator's state file ${file} cannot be read (${reason}); move it away to start with empty chats`,
      {
        cause,
      },
    );
    this.name = "JournalError";
  }
}

/** Opens (or creates) the state file; throws JournalError when it is not a readable one. */
export function openJournal(file: string): Journal {
  let db: Database.Database | undefined;
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    db = new Database(file);
    db.pragma("journal_mode = WAL");
    db.exec(SCHEMA);
    // Everything is read once, now: a damaged file fails at start, not on some later request.
    return createJournal(db);
  } catch (error) {
    db?.close();
    throw new JournalError(file, error);
  }
}

function createJournal(db: Database.Database): Journal {
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
  const messages = sql.messages.all().map((row) => {
    const { json } = z.object({ json: z.string() }).parse(row);
    return storedMessage.parse(JSON.parse(json));
  });
  const uuids = sql.uuids.all().map((row) => {
    const parsed = uuidRow.parse(row);
    return { uuid: parsed.uuid, messageId: parsed.message_id, at: parsed.at };
  });
  return {
    loaded: { messages, uuids },
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
    saveUuid(uuid, messageId, at) {
      sql.saveUuid.run(uuid, messageId, at);
    },
    close() {
      db.close();
    },
  };
}
