import type { HistoryMessage, QueuedMessage, RunStatus, RunView, SessionInfo } from "../domain/types.ts";
import type { Db } from "./db.ts";
import { prepareStatements } from "./repo-statements.ts";
import { parseSource, queuedFromRow, runFromRow, toolCallsSchema } from "./run-rows.ts";

/**
 * Repositories over the SQLite file: the bot's sessions, runs, messages and queue. The statements are in
 * repo-statements.ts, the rows and how they are read back in run-rows.ts.
 */

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
