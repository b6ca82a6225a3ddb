import type { AskRow, AskSettle } from "../store/asks.ts";
import type { AskOutcome, AskState, PendingAsk } from "./pending.ts";

/** Between the registry's values and the ask rows (store/asks.ts): one place that maps status to outcome. */

export function settleOf(outcome: AskOutcome, at: number): AskSettle {
  switch (outcome.kind) {
    case "answered":
      return { status: "answered", answers: outcome.answers, via: outcome.surface, by: outcome.userId, at };
    case "timeout":
      return { status: "timeout", at };
    case "declined":
      return { status: "declined", via: outcome.surface, by: outcome.userId, at };
    case "cancelled":
      return { status: outcome.superseded ? "superseded" : "cancelled", reason: outcome.reason, at };
  }
}

export function pendingFromRow(row: AskRow): PendingAsk {
  return {
    requestId: row.requestId,
    sessionId: row.sessionId,
    runId: row.runId,
    ...(row.toolCallId ? { toolCallId: row.toolCallId } : {}),
    answererId: row.answererId,
    questions: row.questions,
    metadata: row.metadata,
    surfaces: row.surfaces,
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    extendedMs: row.extendedMs,
    ...(row.declinable ? { declinable: true as const } : {}),
  };
}

export function stateFromRow(row: AskRow): AskState {
  return {
    ask: pendingFromRow(row),
    status: row.status,
    outcome: outcomeOf(row),
    ...(row.settledAt !== undefined ? { settledAt: row.settledAt } : {}),
  };
}

function outcomeOf(row: AskRow): AskOutcome | undefined {
  switch (row.status) {
    case "pending":
      return undefined;
    case "answered":
      return {
        kind: "answered",
        answers: row.answers ?? [],
        surface: row.answeredVia ?? "",
        userId: row.answeredBy ?? "",
      };
    case "timeout":
      return { kind: "timeout" };
    case "declined":
      return { kind: "declined", surface: row.answeredVia ?? "", userId: row.answeredBy ?? "" };
    case "cancelled":
      return { kind: "cancelled", reason: row.reason ?? "Session cancelled" };
    case "superseded":
      return { kind: "cancelled", reason: row.reason ?? "Session cancelled", superseded: true };
  }
}

/** How a settled row ended (a row that is missing or still pending: cancelled, as an unknown request). */
export function outcomeOfRow(row: AskRow | undefined): AskOutcome {
  return (row && stateFromRow(row).outcome) ?? { kind: "cancelled", reason: "Unknown request" };
}
