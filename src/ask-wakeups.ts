import type { AskRegistry } from "./asks/registry.ts";
import type { Queryable } from "./cluster/pool.ts";
import { notify, type Wakeups } from "./cluster/wakeups.ts";
import { describeError } from "./errors.ts";
import type { Logger } from "./logger.ts";

/**
 * Asks across instances (issue 27, docs/several-instances.md): every settle this instance writes to a row is
 * announced as `ask:<request id>` (ids only), and the instance whose tool call waits on that ask re-reads the
 * row (`reconcile`). On every poll and after the listener reconnects, each instance re-reads every ask it
 * holds in one query, so a lost wake-up delays an answer by one poll interval at most and loses nothing.
 */
export function connectAskWakeups(
  registry: AskRegistry,
  wakeups: Wakeups,
  options: { db: Queryable; channel: string; log: Logger },
): () => void {
  const { db, channel, log } = options;
  const offWritten = registry.on("written", (requestId) => {
    // A wake-up that cannot be sent is made up for by the waiting instance's next poll.
    notify(db, channel, "ask", requestId).catch((error: unknown) =>
      log.warn({ err: describeError(error), requestId }, "ask wake-up not sent; the next poll finds it"),
    );
  });
  const offWake = wakeups.subscribe("ask", async (wake) => {
    if (wake.reason === "notify") await registry.reconcile(wake.id);
    else await registry.reconcileAll();
  });
  return () => {
    offWritten();
    offWake();
  };
}
