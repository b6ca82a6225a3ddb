import { StaleFenceError } from "../cluster/errors.ts";
import type { RunView } from "../domain/types.ts";
import type { Logger } from "../logger.ts";
import type { Store } from "../store/repos.ts";
import type { TurnStore } from "../store/turns.ts";
import { RetriedWrites } from "../store/write-retry.ts";
import type { RunOwnership } from "./run-ownership.ts";

/**
 * A run's writes that must not stop it (runner.ts): its state at each change, and what an ended run leaves
 * behind. A write the database refuses (locked by another process, disk full, Postgres away) neither blocks
 * nor throws into the run: the state is kept in `unsaved` (reads prefer it, run-reads.ts) and retried, in
 * order, until it lands. A write the fence refuses (this instance lost the run: run-leases.ts) is dropped, and
 * the run stops here. The run itself fails, visibly, at its next write that cannot wait (a turn, the answer).
 */
export class RunStateWrites {
  /** Everything the runner writes off its path, in one order (a run's last state before its lease goes). */
  readonly queue: RetriedWrites;
  readonly #deps: StateWriteDeps;
  /** The latest state handed to the writes, per run: a run is dropped from `unsaved` once that one landed. */
  readonly #stamps = new Map<string, number>();

  constructor(deps: StateWriteDeps) {
    this.#deps = deps;
    this.queue = new RetriedWrites(deps.logger);
  }

  /** Writes the run as it is when the write runs (a later change has a later stamp and its own write). */
  save(run: RunView): void {
    const { unsaved, owner, store } = this.#deps;
    unsaved.set(run.id, run);
    const stamp = (this.#stamps.get(run.id) ?? 0) + 1;
    this.#stamps.set(run.id, stamp);
    void this.queue.write(`run:${run.id}`, "run state", async () => {
      try {
        await owner.guarded(store, run.id, (held) => held.saveRun(run));
      } catch (error) {
        if (!(error instanceof StaleFenceError)) throw error;
        // A paused instance's run, adopted meanwhile: its writes are refused and it stops here.
        this.#stamps.delete(run.id);
        unsaved.delete(run.id);
        this.#deps.lost(run.id);
        return;
      }
      if (this.#stamps.get(run.id) !== stamp) return;
      this.#stamps.delete(run.id);
      unsaved.delete(run.id);
    });
  }

  /** After the ended run's last state (queued before this): its pending turns go, then its lease. */
  ended(run: RunView): void {
    void this.queue.write(`cleanup:${run.id}`, "run clean-up", async () => {
      await this.#deps.turns?.dropRun(run.id);
    });
    void this.queue.write(`ended:${run.id}`, "run's lease", () => this.#deps.owner.ended(run.id));
  }
}

export interface StateWriteDeps {
  store: Store;
  turns: TurnStore | undefined;
  owner: RunOwnership;
  /** The runner's runs whose latest state is not written yet (run-reads.ts LiveRuns). */
  unsaved: Map<string, RunView>;
  logger: Logger;
  /** The fence refused a write of this run: it stops here. */
  lost: (runId: string) => void;
}
