import type { Db } from "./db.ts";
import type { MessageRow, QueuePreviewRow, QueueRow, RunRow, SessionRow } from "./run-rows.ts";

/** Every statement of the store, prepared once per connection rather than on every call. */
export function prepareStatements(db: Db) {
  return {
    sessions: {
      upsert: db.prepare(
        `INSERT INTO sessions (id, channel, chat_type, chat_id, workspace, owner_id, title, topic_root_id,
                               topic_group_id, created_at, updated_at)
         VALUES (@id, @channel, @chatType, @chatId, @workspace, @ownerId, @title, @topicRoot, @topicGroup, @now, @now)
         ON CONFLICT(id) DO UPDATE SET updated_at = @now`,
      ),
      get: db.prepare<[string], SessionRow>("SELECT * FROM sessions WHERE id = ?"),
    },
    runs: {
      insert: db.prepare(
        `INSERT INTO runs (id, session_id, sender_id, input, status, steps_json, started_at, source_json)
         VALUES (@id, @sessionId, @senderId, @input, @status, @steps, @startedAt, @source)`,
      ),
      source: db.prepare<[string], string | null>("SELECT source_json FROM runs WHERE id = ?").pluck(),
      save: db.prepare(
        `UPDATE runs SET status = @status, steps_json = @steps, final_text = @text, error = @error,
         error_words_json = @errorWords, input_tokens = @inputTokens, output_tokens = @outputTokens,
         cached_tokens = @cachedTokens, model = @model, ended_at = @endedAt
         WHERE id = @id`,
      ),
      get: db.prepare<[string], RunRow>("SELECT * FROM runs WHERE id = ?"),
      latest: db.prepare<[string], RunRow>(
        "SELECT * FROM runs WHERE session_id = ? ORDER BY started_at DESC, rowid DESC LIMIT 1",
      ),
      recent: db.prepare<[string, number], RunRow>(
        "SELECT * FROM runs WHERE session_id = ? ORDER BY started_at DESC, rowid DESC LIMIT ?",
      ),
      unfinished: db.prepare<[], RunRow>(
        "SELECT * FROM runs WHERE status IN ('running', 'recovering') ORDER BY started_at",
      ),
    },
    messages: {
      insert: db.prepare(
        `INSERT INTO messages (session_id, run_id, role, content, tool_calls, tool_call_id, tool_name, summary, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      history: db.prepare<[string, number], MessageRow>(
        `SELECT * FROM (SELECT * FROM messages WHERE session_id = ? ORDER BY id DESC LIMIT ?) ORDER BY id ASC`,
      ),
    },
    queue: {
      maxSeq: db
        .prepare<[string], number | null>("SELECT MAX(seq) FROM queued_messages WHERE session_id = ?")
        .pluck(),
      minSeq: db
        .prepare<[string], number>("SELECT MIN(seq) FROM queued_messages WHERE session_id = ?")
        .pluck(),
      insert: db.prepare(
        `INSERT INTO queued_messages (id, session_id, sender_id, text, source_json, seq, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ),
      ofSession: db.prepare<[string], QueueRow>(
        "SELECT * FROM queued_messages WHERE session_id = ? ORDER BY seq",
      ),
      next: db.prepare<[string], QueueRow>(
        "SELECT * FROM queued_messages WHERE session_id = ? ORDER BY seq LIMIT 1",
      ),
      get: db.prepare<[string], QueueRow>("SELECT * FROM queued_messages WHERE id = ?"),
      sessionOf: db.prepare<[string], string>("SELECT session_id FROM queued_messages WHERE id = ?").pluck(),
      position: db
        .prepare<[string], number>(
          `SELECT (SELECT COUNT(*) FROM queued_messages q2 WHERE q2.session_id = q.session_id AND q2.seq <= q.seq)
           FROM queued_messages q WHERE q.id = ?`,
        )
        .pluck(),
      setSeq: db.prepare("UPDATE queued_messages SET seq = ? WHERE id = ?"),
      remove: db.prepare("DELETE FROM queued_messages WHERE id = ?"),
      sessions: db.prepare<[], string>("SELECT DISTINCT session_id FROM queued_messages").pluck(),
      // Snapshots and the queue cap read these on every subscribe and message: never the whole texts.
      preview: db.prepare<[number, string, number], QueuePreviewRow>(
        `SELECT id, sender_id, substr(text, 1, ?) AS text, created_at FROM queued_messages
         WHERE session_id = ? ORDER BY seq LIMIT ?`,
      ),
      count: db
        .prepare<[string], number>("SELECT COUNT(*) FROM queued_messages WHERE session_id = ?")
        .pluck(),
      hasFrom: db
        .prepare<[string, string], number>(
          "SELECT 1 FROM queued_messages WHERE session_id = ? AND sender_id = ? LIMIT 1",
        )
        .pluck(),
    },
  };
}
