import { z } from "zod";
import type { AskOutcome } from "../asks/pending.ts";
import { answerSchema } from "../asks/schema.ts";
import { type AgentTasksTable, insertionOrder, run, type StoreSql } from "../store/sql.ts";

/**
 * Outside agents' tasks and asks in the store, so a bot restart loses neither: report_progress and finish_task
 * reach the same card afterwards, and get_answers still returns an answer given before the restart. The rows
 * run on either dialect (store/sql.ts): the tables come from src/store/migrations.ts on the SQLite file and
 * from src/store/pg-schema.ts on Postgres.
 */

export interface StoredTask {
  id: string;
  agent: string;
  tokenId?: string;
  to: string;
  chatType: "private" | "group";
  implicit: boolean;
  run: unknown;
}

const stepSchema = z.object({
  id: z.string(),
  tool: z.string(),
  title: z.string(),
  status: z.enum(["running", "done", "failed"]),
  summary: z.string().optional(),
  startedAt: z.number(),
  endedAt: z.number().optional(),
  agent: z.string().optional(),
});

/** What a stored run must be to be shown again; anything else is skipped, not trusted. */
export const storedRunSchema = z.object({
  id: z.string(),
  sessionId: z.string(),
  senderId: z.string(),
  input: z.string(),
  status: z.enum(["running", "recovering", "completed", "failed", "cancelled"]),
  steps: z.array(stepSchema),
  text: z.string().optional(),
  error: z.string().optional(),
  startedAt: z.number(),
  endedAt: z.number().optional(),
});

const outcomeSchema = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("answered"),
    answers: z.array(answerSchema),
    surface: z.string(),
    userId: z.string(),
  }),
  z.object({ kind: z.literal("timeout") }),
  z.object({ kind: z.literal("declined"), surface: z.string(), userId: z.string() }),
  z.object({ kind: z.literal("cancelled"), reason: z.string() }),
]);

type TaskRow = AgentTasksTable;

export interface StoredAsk {
  agent: string;
  tokenId?: string;
  taskId: string;
  answererId: string;
  createdAt: number;
  expiresAt: number;
  outcome?: AskOutcome;
  settledAt?: number;
}

/** The agents' tasks and asks on either dialect (store/sql.ts): each method is one statement. */
export class AgentStore {
  readonly #store: StoreSql;

  constructor(store: StoreSql) {
    this.#store = store;
  }

  /** A new task, or its latest state: only the run, its status and the time change once it exists. */
  async saveTask(task: StoredTask & { status: string }, now: number): Promise<void> {
    const { db } = this.#store;
    const row = {
      id: task.id,
      agent: task.agent,
      target: task.to,
      chat_type: task.chatType,
      implicit: task.implicit ? 1 : 0,
      run_json: JSON.stringify(task.run),
      status: task.status,
      updated_at: now,
      token_id: task.tokenId ?? null,
    };
    await run(this.#store, () =>
      db
        .insertInto("agent_tasks")
        .values(row)
        .onConflict((conflict) =>
          conflict.column("id").doUpdateSet({
            run_json: row.run_json,
            status: row.status,
            updated_at: row.updated_at,
          }),
        )
        .execute(),
    );
  }

  /** Tasks still running when the process stopped, least recently written first. */
  async runningTasks(): Promise<StoredTask[]> {
    const { db } = this.#store;
    const rows = await run(this.#store, () =>
      db
        .selectFrom("agent_tasks")
        .selectAll()
        .where("status", "=", "running")
        .orderBy("updated_at")
        .orderBy(insertionOrder(this.#store))
        .execute(),
    );
    return rows.map(toTask);
  }

  /**
   * The `limit` tasks that ended most recently, written at `sinceMs` or later, newest first: an ended task's
   * card may still owe its final state after a restart (the card side reads the run through the feed).
   */
  async endedTasks(sinceMs: number, limit: number): Promise<StoredTask[]> {
    const { db } = this.#store;
    const rows = await run(this.#store, () =>
      db
        .selectFrom("agent_tasks")
        .selectAll()
        .where("status", "!=", "running")
        .where("updated_at", ">=", sinceMs)
        .orderBy("updated_at", "desc")
        .orderBy(insertionOrder(this.#store), "desc")
        .limit(limit)
        .execute(),
    );
    return rows.map(toTask);
  }

  /** One task as last written, whatever its status (an ended task's card may still owe its final state). */
  async task(id: string): Promise<StoredTask | undefined> {
    const { db } = this.#store;
    const row = await run(this.#store, () =>
      db.selectFrom("agent_tasks").selectAll().where("id", "=", id).executeTakeFirst(),
    );
    return row ? toTask(row) : undefined;
  }

  /** Records an ask once: a second save of the same id changes nothing. */
  async saveAsk(ask: {
    askId: string;
    agent: string;
    tokenId?: string | undefined;
    taskId: string;
    answererId: string;
    createdAt: number;
    expiresAt: number;
  }): Promise<void> {
    const { db } = this.#store;
    await run(this.#store, () =>
      db
        .insertInto("agent_asks")
        .values({
          ask_id: ask.askId,
          agent: ask.agent,
          task_id: ask.taskId,
          answerer_id: ask.answererId,
          created_at: ask.createdAt,
          expires_at: ask.expiresAt,
          token_id: ask.tokenId ?? null,
        })
        .onConflict((conflict) => conflict.column("ask_id").doNothing())
        .execute(),
    );
  }

  /** The first outcome sticks (compare-and-set on an unsettled row): true only for the writer that set it. */
  async settleAsk(askId: string, outcome: AskOutcome, now: number): Promise<boolean> {
    const { db } = this.#store;
    const result = await run(this.#store, () =>
      db
        .updateTable("agent_asks")
        .set({ outcome_json: JSON.stringify(outcome), settled_at: now })
        .where("ask_id", "=", askId)
        .where("outcome_json", "is", null)
        .executeTakeFirst(),
    );
    return result.numUpdatedRows === 1n;
  }

  async ask(askId: string): Promise<StoredAsk | undefined> {
    const { db } = this.#store;
    const row = await run(this.#store, () =>
      db.selectFrom("agent_asks").selectAll().where("ask_id", "=", askId).executeTakeFirst(),
    );
    if (!row) return undefined;
    const outcome =
      row.outcome_json === null ? undefined : outcomeSchema.safeParse(safeJson(row.outcome_json));
    return {
      agent: row.agent,
      ...(row.token_id !== null ? { tokenId: row.token_id } : {}),
      taskId: row.task_id,
      answererId: row.answerer_id,
      createdAt: row.created_at,
      expiresAt: row.expires_at,
      ...(outcome?.success ? { outcome: outcome.data } : {}),
      ...(row.settled_at !== null ? { settledAt: row.settled_at } : {}),
    };
  }
}

function toTask(row: TaskRow): StoredTask {
  return {
    id: row.id,
    agent: row.agent,
    ...(row.token_id !== null ? { tokenId: row.token_id } : {}),
    to: row.target,
    chatType: row.chat_type === "group" ? "group" : "private",
    implicit: row.implicit === 1,
    run: safeJson(row.run_json),
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    return { unreadable: error instanceof Error ? error.message : "json" };
  }
}
