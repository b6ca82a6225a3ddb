import { z } from "zod";
import type { HistoryMessage } from "../domain/types.ts";
import type { Db } from "./db.ts";
import type { Store } from "./repos.ts";

/**
 * Pending turns (issue 16): an assistant turn that waits on `ask_user_questions` is saved beside the history,
 * never inside it, so a model is never sent a call without its result (resume seed D6), yet a restart can
 * resume the run at the waiting call. Each call's result is recorded as it returns; the finished turn moves
 * into the history and its pending row goes, in one transaction.
 */

export interface PendingTurnCall {
  /** The call's id in history (and the ask row's tool_call_id). */
  id: string;
  /** The card step that shows the call, reused when the turn resumes. */
  stepId: string;
  name: string;
  /** The arguments as the call gave them (JSON text; a model's raw text when it was not JSON). */
  arguments: string;
  title?: string | undefined;
  /** Present once the call returned: it is not run again. */
  result?: string | undefined;
  summary?: string | undefined;
}

export interface PendingTurn {
  turnId: string;
  runId: string;
  sessionId: string;
  text: string;
  calls: PendingTurnCall[];
  createdAt: number;
}

const callsSchema = z.array(
  z.object({
    id: z.string(),
    stepId: z.string(),
    name: z.string(),
    arguments: z.string(),
    title: z.string().optional(),
    result: z.string().optional(),
    summary: z.string().optional(),
  }),
);

const rowSchema = z.object({
  turn_id: z.string(),
  run_id: z.string(),
  session_id: z.string(),
  text: z.string(),
  calls: z.string(),
  created_at: z.number(),
});

export class TurnStore {
  readonly #sql;
  readonly #finish: (turnId: string, sessionId: string, messages: HistoryMessage[]) => void;

  constructor(db: Db, store: Store) {
    this.#sql = {
      insert: db.prepare(
        "INSERT INTO pending_turns (turn_id, run_id, session_id, text, calls, created_at) VALUES (?, ?, ?, ?, ?, ?)",
      ),
      update: db.prepare("UPDATE pending_turns SET calls = ? WHERE turn_id = ?"),
      remove: db.prepare("DELETE FROM pending_turns WHERE turn_id = ?"),
      removeRun: db.prepare("DELETE FROM pending_turns WHERE run_id = ?"),
      ofRun: db.prepare<[string], unknown>(
        "SELECT * FROM pending_turns WHERE run_id = ? ORDER BY created_at, rowid",
      ),
    };
    this.#finish = db.transaction((turnId: string, sessionId: string, messages: HistoryMessage[]) => {
      store.appendMessages(sessionId, messages);
      this.#sql.remove.run(turnId);
    });
  }

  save(turn: PendingTurn): void {
    this.#sql.insert.run(
      turn.turnId,
      turn.runId,
      turn.sessionId,
      turn.text,
      JSON.stringify(turn.calls),
      turn.createdAt,
    );
  }

  /** Records the calls' results so far (a returned call is not run again after a restart). */
  update(turn: PendingTurn): void {
    this.#sql.update.run(JSON.stringify(turn.calls), turn.turnId);
  }

  /** The finished turn goes into the history and leaves the pending turns, atomically. */
  finish(turn: PendingTurn, messages: HistoryMessage[]): void {
    this.#finish(turn.turnId, turn.sessionId, messages);
  }

  /** A run that ended (not one a shutdown stopped) leaves no pending turn behind. */
  dropRun(runId: string): void {
    this.#sql.removeRun.run(runId);
  }

  ofRun(runId: string): PendingTurn[] {
    return this.#sql.ofRun.all(runId).map((raw) => {
      const row = rowSchema.parse(raw);
      return {
        turnId: row.turn_id,
        runId: row.run_id,
        sessionId: row.session_id,
        text: row.text,
        calls: callsSchema.parse(JSON.parse(row.calls)),
        createdAt: row.created_at,
      };
    });
  }
}
