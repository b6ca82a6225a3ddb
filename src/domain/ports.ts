import type { RunEvents, RunFeed } from "./run-feed.ts";
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

/** What a channel may do to the bot's own runs (harness/runner.ts). */
export interface RunCommands {
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

/** Sessions and their runs as a channel sees them (implemented by harness/runner.ts). */
export interface SessionRuns extends RunFeed, RunCommands {
  getSession(sessionId: string): SessionInfo | undefined;
  queued(sessionId: string): QueuedMessage[];
  hasQueuedFrom(sessionId: string, userId: string): boolean;
  now(): number;
  noteInChat(sessionId: string, userId: string): void;
  lastSeenInChat(sessionId: string, userId: string): number | undefined;
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

/** An outside agent's task card (agents-api/service.ts opens it; the Feishu channel implements the port). */
export interface AgentCardTarget {
  /** Where the card is sent: a person's private chat by open_id, or a group by chat id. */
  target: { openId: string } | { chatId: string };
  chatType: "private" | "group";
  agent: string;
}

/** The Feishu channel's hook for agent cards (FeishuChannel.openAgentCard / updateAgentRun). */
export interface AgentCardPort {
  open(run: RunView, where: AgentCardTarget): void;
  update(run: RunView): void;
  /** After a restart: the task's card again (the same message when it was recorded), showing `run`. */
  resume(run: RunView, where: AgentCardTarget): void;
}
