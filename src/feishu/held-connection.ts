import { createHolderElection, type Demotion } from "../cluster/holder.ts";
import { createLeases } from "../cluster/leases.ts";
import type { FeishuCluster } from "./cluster-options.ts";
import {
  checkLongConnectionAppId,
  type LongConnectionOptions,
  startLongConnection,
} from "./long-connection.ts";

/**
 * The long connection of one instance among several (issue 27): Feishu sends each event to one random
 * connection of an app and caps how many it may open, so an instance opens the app's connection only while
 * it holds the lease `long-connection:<app id>` (src/cluster/holder.ts), and closes it the moment it steps
 * down. The others stand by; one of them opens it within 12 s of the holder's death (the lease's TTL plus a
 * try), at its next try after a holder that stops (`close`: closed first, then the lease released).
 *
 * The holder hands what it receives to the handlers it is given: with an event relay (runtime.ts, the cluster's
 * `events`), messages become rows any instance of the app takes in; card callbacks are answered here.
 */
export interface HeldConnection {
  /** Resolves after the first election: on the connection's first `ready` when elected, else at once. */
  ready: Promise<void>;
  /** Whether this instance holds the app's connection now. */
  isHolder(): boolean;
  /** Closes the connection (if held), then releases the lease so a standby takes over at its next try. */
  close(): Promise<void>;
}

export function leaseName(appId: string): string {
  return `long-connection:${appId}`;
}

export function startHeldConnection(cluster: FeishuCluster, options: LongConnectionOptions): HeldConnection {
  checkLongConnectionAppId(options.appId);
  const log = options.logger.child({ module: "feishu-long-connection", instance: cluster.instance });
  let connection: ReturnType<typeof startLongConnection> | undefined;
  let firstReady: Promise<void> | undefined;
  const election = createHolderElection({
    leases: createLeases(cluster.db),
    name: leaseName(options.appId),
    instance: cluster.instance,
    ...cluster.holder,
    log,
    onElected: (lease) => {
      log.info({ fence: lease.fence }, "holding the app's long connection; opening it");
      connection = startLongConnection(options);
      firstReady ??= connection.ready;
    },
    onDemoted: (reason: Demotion) => {
      connection?.close();
      connection = undefined;
      if (reason !== "stopped") options.onState?.("standby");
    },
  });
  options.onState?.("standby");
  const ready = election.start().then(() => firstReady);
  return {
    ready,
    isHolder: () => election.isHolder(),
    close: () => election.stop(),
  };
}
