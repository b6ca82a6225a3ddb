import type { Db } from "../cluster/pool.ts";
import type { LimitWindows } from "./limits.ts";

/**
 * What a Feishu runtime needs to be one of several instances of the bot behind one app (issue 27,
 * docs/several-instances.md): the cluster's Postgres (its tables already ensured) and this instance's id.
 * Absent, the runtime is alone: the whole budget is its own and it opens the long connection itself.
 */
export interface FeishuCluster {
  /** A pool from src/cluster/pool.ts on the database the instances share. */
  db: Db;
  /** This instance's id, unique among the live instances (the budget member and the lease holder). */
  instance: string;
  /**
   * Heartbeats of the budget share (defaults in cluster/budget.ts), and the limiter's windows (default the
   * platform's 1 s and 1 min): tests shorten them.
   */
  budget?: { heartbeatEveryMs?: number; ttlMs?: number; windows?: LimitWindows };
  /** The long-connection lease (defaults in cluster/holder.ts: TTL 10 s, renewed every 2 s). */
  holder?: { ttlMs?: number; renewEveryMs?: number; marginMs?: number };
  /**
   * The long connection's messages as rows any instance of the app takes in (src/instances.ts), so the tasks
   * they start spread over the instances; absent, the holder takes in what it hears.
   */
  events?: EventRelay;
  /** Card callbacks answered on an instance that does not run the card's task (progress/remote-answers.ts). */
  callbacks?: CallbackRelay;
}

/**
 * A click on a card answered by an instance other than the one that runs its task: the card's instance holds
 * its PATCHes until the answer is sent (Feishu reverts an update made while a callback is answered), as it
 * does for a click it answers itself.
 */
export interface CallbackRelay {
  /** A callback for this message is being answered here (from its arrival, before anything is read). */
  answering(messageId: string): void;
  /** The callback for this message was answered here (its response sent, or given up on). */
  responded(messageId: string): void;
  /** Another instance is answering (`answering`), or has answered, a callback for this message. */
  onCallback(listener: (event: "answering" | "responded", messageId: string) => void): () => void;
}

export interface EventRelay {
  /** Stores a message the holder received for one of the app's instances; resolves once it is durable. */
  hand(appId: string, data: Record<string, unknown>): Promise<void>;
  /**
   * Takes in the app's stored messages, each with `take` (resolved: done; rejected: tried again later), while
   * `serving` says this instance can serve what they start (else the others take them).
   */
  take(
    appId: string,
    take: (data: Record<string, unknown>) => Promise<void>,
    serving?: () => boolean,
  ): () => void;
}
