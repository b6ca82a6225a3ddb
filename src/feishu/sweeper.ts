import { createHolderElection, type HolderElection } from "../cluster/holder.ts";
import { createLeases } from "../cluster/leases.ts";
import { describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import type { FeishuCluster } from "./cluster-options.ts";
import type { RepairScope } from "./progress/lifecycle.ts";

/**
 * The app's sweeper with several instances (issue 27): of all the instances of an app, the one holding the
 * lease `sweeper:<app id>` repairs what no instance would otherwise. One process repairs at its start (the
 * cards whose run ended before their final state landed); with several, an instance killed after its run
 * ended but before that PATCH landed leaves a card showing the task under way, and the others may not restart
 * for days. So the sweeper sends those final states, at its election and every `everyMs` after.
 *
 * Only for runs that ended at least `graceMs` ago: until then the card's own instance may be landing it (a
 * PATCH interval, a back-off), and a card has one writer while its instance lives. A live instance's late
 * retry that still overlaps sends the same final card twice, no worse. Each card is tried once per term: one
 * whose final state the platform refuses (recalled, too old) is not tried at every sweep.
 */

export interface SweeperOptions {
  appId: string;
  /** Sends the owed final states in `only` (channel.ts repairEnded). */
  repair: (only: RepairScope) => Promise<number>;
  now: () => number;
  log: Logger;
  everyMs: number;
  graceMs: number;
}

export interface Sweeper {
  isHolder(): boolean;
  /** Steps down (the lease released, so another instance takes over at its next try) and stops. */
  close(): Promise<void>;
}

export function sweeperLeaseName(appId: string): string {
  return `sweeper:${appId}`;
}

export function startSweeper(cluster: FeishuCluster, options: SweeperOptions): Sweeper {
  const log = options.log.child({ module: "feishu-sweeper", instance: cluster.instance });
  let timer: ReturnType<typeof setInterval> | undefined;
  let tried = new Set<string>();
  let sweeping: Promise<void> | undefined;
  const sweep = () => {
    sweeping ??= options
      .repair({ endedBefore: options.now() - options.graceMs, tried })
      .then(
        (repaired) => {
          if (repaired > 0) log.info({ cards: repaired }, "sent final states their instances left unsent");
        },
        (error: unknown) => log.warn({ err: describeError(error) }, "sweep failed; tried again at the next"),
      )
      .finally(() => {
        sweeping = undefined;
      });
  };
  const election: HolderElection = createHolderElection({
    leases: createLeases(cluster.db),
    name: sweeperLeaseName(options.appId),
    role: "sweeper",
    instance: cluster.instance,
    ...cluster.holder,
    log,
    onElected: (lease) => {
      log.info({ fence: lease.fence }, "sweeping for the app");
      tried = new Set();
      sweep();
      timer = setInterval(sweep, options.everyMs);
      timer.unref();
    },
    onDemoted: () => {
      clearInterval(timer);
      timer = undefined;
    },
  });
  const started = election
    .start()
    .catch((error: unknown) => log.warn({ err: describeError(error) }, "sweeper election did not start"));
  return {
    isHolder: () => election.isHolder(),
    async close() {
      await started;
      await election.stop();
      clearInterval(timer);
      await sweeping;
    },
  };
}
