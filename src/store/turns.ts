import { z } from "zod";
import type { HistoryMessage } from "../domain/types.ts";
import type { Store } from "./repos.ts";
import { insertionOrder, run, type StoreSql } from "./sql.ts";

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

export class TurnStore {
  readonly #store: StoreSql;
  readonly #messages: Store;

  /** `messages`: where a finished turn's messages go, on the same database. */
  constructor(store: StoreSql, messages: Store) {
    this.#store = store;
    this.#messages = messages;
  }

  #run<T>(statement: (db: StoreSql["db"]) => Promise<T>): Promise<T> {
    return run(this.#store, () => statement(this.#store.db));
  }

  async save(turn: PendingTurn): Promise<void> {
    await this.#run((db) =>
      db
        .insertInto("pending_turns")
        .values({
          turn_id: turn.turnId,
          run_id: turn.runId,
          session_id: turn.sessionId,
          text: turn.text,
          calls: JSON.stringify(turn.calls),
          created_at: turn.createdAt,
        })
        .execute(),
    );
  }

  /** Records the calls' results so far (a returned call is not run again after a restart). */
  async update(turn: PendingTurn): Promise<void> {
    await this.#run((db) =>
      db
        .updateTable("pending_turns")
        .set({ calls: JSON.stringify(turn.calls) })
        .where("turn_id", "=", turn.turnId)
        .execute(),
    );
  }

  /** The finished turn goes into the history and leaves the pending turns, atomically. */
  async finish(turn: PendingTurn, messages: HistoryMessage[]): Promise<void> {
    await this.#messages.transaction(async (store) => {
      await store.appendMessages(turn.sessionId, messages);
      await store.sql.db.deleteFrom("pending_turns").where("turn_id", "=", turn.turnId).execute();
    });
  }

  /** A run that ended (not one a shutdown stopped) leaves no pending turn behind. */
  async dropRun(runId: string): Promise<void> {
    await this.#run((db) => db.deleteFrom("pending_turns").where("run_id", "=", runId).execute());
  }

  async ofRun(runId: string): Promise<PendingTurn[]> {
    const rows = await this.#run((db) =>
      db
        .selectFrom("pending_turns")
        .selectAll()
        .where("run_id", "=", runId)
        .orderBy("created_at")
        .orderBy(insertionOrder(this.#store))
        .execute(),
    );
    return rows.map((row) => ({
      turnId: row.turn_id,
      runId: row.run_id,
      sessionId: row.session_id,
      text: row.text,
      calls: callsSchema.parse(JSON.parse(row.calls)),
      createdAt: row.created_at,
    }));
  }
}
