import { z } from "zod";
import type { AskOutcome } from "../asks/pending.ts";
import { answerSchema } from "../asks/schema.ts";
import type { Db } from "../store/db.ts";

/**
 * Outside agents' tasks and asks in SQLite, so a bot restart loses neither: report_progress and finish_task
 * reach the same card afterwards, and get_answers still returns an answer given before the restart.
 * The tables come from the numbered migrations in src/store/migrations.ts (MIGRATIONS), like every other table.
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

interface TaskRow {
  id: string;
  agent: string;
  token_id: string | null;
  target: string;
  chat_type: string;
  implicit: number;
  run_json: string;
}

interface AskRow {
  ask_id: string;
  agent: string;
  token_id: string | null;
  task_id: string;
  answerer_id: string;
  created_at: number;
  expires_at: number;
  outcome_json: string | null;
  settled_at: number | null;
}

export class AgentStore {
  readonly #sql;

  constructor(db: Db) {
    // Prepared once: report_progress writes a row per call.
    this.#sql = {
      saveTask: db.prepare(
        `INSERT INTO agent_tasks (id, agent, target, chat_type, implicit, run_json, status, updated_at, token_id)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT(id) DO UPDATE SET run_json = excluded.run_json, status = excluded.status,
           updated_at = excluded.updated_at`,
      ),
      runningTasks: db.prepare<[], TaskRow>(
        "SELECT * FROM agent_tasks WHERE status = 'running' ORDER BY updated_at",
      ),
      task: db.prepare<[string], TaskRow>("SELECT * FROM agent_tasks WHERE id = ?"),
      saveAsk: db.prepare(
        `INSERT OR IGNORE INTO agent_asks (ask_id, agent, task_id, answerer_id, created_at, expires_at, token_id)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ),
      settleAsk: db.prepare(
        "UPDATE agent_asks SET outcome_json = ?, settled_at = ? WHERE ask_id = ? AND outcome_json IS NULL",
      ),
      ask: db.prepare<[string], AskRow>("SELECT * FROM agent_asks WHERE ask_id = ?"),
    };
  }

  saveTask(task: StoredTask & { status: string }, now: number): void {
    this.#sql.saveTask.run(
      task.id,
      task.agent,
      task.to,
      task.chatType,
      task.implicit ? 1 : 0,
      JSON.stringify(task.run),
      task.status,
      now,
      task.tokenId ?? null,
    );
  }

  /** Tasks still running when the process stopped. */
  runningTasks(): StoredTask[] {
    return this.#sql.runningTasks.all().map(toTask);
  }

  /** One task as last written, whatever its status (an ended task's card may still owe its final state). */
  task(id: string): StoredTask | undefined {
    const row = this.#sql.task.get(id);
    return row ? toTask(row) : undefined;
  }

  saveAsk(ask: {
    askId: string;
    agent: string;
    tokenId?: string | undefined;
    taskId: string;
    answererId: string;
    createdAt: number;
    expiresAt: number;
  }): void {
    this.#sql.saveAsk.run(
      ask.askId,
      ask.agent,
      ask.taskId,
      ask.answererId,
      ask.createdAt,
      ask.expiresAt,
      ask.tokenId ?? null,
    );
  }

  settleAsk(askId: string, outcome: AskOutcome, now: number): void {
    this.#sql.settleAsk.run(JSON.stringify(outcome), now, askId);
  }

  ask(askId: string):
    | {
        agent: string;
        tokenId?: string;
        taskId: string;
        answererId: string;
        createdAt: number;
        expiresAt: number;
        outcome?: AskOutcome;
        settledAt?: number;
      }
    | undefined {
    const row = this.#sql.ask.get(askId);
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
