import type { CardPlacement } from "../domain/run-feed.ts";
import type { RunView, SessionInfo } from "../domain/types.ts";
import type { Store } from "../store/repos.ts";
import type { PendingTurn, TurnStore } from "../store/turns.ts";
import type { KeyedLock } from "../util/keyed-lock.ts";
import { placementOf } from "./run-reads.ts";

/**
 * The runs a crash (or a stop) left unfinished, resumed on start (runner.ts recover): each under its session's
 * lock, as a message is taken in, so a session never has two runs; a session already busy here keeps its run.
 */
export interface RecoveryDeps {
  store: Store;
  turns: TurnStore | undefined;
  sessions: KeyedLock;
  /** Sessions waiting for their interrupted run: each leaves it as its run is resumed (or found busy). */
  resuming: Set<string>;
  busy: (sessionId: string) => boolean;
  /** Starts the run again from its rows, at the turn it waited on. */
  resume: (
    session: SessionInfo,
    run: RunView,
    waiting: PendingTurn[],
    card: CardPlacement | undefined,
  ) => RunView;
}

export async function resumeInterrupted(deps: RecoveryDeps): Promise<RunView[]> {
  const { store, turns } = deps;
  const resumed: RunView[] = [];
  for (const run of await store.unfinishedRuns()) {
    await deps.sessions.run(run.sessionId, async () => {
      deps.resuming.delete(run.sessionId);
      const session = await store.getSession(run.sessionId);
      if (!session || deps.busy(session.id)) return;
      const waiting = (await turns?.ofRun(run.id)) ?? [];
      const card = placementOf(await store.runSource(run.id));
      if (deps.busy(session.id)) return;
      resumed.push(deps.resume(session, run, waiting, card));
    });
  }
  deps.resuming.clear();
  return resumed;
}
