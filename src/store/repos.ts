import { sql } from "kysely";
import type { HistoryMessage, RunStatus, RunView, SessionInfo } from "../domain/types.ts";
import type { Db } from "./db.ts";
import { QueueRows } from "./queue-rows.ts";
import { parseSource, runFromRow, sessionFromRow, toolCallsSchema } from "./run-rows.ts";
import { insertionOrder, run, type StoreSql, transaction } from "./sql.ts";

/** A run not ended yet: under way, or resumed and not at its first step again. */
const UNFINISHED: RunStatus[] = ["running", "recovering"];

/**
 * Repositories of the bot's sessions, runs, messages and queue, on either dialect (sql.ts): the SQLite file
 * by default, Postgres for several instances. The rows and how they are read back are in run-rows.ts. Each
 * method is one statement, or a transaction of its own where it must be atomic; `transaction` gives a Store
 * whose every method writes inside one transaction (the runner's "claim, session, run or queue row").
 */

export class Store {
  readonly sql: StoreSql;
  /** The sessions' queues (queue-rows.ts). */
  readonly queue: QueueRows;
  readonly #now: () => number;
  readonly #file: Db | undefined;

  /** `file`: the SQLite handle under `sql`, for what still reads it directly (tests, repositories not moved). */
  constructor(store: StoreSql, now: () => number, file?: Db) {
    this.sql = store;
    this.queue = new QueueRows(store);
    this.#now = now;
    this.#file = file;
  }

  /** The SQLite handle (SQLite only). */
  get db(): Db {
    if (!this.#file) throw new Error("the store is on Postgres: there is no SQLite file");
    return this.#file;
  }

  /** Runs `body` in one transaction (joining the caller's when inside one): all of its writes or none. */
  transaction<T>(body: (store: Store) => Promise<T>): Promise<T> {
    return transaction(this.sql, (tx) => body(new Store(tx, this.#now, this.#file)));
  }

  #run<T>(statement: (db: StoreSql["db"]) => Promise<T>): Promise<T> {
    return run(this.sql, () => statement(this.sql.db));
  }

  // sessions ------------------------------------------------------------------------------------------

  async upsertSession(session: SessionInfo): Promise<void> {
    const { topic } = session;
    // A topic's chat is its group's: the row's chat_id, so only the root and the group's session are added.
    if (topic && topic.chatId !== session.chatId)
      throw new Error(
        `session ${session.id}: its topic is in ${topic.chatId}, not its chat ${session.chatId}`,
      );
    const now = this.#now();
    await this.#run((db) =>
      db
        .insertInto("sessions")
        .values({
          id: session.id,
          channel: session.channel,
          chat_type: session.chatType,
          chat_id: session.chatId ?? null,
          workspace: session.workspace,
          owner_id: session.ownerId,
          title: session.title,
          topic_root_id: topic?.rootMessageId ?? null,
          topic_group_id: topic?.groupSessionId ?? null,
          created_at: now,
          updated_at: now,
        })
        .onConflict((conflict) => conflict.column("id").doUpdateSet({ updated_at: now }))
        .execute(),
    );
  }

  async getSession(id: string): Promise<SessionInfo | undefined> {
    const row = await this.#run((db) =>
      db.selectFrom("sessions").selectAll().where("id", "=", id).executeTakeFirst(),
    );
    return row ? sessionFromRow(row) : undefined;
  }

  // runs ----------------------------------------------------------------------------------------------

  async insertRun(view: RunView, source?: Record<string, unknown>): Promise<void> {
    await this.#run((db) =>
      db
        .insertInto("runs")
        .values({
          id: view.id,
          session_id: view.sessionId,
          sender_id: view.senderId,
          input: view.input,
          status: view.status,
          steps_json: JSON.stringify(view.steps),
          started_at: view.startedAt,
          source_json: source ? JSON.stringify(source) : null,
        })
        .execute(),
    );
  }

