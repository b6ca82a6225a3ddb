import type { AskRegistry } from "./asks/registry.ts";
import type { Queryable } from "./cluster/pool.ts";
import { notify, type Wakeups } from "./cluster/wakeups.ts";
import { describeError } from "./errors.ts";
import type { Logger } from "./logger.ts";
import { KeyedLock } from "./util/keyed-lock.ts";

/**
 * Asks across instances (issue 27, docs/several-instances.md): every row this instance writes — an ask asked,
 * extended, settled — is announced as `ask:<request id>` (ids only), and every instance re-reads the row: the
 * one whose tool call waits on the ask learns of its answer (`reconcile`), the others hold a new ask as a copy
 * (`mirror`) so their hubs and pages show it and may answer it. On every poll and after the listener
 * reconnects, each instance re-reads every ask it holds and every pending row in two queries, so a lost
 * wake-up delays an answer or a question by one poll interval at most and loses nothing.
 */
export function connectAskWakeups(
  registry: AskRegistry,
  wakeups: Wakeups,
  options: { db: Queryable; channel: string; log: Logger },
): () => void {
  const { db, channel, log } = options;
  // One ask's wake-ups in order: a copy made from a read that saw it pending never lands after its settle.
  const asks = new KeyedLock();
  const offWritten = registry.on("written", (requestId) => {
    // A wake-up that cannot be sent is made up for by the others' next poll.
    notify(db, channel, "ask", requestId).catch((error: unknown) =>
      log.warn({ err: describeError(error), requestId }, "ask wake-up not sent; the next poll finds it"),
    );
  });
  const offWake = wakeups.subscribe("ask", async (wake) => {
    if (wake.reason === "notify") {
      const { id } = wake;
      await asks.run(id, async () => {
        if (registry.get(id)) await registry.reconcile(id);
        else await registry.mirror(id);
      });
      return;
    }
    await registry.reconcileAll();
    await registry.mirrorPending();
  });
  return () => {
    offWritten();
    offWake();
  };
}
