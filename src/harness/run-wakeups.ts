import type { Queryable } from "../cluster/pool.ts";
import { notify, type Wakeups } from "../cluster/wakeups.ts";
import type { JoinedFeed, RunFeed } from "../domain/run-feed.ts";
import { describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import type { Store } from "../store/repos.ts";
import { KeyedThrottle } from "../util/keyed-throttle.ts";
import { RemoteRuns } from "./remote-runs.ts";
import { RunLeases } from "./run-leases.ts";

/**
 * Runs across instances, as pages see them (issue 27, docs/several-instances.md): the instance running a run
 * announces each committed write of it as `run:<id>`, and each change of a session's queue as
 * `queue:<session id>` (ids only), at most once per run or queue per `announceEveryMs` and always once after
 * the last change (util/keyed-throttle.ts). Every other instance reads the row again (remote-runs.ts) and
 * tells its hub and session pages (core.shown), never its cards: a card has one writer, its run's instance.
 * Every poll and every reconnect of the wake-up connection reads all unfinished runs again, so a lost
 * wake-up costs one poll interval.
 */

/**
 * Run leases that say when a write of a run has committed: `guarded` resolves after its transaction, so an
 * instance that reads the row on the wake-up finds what was written, never an older state.
 */
export class AnnouncedRunLeases extends RunLeases {
  #written: (runId: string) => void = () => undefined;

  onWritten(listener: (runId: string) => void): void {
    this.#written = listener;
  }

  override async guarded<T>(store: Store, runId: string, body: (store: Store) => Promise<T>): Promise<T> {
    const result = await super.guarded(store, runId, body);
    this.#written(runId);
    return result;
  }
}

export interface RunFeeds {
  /** What this instance runs (core.runs): its changes are announced. */
  runs: RunFeed;
  /** What its hub and session pages show (core.shown): the others' runs join it. */
  shown: JoinedFeed;
  store: Store;
}

export interface RunWakeupDeps extends RunFeeds {
  leases: Pick<AnnouncedRunLeases, "onWritten" | "onLost">;
  wakeups: Wakeups;
  /** Where the announcements are sent from (the store's pool, not the listener's connection). */
  db: Queryable;
  channel: string;
  log: Logger;
  /** At most one wake-up per run, and per queue, this often (default 250 ms); the last change always. */
  announceEveryMs?: number;
}

export interface RunWakeups {
  remote: RemoteRuns;
  /** Stops listening, and sends the announcements still held back before it resolves. */
  close(): Promise<void>;
}

export function connectRunWakeups(deps: RunWakeupDeps): RunWakeups {
  const { wakeups, db, channel, log } = deps;
  let closed = false;
  const sending = new Set<Promise<void>>();
  const throttle = new KeyedThrottle(deps.announceEveryMs ?? 250, (key) => {
    const colon = key.indexOf(":");
    const [topic, id] = [key.slice(0, colon), key.slice(colon + 1)];
    // A wake-up that cannot be sent is made up for by the others' next poll.
    const sent = notify(db, channel, topic, id).catch((error: unknown) =>
      log.warn({ err: describeError(error), topic, id }, "run wake-up not sent; the next poll finds it"),
    );
    sending.add(sent);
    void sent.finally(() => sending.delete(sent));
  });
  const remote = new RemoteRuns({
    store: deps.store,
    onError: (error, what) => log.error({ err: describeError(error), event: what }, "run listener failed"),
  });
  deps.leases.onWritten((runId) => {
    if (!closed) throttle.touch(`run:${runId}`);
  });
  deps.leases.onLost((runId) => remote.lostRun(runId));
  const offs = [
    deps.runs.on("run_started", ({ run }) => remote.ownRun(run.id)),
    deps.runs.on("queue_changed", ({ sessionId, queued }) => {
      remote.ownQueue(sessionId, queued);
      if (!closed) throttle.touch(`queue:${sessionId}`);
    }),
    wakeups.subscribe("run", (wake) => (wake.reason === "notify" ? remote.refresh(wake.id) : remote.poll())),
    wakeups.subscribe("queue", (wake) =>
      wake.reason === "notify" ? remote.refreshQueue(wake.id) : undefined,
    ),
  ];
  deps.shown.add(remote);
  // Runs already under way elsewhere are shown from the start, not from the first poll.
  remote
    .poll()
    .catch((error: unknown) =>
      log.warn({ err: describeError(error) }, "other instances' runs not read; the next poll tries again"),
    );
  return {
    remote,
    async close() {
      closed = true;
      for (const off of offs) off();
      throttle.flush();
      await Promise.all([...sending]);
    },
  };
}
