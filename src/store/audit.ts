import { z } from "zod";
import { run, type StoreSql } from "./sql.ts";

export interface AuditRow {
  requestId: string;
  sessionId: string;
  runId: string;
  answererId: string;
  questions: number;
  surfaces: string[];
  askedAt: number;
  outcome: "answered" | "timeout" | "cancelled" | "superseded" | "declined" | null;
  answeredBy: string | null;
  answeredVia: string | null;
  settledAt: number | null;
}

/**
 * The audit is a view of the ask rows (store/asks.ts; `ask_audit`, a view on either dialect): asked (with the
 * surfaces that could reach the person), then how it ended. No second source of truth to keep in step. Rows
 * are parsed with zod, as the ask rows are: a row edited by hand is an error with a message.
 */

const outcomeSchema = z.enum(["answered", "timeout", "cancelled", "superseded", "declined"]).nullable();
const surfacesSchema = z.array(z.string());

/** Every ask of `sessionId`, in the order asked (ties on the clock in the order inserted). */
export async function auditForSession(store: StoreSql, sessionId: string): Promise<AuditRow[]> {
  const { db } = store;
  const rows = await run(store, () =>
    db
      .selectFrom("ask_audit")
      .selectAll()
      .where("session_id", "=", sessionId)
      .orderBy("asked_at")
      .orderBy("seq")
      .execute(),
  );
  return rows.map((row) => ({
    requestId: row.request_id,
    sessionId: row.session_id,
    runId: row.run_id,
    answererId: row.answerer_id,
    questions: row.questions,
    surfaces: surfacesSchema.parse(JSON.parse(row.surfaces)),
    askedAt: row.asked_at,
    outcome: outcomeSchema.parse(row.outcome),
    answeredBy: row.answered_by,
    answeredVia: row.answered_via,
    settledAt: row.settled_at,
  }));
}
