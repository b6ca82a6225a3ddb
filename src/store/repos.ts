import { z } from "zod";
import type {
  HistoryMessage,
  QueuedMessage,
  RunStatus,
  RunView,
  SessionInfo,
  Step,
} from "../domain/types.ts";
import { hasUsage, type RunUsage } from "../domain/usage.ts";
import type { Db } from "./db.ts";

/**
 * Repositories over the SQLite file. Rows are parsed back with zod where they hold JSON, so a row written
 * by an older version or edited by hand is an error with a message, not an undefined at a distance.
 */

/** One text by locale code (a step's or an error's words in every language). */
const wordsSchema = z.record(z.string(), z.string());

const stepsSchema = z.array(
  z.object({
    id: z.string(),
    tool: z.string(),
    title: z.string(),
    status: z.enum(["pending", "running", "done", "failed", "stopped"]),
    summary: z.string().optional(),
    words: z
      .object({
        title: wordsSchema.optional(),
        summary: wordsSchema.optional(),
      })
      .optional(),
    startedAt: z.number(),
    endedAt: z.number().optional(),
  }),
);

const toolCallsSchema = z.array(z.object({ id: z.string(), name: z.string(), arguments: z.string() }));

interface SessionRow {
  id: string;
  channel: SessionInfo["channel"];
  chat_type: SessionInfo["chatType"];
  chat_id: string | null;
  workspace: string;
  owner_id: string;
  title: string;
  topic_root_id: string | null;
  topic_group_id: string | null;
}

interface RunRow {
  id: string;
  session_id: string;
  sender_id: string;
  input: string;
  status: RunStatus;
  steps_json: string;
  final_text: string | null;
  error: string | null;
  error_words_json: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  cached_tokens: number | null;
  model: string | null;
  started_at: number;
  ended_at: number | null;
}

interface MessageRow {
  role: HistoryMessage["role"];
  content: string;
  run_id: string | null;
  tool_calls: string | null;
  tool_call_id: string | null;
  tool_name: string | null;
  summary: string | null;
}

interface QueuePreviewRow {
  id: string;
  sender_id: string;
  text: string;
  created_at: number;
}

interface QueueRow {
  id: string;
  session_id: string;
  sender_id: string;
  text: string;
  source_json: string | null;
  created_at: number;
}

