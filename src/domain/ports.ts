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

export interface RunnerEvents extends Record<string, unknown> {
  /** A run began: from a message, from the queue (`queueId`), from a retry, or resumed after a restart. */
  run_started: {
    run: RunView;
    source: Record<string, unknown> | undefined;
    queueId?: string;
    resumed: boolean;
  };
  run_updated: RunView;
  queue_changed: { sessionId: string; queued: QueuedMessage[] };
}

/** Sessions and their runs as a channel sees them (implemented by harness/runner.ts). */
export interface SessionRuns {
  on<K extends keyof RunnerEvents>(event: K, listener: (payload: RunnerEvents[K]) => void): () => void;
  getSession(sessionId: string): SessionInfo | undefined;
  activeRun(sessionId: string): RunView | undefined;
  /** The active run, or else the most recent one. */
  currentRun(sessionId: string): RunView | undefined;
  getRun(runId: string): RunView | undefined;
  /** A session's runs, newest first. */
  runs(sessionId: string, limit: number): RunView[];
  queued(sessionId: string): QueuedMessage[];
  queuedPreview(
    sessionId: string,
    limit: number,
    chars: number,
  ): { items: Pick<QueuedMessage, "id" | "senderId" | "text" | "createdAt">[]; total: number };
  hasQueuedFrom(sessionId: string, userId: string): boolean;
  now(): number;
  noteInChat(sessionId: string, userId: string): void;
  lastSeenInChat(sessionId: string, userId: string): number | undefined;
  /** A channel's inbound message, written with `claim` (its de-duplication row) in one transaction. */
  accept(
    input: { session: SessionInfo; senderId: string; text: string; source?: Record<string, unknown> },
    claim: () => boolean,
  ): SubmitResult | undefined;
  cancel(sessionId: string, userId: string): ActionResult;
  abandon(runId: string, reason: string): ActionResult;
  replace(sessionId: string, userId: string): ActionResult;
  retry(
    sessionId: string,
    userId: string,
    source?: Record<string, unknown>,
  ): ActionResult<{ result: SubmitResult }>;
  promote(queueId: string, userId: string): ActionResult<{ position: number }>;
  unqueue(queueId: string, userId: string): ActionResult;
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