  /** Where the run's message came from, as the channel gave it (undefined if it gave nothing). */
  async runSource(id: string): Promise<Record<string, unknown> | undefined> {
    const row = await this.#run((db) =>
      db.selectFrom("runs").select("source_json").where("id", "=", id).executeTakeFirst(),
    );
    return row?.source_json ? parseSource(row.source_json) : undefined;
  }

  async saveRun(view: RunView): Promise<void> {
    await this.#run((db) =>
      db
        .updateTable("runs")
        .set({
          status: view.status,
          steps_json: JSON.stringify(view.steps),
          final_text: view.text ?? null,
          error: view.error ?? null,
          error_words_json: view.errorWords ? JSON.stringify(view.errorWords) : null,
          input_tokens: view.usage?.inputTokens ?? null,
          output_tokens: view.usage?.outputTokens ?? null,
          cached_tokens: view.usage?.cachedTokens ?? null,
          model: view.usage?.model ?? null,
          ended_at: view.endedAt ?? null,
        })
        .where("id", "=", view.id)
        .execute(),
    );
  }

  async getRun(id: string): Promise<RunView | undefined> {
    const row = await this.#run((db) =>
      db.selectFrom("runs").selectAll().where("id", "=", id).executeTakeFirst(),
    );
    return row ? runFromRow(row) : undefined;
  }

  async latestRun(sessionId: string): Promise<RunView | undefined> {
    return (await this.recentRuns(sessionId, 1))[0];
  }

  /** A session's runs, newest first (the session page's history). */
  async recentRuns(sessionId: string, limit: number): Promise<RunView[]> {
    const rows = await this.#run((db) =>
      db
        .selectFrom("runs")
        .selectAll()
        .where("session_id", "=", sessionId)
        .orderBy("started_at", "desc")
        .orderBy(insertionOrder(this.sql), "desc")
        .limit(limit)
        .execute(),
    );
    return rows.map(runFromRow);
  }

  /** Runs a crash left unfinished. */
  async unfinishedRuns(): Promise<RunView[]> {
    const rows = await this.#run((db) =>
      db
        .selectFrom("runs")
        .selectAll()
        .where("status", "in", UNFINISHED)
        .orderBy("started_at")
        .orderBy(insertionOrder(this.sql))
        .execute(),
    );
    return rows.map(runFromRow);
  }

  /**
   * Whether the session has an unfinished run. Inside a transaction on Postgres the session's row is locked
   * first, until the transaction ends: two instances taking in messages of one session take turns (issue 27).
   */
  async hasUnfinishedRun(sessionId: string): Promise<boolean> {
    if (this.sql.inTransaction && this.sql.dialect === "postgres")
      await sql`SELECT 1 FROM sessions WHERE id = ${sessionId} FOR UPDATE`.execute(this.sql.db);
    const row = await this.#run((db) =>
      db
        .selectFrom("runs")
        .select("id")
        .where("session_id", "=", sessionId)
        .where("status", "in", UNFINISHED)
        .limit(1)
        .executeTakeFirst(),
    );
    return row !== undefined;
  }

  /**
   * Postgres, several instances (harness/run-leases.ts): the unfinished runs nobody holds, their lease
   * `run:<id>` in `cluster_leases` expired or given up (or missing), oldest first.
   */
  async unheldRuns(): Promise<string[]> {
    const rows = await this.#run(() =>
      sql<{ id: string }>`
        SELECT r.id FROM runs r
        LEFT JOIN cluster_leases l ON l.name = 'run:' || r.id
        WHERE r.status IN ('running', 'recovering') AND (l.name IS NULL OR l.expires_at <= now())
        ORDER BY r.started_at`.execute(this.sql.db),
    );
    return rows.rows.map((row) => row.id);
  }

  // messages ------------------------------------------------------------------------------------------

  /** Appends messages in order, atomically: a tool call and its result land together or not at all. */
  async appendMessages(sessionId: string, messages: HistoryMessage[]): Promise<void> {
    if (messages.length === 0) return;
    const now = this.#now();
    // One statement: its rows get ascending ids in the order given, on either dialect.
    await this.#run((db) =>
      db
        .insertInto("messages")
        .values(
          messages.map((message) => ({
            session_id: sessionId,
            run_id: message.runId ?? null,
            role: message.role,
            content: message.content,
            tool_calls: message.toolCalls ? JSON.stringify(message.toolCalls) : null,
            tool_call_id: message.toolCallId ?? null,
            tool_name: message.toolName ?? null,
            summary: message.summary ?? null,
            created_at: now,
          })),
        )
        .execute(),
    );
  }

  appendMessage(sessionId: string, message: HistoryMessage): Promise<void> {
    return this.appendMessages(sessionId, [message]);
  }

  /** The last `limit` messages of a session, oldest first. */
  async history(sessionId: string, limit = 200): Promise<HistoryMessage[]> {
    const rows = await this.#run((db) =>
      db
        .selectFrom((inner) =>
          inner
            .selectFrom("messages")
            .selectAll()
            .where("session_id", "=", sessionId)
            .orderBy("id", "desc")
            .limit(limit)
            .as("last"),
        )
        .selectAll()
        .orderBy("id")
        .execute(),
    );
    return rows.map((row) => ({
      role: row.role,
      content: row.content,
      ...(row.run_id ? { runId: row.run_id } : {}),
      ...(row.tool_calls ? { toolCalls: toolCallsSchema.parse(JSON.parse(row.tool_calls)) } : {}),
      ...(row.tool_call_id ? { toolCallId: row.tool_call_id } : {}),
      ...(row.tool_name ? { toolName: row.tool_name } : {}),
      ...(row.summary ? { summary: row.summary } : {}),
    }));
  }

  // figures for /metrics (read at scrape time, not on the hot path) -------------------------------------

  /** How many runs are in each status, every status present. */
  async runCounts(): Promise<Record<RunStatus, number>> {
    const counts: Record<RunStatus, number> = {
      running: 0,
      recovering: 0,
      completed: 0,
      failed: 0,
      cancelled: 0,
      rejected: 0,
    };
    const rows = await this.#run((db) =>
      db
        .selectFrom("runs")
        .select((eb) => ["status", eb.fn.countAll<number>().as("n")])
        .groupBy("status")
        .execute(),
    );
    const known = (status: string): status is RunStatus => Object.hasOwn(counts, status);
    for (const row of rows) if (known(row.status)) counts[row.status] = Number(row.n);
    return counts;
  }
}
