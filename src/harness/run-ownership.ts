import type { RunWriters } from "../domain/ports.ts";
import type { RunView } from "../domain/types.ts";
import type { Store } from "../store/repos.ts";
import type { StoreSql } from "../store/sql.ts";

/**
 * Which process runs which run (issue 27, docs/several-instances.md). One process owns every run in its store:
 * `soleOwner`, what the SQLite file gets. Several instances on one Postgres each own the runs whose lease
 * `run:<id>` they hold (src/cluster/run-leases.ts): the holder runs the agent loop and is the run's only
 * writer, a run whose holder died is adopted by another instance through the restart path, and a session has
 * one unfinished run at a time across all of them.
 */
export interface RunOwnership extends RunWriters {
  /**
   * Inside a message's intake transaction, before a run is written: whether the session has an unfinished run
   * in the store that this process does not run (another instance's, or one waiting to be adopted). The
   * session's row stays locked until the transaction ends, so two instances cannot both find it free.
   */
  sessionBusy(tx: StoreSql, sessionId: string): Promise<boolean>;
  /** Inside the transaction that writes the run: this process holds it from the commit on. */
  claim(tx: StoreSql, runId: string): Promise<void>;
  /**
   * Writes of a run (its state, its answer) go through here: `body` runs only while this process still holds
   * the run, checked in the write's own transaction; a stale hold throws StaleFenceError and writes nothing.
   */
  guarded<T>(store: Store, runId: string, body: (store: Store) => Promise<T>): Promise<T>;
  /**
   * The unfinished runs this process may resume now, each held by it from here on: on one process every one
   * (after a restart, DESIGN §8); on several, those whose holder is gone (its lease expired, or was given up).
   */
  adopt(store: Store): Promise<Adopted[]>;
  /** Whether this process holds the run still, by its own clock (a lost run's end is not its to write). */
  holds(runId: string): boolean;
  /** The run ended here: nobody needs to hold it any more. */
  ended(runId: string): Promise<void>;
  /** The run stopped here without ending (a deploy): another process may adopt it at once. */
  released(runId: string): Promise<void>;
  /**
   * Several instances: hands a person's command for a run another instance runs (or will, once it adopts it)
   * to whichever holds it, which does it (`onCommand`). False when it cannot be sent.
   */
  forward?(command: RunCommand): Promise<boolean>;
  /** Hears the commands for the runs this process holds; the listener's false: not yet, ask again later. */
  onCommand?(listener: (command: RunCommand) => Promise<boolean>): void;
  /** How often to look for runs to adopt; undefined: only on start (one process has nobody to take over from). */
  readonly adoptEveryMs?: number;
  /** Stops renewing (what is still held lapses, and is adopted elsewhere, unless released first). */
  close(): Promise<void>;
}

/** What a person asked of a run another instance runs (the sender is checked before it is forwarded). */
export interface RunCommand {
  kind: "cancel" | "replace";
  runId: string;
  sessionId: string;
  userId: string;
}

/**
 * A run to resume, and whether it was last run from this DATA_DIR (a restart here) or from another instance's
 * (a takeover): a run whose agent lives on its host (an ACP agent) resumes only at home.
 */
export interface Adopted {
  run: RunView;
  home: "here" | "elsewhere";
}

/** One process, its own store: every run is its own, nothing is ever lost to another. */
export const soleOwner: RunOwnership = {
  sessionBusy: async () => false,
  claim: async () => {},
  guarded: (store, _runId, body) => body(store),
  adopt: async (store) => (await store.unfinishedRuns()).map((run) => ({ run, home: "here" })),
  holds: () => true,
  lapsed: () => false,
  ended: async () => {},
  released: async () => {},
  onLost: () => {},
  close: async () => {},
};
