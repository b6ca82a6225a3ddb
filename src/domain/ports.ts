import type { RunEvents } from "./run-feed.ts";
import type { QueuedMessage, RunView, SessionInfo } from "./types.ts";

/**
 * What the channels (feishu, ws, web) need from the harness, as interfaces: they depend on these, the
 * harness implements them (`SessionRunner implements SessionRuns`, `ToolDispatcher` takes `AskSurface`s),
 * so no channel imports the harness and the harness imports no channel.
 */

export type SubmitResult =
  | { kind: "started"; run: RunView }
  | { kind: "queued"; queued: QueuedMessage; position: number }
  /** The session's queue is at its limit; the message was not kept. */
  | { kind: "full"; limit: number };

export type ActionResult<T = object> =
  | ({ ok: true } & T)
  | { ok: false; reason: "forbidden" | "not_running" | "not_found" | "not_retryable" };

/** The runner's events are the feed's (domain/run-feed.ts). */
export type RunnerEvents = RunEvents;

/**
 * What a channel may do to the bot's own runs (harness/runner.ts). `Tx`: the store's transaction, as the
 * runner's store gives it (store/sql.ts StoreSql); the domain names no store.
 */
export interface RunCommands<Tx = unknown> {
  /**
   * A channel's inbound message, written with `claim` (its de-duplication row) in one transaction: `claim`
   * writes through `tx` (never around it: on SQLite the transaction holds the file's one connection).
   */
  accept(
    input: { session: SessionInfo; senderId: string; text: string; source?: Record<string, unknown> },
    claim: (tx: Tx) => Promise<boolean>,
  ): Promise<SubmitResult | undefined>;
  /** A promise when the run is another instance's (several instances): the answer waits for its row. */
  cancel(sessionId: string, userId: string): ActionResult | Promise<ActionResult>;
  abandon(runId: string, reason: string): ActionResult;
  replace(sessionId: string, userId: string): Promise<ActionResult>;
  retry(
    sessionId: string,
    userId: string,
    source?: Record<string, unknown>,
  ): Promise<ActionResult<{ result: SubmitResult }>>;
  promote(queueId: string, userId: string): Promise<ActionResult<{ position: number }>>;
  unqueue(queueId: string, userId: string): Promise<ActionResult>;
}

/**
 * The bot's runs as a channel reaches them (implemented by harness/runner.ts): the commands, and the few
 * reads a channel needs to act (its session, the run a click names, the queue). Everything a reader
 * shows comes from the joined feed (`RunFeed`), not from here.
 */
export interface SessionRuns<Tx = unknown> extends RunCommands<Tx> {
  getSession(sessionId: string): Promise<SessionInfo | undefined>;
  activeRun(sessionId: string): RunView | undefined;
  currentRun(sessionId: string): Promise<RunView | undefined>;
  queued(sessionId: string): Promise<QueuedMessage[]>;
  /** The person wrote or clicked in the session's chat just now (the viewing rule, domain/access.ts). */
  noteInChat(sessionId: string, userId: string): Promise<void>;
}

/**
 * A surface that can put a question in front of the run's sender: the WebSocket hub (a connected client)
 * or the Feishu channel (an active progress card). Surfaces react to registry events to show and
 * withdraw the question; the dispatcher only asks whether any of them can reach the person now.
 */
export interface AskSurface {
  readonly name: string;
  canReach(target: { sessionId: string; runId: string; userId: string }): boolean;
}

/**
 * Which runs this process may still write (several instances: harness/run-leases.ts; one process: all). A
 * channel asks it before it writes a run's card: a run lost to another instance is that instance's to show.
 */
export interface RunWriters {
  /**
   * Whether this process held the run and no longer may write it, by its own clock: its hold ran out (a pause
   * past its lease, before a renewal said so) or was lost. Its card is then the new holder's to write.
   */
  lapsed(runId: string): boolean;
  /** `listener` hears a run this process lost (its hold not renewed in time): the run must stop here, unwritten. */
  onLost(listener: (runId: string) => void): void;
}
