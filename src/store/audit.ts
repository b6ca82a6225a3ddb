import type { Statement } from "better-sqlite3";
import type { Db } from "./db.ts";

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
 * The audit is a view of the ask rows (store/asks.ts, migration 5): asked (with the surfaces that could
 * reach the person), then how it ended. No second source of truth to keep in step.
 */

interface AuditDbRow {
  request_id: string;
  session_id: string;
  run_id: string;
  answerer_id: string;
  questions: number;
  surfaces: string;
  asked_at: number;
  outcome: AuditRow["outcome"];
  answered_by: string | null;
  answered_via: string | null;
  settled_at: number | null;
}

/** The statement of auditForSession, prepared once per connection. */
const bySession = new WeakMap<Db, Statement<[string], AuditDbRow>>();

export function auditForSession(db: Db, sessionId: string): AuditRow[] {
  let statement = bySession.get(db);
  if (!statement) {
    statement = db.prepare<[string], AuditDbRow>(
      "SELECT * FROM ask_audit WHERE session_id = ? ORDER BY asked_at, seq",
    );
    bySession.set(db, statement);
  }
  const rows = statement.all(sessionId);
  return rows.map((row) => ({
    requestId: row.request_id,
    sessionId: row.session_id,
    runId: row.run_id,
    answererId: row.answerer_id,
    questions: row.questions,
    surfaces: JSON.parse(row.surfaces) as string[],
    askedAt: row.asked_at,
    outcome: row.outcome,
    answeredBy: row.answered_by,
    answeredVia: row.answered_via,
    settledAt: row.settled_at,
  }));
}