/** Every statement of the store, prepared once per connection rather than on every call. */
function prepareStatements(db: Db) {
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

export class Store {
  readonly db: Db;
  readonly #now: () => number;
  readonly #sql: ReturnType<typeof prepareStatements>;
  readonly #appendMessages: (sessionId: string, messages: HistoryMessage[]) => void;
  readonly #dequeue: (sessionId: string) => QueuedMessage | undefined;

  constructor(db: Db, now: () => number) {
    this.db = db;
    this.#now = now;
    this.#sql = prepareStatements(db);
    // Transaction wrappers, like statements, are made once.
    this.#appendMessages = db.transaction((sessionId: string, messages: HistoryMessage[]) => {
      for (const message of messages) this.appendMessage(sessionId, message);
    });
    this.#dequeue = db.transaction((sessionId: string) => {
      const row = this.#sql.queue.next.get(sessionId);
      if (!row) return undefined;
      this.#sql.queue.remove.run(row.id);
      return queuedFromRow(row);
    });
  }

  /** Runs `fn` in one transaction (a savepoint when already inside one): all of its writes or none. */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  // sessions ------------------------------------------------------------------------------------------

  upsertSession(session: SessionInfo): void {
    const { topic, ...fields } = session;
    // A topic's chat is its group's: the row's chat_id, so only the root and the group's session are added.
    if (topic && topic.chatId !== session.chatId)
      throw new Error(
        `session ${session.id}: its topic is in ${topic.chatId}, not its chat ${session.chatId}`,
      );
    this.#sql.sessions.upsert.run({
      ...fields,
      chatId: session.chatId ?? null,
      topicRoot: topic?.rootMessageId ?? null,
      topicGroup: topic?.groupSessionId ?? null,
      now: this.#now(),
    });
  }

  getSession(id: string): SessionInfo | undefined {
    const row = this.#sql.sessions.get.get(id);
    if (!row) return undefined;
    return {
      id: row.id,
      channel: row.channel,
      chatType: row.chat_type,
      ...(row.chat_id ? { chatId: row.chat_id } : {}),
      workspace: row.workspace,
      ownerId: row.owner_id,
      title: row.title,
      ...(row.chat_id && row.topic_root_id && row.topic_group_id
        ? {
            topic: {
              chatId: row.chat_id,
              rootMessageId: row.topic_root_id,
              groupSessionId: row.topic_group_id,
            },
          }
        : {}),
    };
  }

  // runs ----------------------------------------------------------------------------------------------

  insertRun(run: RunView, source?: Record<string, unknown>): void {
    this.#sql.runs.insert.run({
      ...run,
      steps: JSON.stringify(run.steps),
      source: source ? JSON.stringify(source) : null,
    });
  }

  /** Where the run's message came from, as the channel gave it (undefined if it gave nothing). */
  runSource(id: string): Record<string, unknown> | undefined {
    const json = this.#sql.runs.source.get(id);
    return json ? parseSource(json) : undefined;
  }

  saveRun(run: RunView): void {
    this.#sql.runs.save.run({
      id: run.id,
      status: run.status,
      steps: JSON.stringify(run.steps),
      text: run.text ?? null,
      error: run.error ?? null,
      errorWords: run.errorWords ? JSON.stringify(run.errorWords) : null,
      inputTokens: run.usage?.inputTokens ?? null,
      outputTokens: run.usage?.outputTokens ?? null,
      cachedTokens: run.usage?.cachedTokens ?? null,
      model: run.usage?.model ?? null,
      endedAt: run.endedAt ?? null,
    });
  }

  getRun(id: string): RunView | undefined {
    const row = this.#sql.runs.get.get(id);
    return row ? runFromRow(row) : undefined;
  }

  latestRun(sessionId: string): RunView | undefined {
    const row = this.#sql.runs.latest.get(sessionId);
    return row ? runFromRow(row) : undefined;
  }

  /** A session's runs, newest first (the session page's history). */
  recentRuns(sessionId: string, limit: number): RunView[] {
    return this.#sql.runs.recent.all(sessionId, limit).map(runFromRow);
  }

  /** Runs a crash left unfinished. */
  unfinishedRuns(): RunView[] {
    return this.#sql.runs.unfinished.all().map(runFromRow);
  }

  // messages ------------------------------------------------------------------------------------------

  appendMessage(sessionId: string, message: HistoryMessage): void {
    this.#sql.messages.insert.run(
      sessionId,
      message.runId ?? null,
      message.role,
      message.content,
      message.toolCalls ? JSON.stringify(message.toolCalls) : null,
      message.toolCallId ?? null,
      message.toolName ?? null,
      message.summary ?? null,
      this.#now(),
    );
  }

  /** Appends several messages atomically: a tool call and its result land together or not at all. */
  appendMessages(sessionId: string, messages: HistoryMessage[]): void {
    this.#appendMessages(sessionId, messages);
  }

  history(sessionId: string, limit = 200): HistoryMessage[] {
    return this.#sql.messages.history.all(sessionId, limit).map((row) => ({
      role: row.role,
      content: row.content,
      ...(row.run_id ? { runId: row.run_id } : {}),
      ...(row.tool_calls ? { toolCalls: toolCallsSchema.parse(JSON.parse(row.tool_calls)) } : {}),
      ...(row.tool_call_id ? { toolCallId: row.tool_call_id } : {}),
      ...(row.tool_name ? { toolName: row.tool_name } : {}),
      ...(row.summary ? { summary: row.summary } : {}),
    }));
  }

  // queue ---------------------------------------------------------------------------------------------

  enqueue(message: QueuedMessage): number {
    const seq = this.#sql.queue.maxSeq.get(message.sessionId) ?? 0;
    this.#sql.queue.insert.run(
      message.id,
      message.sessionId,
      message.senderId,
      message.text,
      message.source ? JSON.stringify(message.source) : null,
      seq + 1,
      message.createdAt,
    );
    return this.queuePosition(message.id) ?? 1;
  }

  queued(sessionId: string): QueuedMessage[] {
    return this.#sql.queue.ofSession.all(sessionId).map(queuedFromRow);
  }

  /** The first `limit` queued messages of a session, their text cut to `chars` characters. */
  queuedPreview(
    sessionId: string,
    limit: number,
    chars: number,
  ): Pick<QueuedMessage, "id" | "senderId" | "text" | "createdAt">[] {
    return this.#sql.queue.preview.all(chars, sessionId, limit).map((row) => ({
      id: row.id,
      senderId: row.sender_id,
      text: row.text,
      createdAt: row.created_at,
    }));
  }

  queuedCount(sessionId: string): number {
    return this.#sql.queue.count.get(sessionId) ?? 0;
  }

  hasQueuedFrom(sessionId: string, senderId: string): boolean {
    return this.#sql.queue.hasFrom.get(sessionId, senderId) !== undefined;
  }

  getQueued(id: string): QueuedMessage | undefined {
    const row = this.#sql.queue.get.get(id);
    return row ? queuedFromRow(row) : undefined;
  }

  /** 1-based position in its session's queue. */
  queuePosition(id: string): number | undefined {
    return this.#sql.queue.position.get(id);
  }

  /** 插队: move a queued message to the front of its session's queue. */
  moveToFront(id: string): boolean {
    const sessionId = this.#sql.queue.sessionOf.get(id);
    if (sessionId === undefined) return false;
    const min = this.#sql.queue.minSeq.get(sessionId) as number;
    this.#sql.queue.setSeq.run(min - 1, id);
    return true;
  }

  removeQueued(id: string): boolean {
    return this.#sql.queue.remove.run(id).changes > 0;
  }

  /** Takes the next queued message of a session off the queue, atomically. */
  dequeue(sessionId: string): QueuedMessage | undefined {
    return this.#dequeue(sessionId);
  }

  sessionsWithQueue(): string[] {
    return this.#sql.queue.sessions.all();
  }

  // figures for /metrics (read at scrape time, not on the hot path) -------------------------------------

  /** How many runs are in each status, every status present. */
  runCounts(): Record<RunStatus, number> {
    const counts: Record<RunStatus, number> = {
      running: 0,
      recovering: 0,
      completed: 0,
      failed: 0,
      cancelled: 0,
      rejected: 0,
    };
    const rows = this.db
      .prepare<[], { status: string; n: number }>("SELECT status, COUNT(*) AS n FROM runs GROUP BY status")
      .all();
    const known = (status: string): status is RunStatus => Object.hasOwn(counts, status);
    for (const row of rows) if (known(row.status)) counts[row.status] = row.n;
    return counts;
  }

  /** Messages waiting in any chat's queue. */
  queuedTotal(): number {
    return this.db.prepare<[], number>("SELECT COUNT(*) FROM queued_messages").pluck().get() ?? 0;
  }
}

