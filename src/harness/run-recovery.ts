import type { CardPlacement } from "../domain/run-feed.ts";
import type { RunView, SessionInfo } from "../domain/types.ts";
import type { Logger } from "../logger.ts";
import type { Store } from "../store/repos.ts";
import type { PendingTurn, TurnStore } from "../store/turns.ts";
import { strings } from "../strings/index.ts";
import { every, type Repeating } from "../util/every.ts";
import type { KeyedLock } from "../util/keyed-lock.ts";
import type { RunOwnership } from "./run-ownership.ts";
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
  /** Holds the run's pending asks in this process's registry. */
  holdAsks: (runId: string) => Promise<void>;
  /** Which unfinished runs are this process's to resume (all of them, on one process). */
  ownership: RunOwnership;
  /** Starts the run again from its rows, at the turn it waited on. */
  resume: (
    session: SessionInfo,
    run: RunView,
    waiting: PendingTurn[],
    card: CardPlacement | undefined,
  ) => RunView;
  /** The run's agent lives on its host (an ACP agent): it cannot resume anywhere else. */
  pinned: (runId: string) => Promise<boolean>;
  /** Ends a resumed run with `reason`, before its agent starts (its asks end with the reason too). */
  abandon: (runId: string, reason: string) => void;
  /** Starts the session's next queued message unless a run of it is under way here. */
  drain: (sessionId: string) => void;
}

export async function resumeInterrupted(deps: RecoveryDeps): Promise<RunView[]> {
  const { store, turns } = deps;
  const resumed: RunView[] = [];
  for (const { run, home } of await deps.ownership.adopt(store)) {
    await deps.sessions.run(run.sessionId, async () => {
      deps.resuming.delete(run.sessionId);
      const session = await store.getSession(run.sessionId);
      const waiting = session && !deps.busy(session.id) ? ((await turns?.ofRun(run.id)) ?? []) : [];
      const card = placementOf(await store.runSource(run.id));
      // Its questions, asked by the instance that ran it before (on start they were restored already).
      await deps.holdAsks(run.id);
      // Busy here meanwhile: the session keeps the run it has, and this one is left for a later look.
      if (!session || deps.busy(session.id)) return void (await deps.ownership.released(run.id));
      // An ACP agent's process and workspace stayed on the host that ran it: its card says so, and it ends.
      const stranded = home === "elsewhere" && (await deps.pinned(run.id));
      resumed.push(deps.resume(session, run, waiting, card));
      if (stranded) deps.abandon(run.id, strings.acp.hostGone);
    });
  }
  deps.resuming.clear();
  // Queues whose run ended while nobody drained them (a crash between the two; an instance gone).
  for (const sessionId of await store.queue.sessions()) deps.drain(sessionId);
  return resumed;
}

/**
 * With several instances (an ownership that says how often): `recover` again every so often, so the runs and
 * queues of an instance that died are taken over (docs/several-instances.md). One process looks only on start.
 */
export function adoptEvery(
  ownership: RunOwnership,
  recover: () => Promise<unknown>,
  log: Logger,
): Repeating | undefined {
  const ms = ownership.adoptEveryMs;
  if (ms === undefined) return undefined;
  return every(ms, recover, (err) => log.warn({ err }, "no look for runs to adopt (retried)"));
}
