import pThrottle from "p-throttle";
import type { Card } from "../src/cards/model.ts";
import type { FeishuMessenger } from "../src/feishu/messenger.ts";

/**
 * The two ways of updating a card that the publisher exists to avoid, written against the same messenger.
 * Both render the card when the state changes and send that snapshot.
 */

export interface UpdateStrategy {
  /** The state changed; `render` gives the card for the state as it is now. */
  changed(render: () => Card): void;
  /** Waits until nothing is queued or in flight, or until `deadlineMs` (clock) passes; returns what is left. */
  settle(deadlineMs: number, clock: () => number): Promise<{ backlog: number }>;
}

type Patch = FeishuMessenger["patchCard"];

/** (a) One PATCH per change, at once, no throttle, no retry: errors are dropped. */
export function naiveStrategy(messageId: string, patchCard: Patch): UpdateStrategy {
  const inFlight = new Set<Promise<void>>();
  return {
    changed(render) {
      const sent = patchCard(messageId, render()).catch(() => undefined);
      inFlight.add(sent);
      void sent.finally(() => inFlight.delete(sent));
    },
    async settle() {
      await Promise.allSettled([...inFlight]);
      return { backlog: 0 };
    },
  };
}

/**
 * (b) p-throttle at the platform's per-message limit (5/s, its default windowed algorithm), queueing every
 * change: nothing is lost, so when changes come faster than 5/s the queue, and the card's lag, only grow.
 */
export function queueAllStrategy(messageId: string, patchCard: Patch): UpdateStrategy {
  const abort = new AbortController();
  const throttled = pThrottle({ limit: 5, interval: 1000, signal: abort.signal })((card: Card) =>
    patchCard(messageId, card),
  );
  const inFlight = new Set<Promise<void>>();
  return {
    changed(render) {
      const sent = throttled(render()).catch(() => undefined);
      inFlight.add(sent);
      void sent.finally(() => inFlight.delete(sent));
    },
    async settle(deadlineMs, clock) {
      while (inFlight.size > 0 && clock() < deadlineMs) await new Promise((r) => setTimeout(r, 20));
      const backlog = throttled.queueSize;
      abort.abort(new Error("benchmark over"));
      await Promise.allSettled([...inFlight]);
      return { backlog };
    },
  };
}
