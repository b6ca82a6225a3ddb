import { z } from "zod";
import { type AskAnswer, type AskQuestion, answerSchema, questionSchema } from "../asks/schema.ts";
import type { Db } from "./db.ts";

/**
 * The ask rows (issue 16). Every status change is a compare-and-set on `status = 'pending'`, so whichever
 * surface or process writes first wins and every later writer learns it lost (`changes === 0`).
 * Rows are parsed back with zod: a row edited by hand is an error with a message.
 */

export type AskStatus = "pending" | "answered" | "timeout" | "cancelled" | "superseded" | "declined";

export interface AskRow {
  requestId: string;
  sessionId: string;
  runId: string;
  toolCallId: string | undefined;
  answererId: string;
  questions: AskQuestion[];
  metadata: Record<string, unknown> | undefined;
  surfaces: string[];
  createdAt: number;
  expiresAt: number;
  /** How much 延长 has added so far (bounded by ASK_EXTEND_MAX_MS). */
  extendedMs: number;
  /** Who asked can read a 拒绝回答 (an outside agent): the card and the page offer it. */
  declinable: boolean;
  status: AskStatus;
  answers: AskAnswer[] | undefined;
  reason: string | undefined;
  answeredVia: string | undefined;
  answeredBy: string | undefined;
  settledAt: number | undefined;
}

export interface AskSettle {
  status: Exclude<AskStatus, "pending">;
  answers?: AskAnswer[];
  reason?: string;
  via?: string;
  by?: string;
  at: number;
}

const dbRowSchema = z.object({
  request_id: z.string(),
  session_id: z.string(),
  run_id: z.string(),
  tool_call_id: z.string().nullable(),
  answerer_id: z.string(),
  questions: z.string(),
  metadata: z.string().nullable(),
  surfaces: z.string(),
  created_at: z.number(),
  expires_at: z.number(),
  extended_ms: z.number(),
  status: z.enum(["pending", "answered", "timeout", "cancelled", "superseded", "declined"]),
  answer: z.string().nullable(),
  reason: z.string().nullable(),
  answered_via: z.string().nullable(),
  answered_by: z.string().nullable(),
  settled_at: z.number().nullable(),
  declinable: z.number(),
});

const questionsSchema = z.array(questionSchema);
const answersSchema = z.array(answerSchema);
const metadataSchema = z.record(z.string(), z.unknown());
const surfacesSchema = z.array(z.string());

function prepare(db: Db) {
  return {
    insert: db.prepare(
      `INSERT INTO asks (request_id, session_id, run_id, tool_call_id, answerer_id, questions, question_count,
                         metadata, surfaces, created_at, expires_at, declinable)
       VALUES (@requestId, @sessionId, @runId, @toolCallId, @answererId, @questions, @questionCount,
               @metadata, @surfaces, @createdAt, @expiresAt, @declinable)`,
    ),
    settle: db.prepare(
      `UPDATE asks SET status = @status, answer = @answer, reason = @reason, answered_via = @via,
                       answered_by = @by, settled_at = @at
       WHERE request_id = @requestId AND status = 'pending'`,
    ),
    extend: db.prepare(
      `UPDATE asks SET expires_at = expires_at + @byMs, extended_ms = extended_ms + @byMs
       WHERE request_id = @requestId AND status = 'pending' AND extended_ms + @byMs <= @maxMs`,
    ),
    get: db.prepare<[string], unknown>("SELECT * FROM asks WHERE request_id = ?"),
    byToolCall: db.prepare<[string, string], unknown>(
      "SELECT * FROM asks WHERE run_id = ? AND tool_call_id = ? ORDER BY created_at DESC LIMIT 1",
    ),
    pending: db.prepare<[], unknown>("SELECT * FROM asks WHERE status = 'pending' ORDER BY created_at"),
    latestOfRun: db.prepare<[string], unknown>(
      "SELECT * FROM asks WHERE run_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1",
    ),
  };
}

export class AskStore {
  readonly #sql: ReturnType<typeof prepare>;

  constructor(db: Db) {
    this.#sql = prepare(db);
  }

  insert(row: {
    requestId: string;
    sessionId: string;
    runId: string;
    toolCallId?: string | undefined;
    answererId: string;
    questions: AskQuestion[];
    metadata?: Record<string, unknown> | undefined;
    surfaces: string[];
    createdAt: number;
    expiresAt: number;
    declinable?: boolean | undefined;
  }): void {
    this.#sql.insert.run({
      ...row,
      declinable: row.declinable ? 1 : 0,
      toolCallId: row.toolCallId ?? null,
      questions: JSON.stringify(row.questions),
      questionCount: row.questions.length,
      metadata: row.metadata ? JSON.stringify(row.metadata) : null,
      surfaces: JSON.stringify(row.surfaces),
    });
  }

  /** The compare-and-set: true only for the writer that moved the row out of `pending`. */
  settle(requestId: string, settle: AskSettle): boolean {
    const changes = this.#sql.settle.run({
      requestId,
      status: settle.status,
      answer: settle.answers ? JSON.stringify(settle.answers) : null,
      reason: settle.reason ?? null,
      via: settle.via ?? null,
      by: settle.by ?? null,
      at: settle.at,
    }).changes;
    return changes === 1;
  }

  /** Moves a pending ask's deadline by `byMs` unless that would pass `maxMs` added in total. */
  extend(requestId: string, byMs: number, maxMs: number): boolean {
    return this.#sql.extend.run({ requestId, byMs, maxMs }).changes === 1;
  }

  get(requestId: string): AskRow | undefined {
    return toRow(this.#sql.get.get(requestId));
  }

  byToolCall(runId: string, toolCallId: string): AskRow | undefined {
    return toRow(this.#sql.byToolCall.get(runId, toolCallId));
  }

  /** The run's most recent ask, whatever its status (the card's one-line reason after a settle). */
  latestOfRun(runId: string): AskRow | undefined {
    return toRow(this.#sql.latestOfRun.get(runId));
  }

  pending(): AskRow[] {
    return this.#sql.pending.all().flatMap((raw) => toRow(raw) ?? []);
  }
}

function toRow(raw: unknown): AskRow | undefined {
  if (raw === undefined) return undefined;
  const row = dbRowSchema.parse(raw);
  return {
    requestId: row.request_id,
    sessionId: row.session_id,
    runId: row.run_id,
    toolCallId: row.tool_call_id ?? undefined,
    answererId: row.answerer_id,
    questions: questionsSchema.parse(JSON.parse(row.questions)),
    metadata: row.metadata === null ? undefined : metadataSchema.parse(JSON.parse(row.metadata)),
    surfaces: surfacesSchema.parse(JSON.parse(row.surfaces)),
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    extendedMs: row.extended_ms,
    declinable: row.declinable === 1,
    status: row.status,
    answers: row.answer === null ? undefined : answersSchema.parse(JSON.parse(row.answer)),
    reason: row.reason ?? undefined,
    answeredVia: row.answered_via ?? undefined,
    answeredBy: row.answered_by ?? undefined,
    settledAt: row.settled_at ?? undefined,
  };
}