function runFromRow(row: RunRow): RunView {
  const steps: Step[] = stepsSchema.parse(JSON.parse(row.steps_json));
  return {
    id: row.id,
    sessionId: row.session_id,
    senderId: row.sender_id,
    input: row.input,
    status: row.status,
    steps,
    ...(row.final_text !== null ? { text: row.final_text } : {}),
    ...(row.error !== null ? { error: row.error } : {}),
    ...(row.error_words_json !== null
      ? { errorWords: wordsSchema.parse(JSON.parse(row.error_words_json)) }
      : {}),
    startedAt: row.started_at,
    ...(row.ended_at !== null ? { endedAt: row.ended_at } : {}),
    ...usageFromRow(row),
  };
}

/** The run's usage columns: NULL is unknown, so a run with none of them has no `usage`. */
function usageFromRow(row: RunRow): { usage?: RunUsage } {
  const usage: RunUsage = {};
  if (row.input_tokens !== null) usage.inputTokens = row.input_tokens;
  if (row.output_tokens !== null) usage.outputTokens = row.output_tokens;
  if (row.cached_tokens !== null) usage.cachedTokens = row.cached_tokens;
  if (row.model !== null) usage.model = row.model;
  return hasUsage(usage) ? { usage } : {};
}

function parseSource(json: string): Record<string, unknown> {
  return z.record(z.string(), z.unknown()).parse(JSON.parse(json));
}

function queuedFromRow(row: QueueRow): QueuedMessage {
  const source = row.source_json ? parseSource(row.source_json) : undefined;
  return {
    id: row.id,
    sessionId: row.session_id,
    senderId: row.sender_id,
    text: row.text,
    ...(source ? { source } : {}),
    createdAt: row.created_at,
  };
}
