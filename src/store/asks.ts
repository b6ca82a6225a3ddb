import { z } from "zod";
import { type AskAnswer, type AskQuestion, answerSchema, questionSchema } from "../asks/schema.ts";
import { type AskStatusColumn, insertionOrder, run, type StoreSql } from "./sql.ts";

/**
 * The ask rows (issue 16), on either dialect (sql.ts; issue 27: any instance may settle any ask from its row).
 * Every status change is a compare-and-set on `status = 'pending'`, so whichever surface, process or instance
 * writes first wins and every later writer learns it lost (no row updated).
 * Rows are parsed back with zod: a row edited by hand is an error with a message.
 */

export type AskStatus = AskStatusColumn;

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

export interface AskInsert {
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
}

/** The ask rows on either dialect (sql.ts): each method is one statement. */
export class AskStore {
  readonly #store: StoreSql;

  constructor(store: StoreSql) {
    this.#store = store;
  }

  async insert(row: AskInsert): Promise<void> {
    const { db } = this.#store;
    await run(this.#store, () =>
      db
        .insertInto("asks")
        .values({
          request_id: row.requestId,
          session_id: row.sessionId,
          run_id: row.runId,
          tool_call_id: row.toolCallId ?? null,
          answerer_id: row.answererId,
          questions: JSON.stringify(row.questions),
          question_count: row.questions.length,
          metadata: row.metadata ? JSON.stringify(row.metadata) : null,
          surfaces: JSON.stringify(row.surfaces),
          created_at: row.createdAt,
          expires_at: row.expiresAt,
          declinable: row.declinable ? 1 : 0,
        })
        .execute(),
    );
  }

  /** The compare-and-set: true only for the writer that moved the row out of `pending`. */
  async settle(requestId: string, settle: AskSettle): Promise<boolean> {
    const { db } = this.#store;
    const result = await run(this.#store, () =>
      db
        .updateTable("asks")
        .set({
          status: settle.status,
          answer: settle.answers ? JSON.stringify(settle.answers) : null,
          reason: settle.reason ?? null,
          answered_via: settle.via ?? null,
          answered_by: settle.by ?? null,
          settled_at: settle.at,
        })
        .where("request_id", "=", requestId)
        .where("status", "=", "pending")
        .executeTakeFirst(),
    );
    return result.numUpdatedRows === 1n;
  }

  /** Moves a pending ask's deadline by `byMs` unless that would pass `maxMs` added in total. */
  async extend(requestId: string, byMs: number, maxMs: number): Promise<boolean> {
    const { db } = this.#store;
    const result = await run(this.#store, () =>
      db
        .updateTable("asks")
        .set((eb) => ({
          expires_at: eb("expires_at", "+", byMs),
          extended_ms: eb("extended_ms", "+", byMs),
        }))
        .where("request_id", "=", requestId)
        .where("status", "=", "pending")
        .where((eb) => eb(eb("extended_ms", "+", byMs), "<=", maxMs))
        .executeTakeFirst(),
    );
    return result.numUpdatedRows === 1n;
  }

  async get(requestId: string): Promise<AskRow | undefined> {
    const { db } = this.#store;
    const raw = await run(this.#store, () =>
      db.selectFrom("asks").selectAll().where("request_id", "=", requestId).executeTakeFirst(),
    );
    return toRow(raw);
  }

  async byToolCall(runId: string, toolCallId: string): Promise<AskRow | undefined> {
    const { db } = this.#store;
    const raw = await run(this.#store, () =>
      db
        .selectFrom("asks")
        .selectAll()
        .where("run_id", "=", runId)
        .where("tool_call_id", "=", toolCallId)
        .orderBy("created_at", "desc")
        .orderBy(insertionOrder(this.#store), "desc")
        .limit(1)
        .executeTakeFirst(),
    );
    return toRow(raw);
  }

  /** The run's most recent ask, whatever its status (the card's one-line reason after a settle). */
  async latestOfRun(runId: string): Promise<AskRow | undefined> {
    const { db } = this.#store;
    const raw = await run(this.#store, () =>
      db
        .selectFrom("asks")
        .selectAll()
        .where("run_id", "=", runId)
        .orderBy("created_at", "desc")
        .orderBy(insertionOrder(this.#store), "desc")
        .limit(1)
        .executeTakeFirst(),
    );
    return toRow(raw);
  }

  /** Of `requestIds`, the rows no longer pending (a poll's one read for every ask an instance holds). */
  async settledAmong(requestIds: readonly string[]): Promise<AskRow[]> {
    const { db } = this.#store;
    const rows: AskRow[] = [];
    for (let at = 0; at < requestIds.length; at += 500) {
      const chunk = requestIds.slice(at, at + 500);
      const raw = await run(this.#store, () =>
        db
          .selectFrom("asks")
          .selectAll()
          .where("request_id", "in", chunk)
          .where("status", "!=", "pending")
          .execute(),
      );
      rows.push(...raw.flatMap((one) => toRow(one) ?? []));
    }
    return rows;
  }

  async pending(): Promise<AskRow[]> {
    const { db } = this.#store;
    const rows = await run(this.#store, () =>
      db
        .selectFrom("asks")
        .selectAll()
        .where("status", "=", "pending")
        .orderBy("created_at")
        .orderBy(insertionOrder(this.#store))
        .execute(),
    );
    return rows.flatMap((raw) => toRow(raw) ?? []);
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
