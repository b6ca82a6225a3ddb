import type { Channel, QueuedMessage, RunView, SessionTopic } from "./types.ts";

/**
 * One feed of runs, whoever runs them (issue 26): the bot's own (harness/runner.ts) and outside agents' tasks
 * (agents-api/service.ts). Every reader of runs — the WebSocket hub, the session pages — depends on this and
 * on nothing that owns a run, so a new kind of run (or runs of another instance) joins the feed, not every
 * reader.
 *
 * A reader never assumes the run lives in this process: it names runs and sessions by id, reads them again on
 * each event instead of keeping the objects it was given, and asks the session what its viewers may do
 * (`allows`) instead of asking who owns it. A feed answers from what it holds; one fed by another instance
 * would hold a copy kept fresh by that instance's events.
 */
export interface RunFeed {
  on<K extends keyof RunEvents>(event: K, listener: (payload: RunEvents[K]) => void): () => void;
  getRun(runId: string): RunView | undefined;
  /** The session's run that is going on now. */
  activeRun(sessionId: string): RunView | undefined;
  /** The active run, or else the most recent one. */
  currentRun(sessionId: string): RunView | undefined;
  /** A session's runs, newest first. */
  runs(sessionId: string, limit: number): RunView[];
  /** The first `limit` queued messages (texts cut to `chars`) and how many are queued; none where nothing queues. */
  queuedPreview(sessionId: string, limit: number, chars: number): QueuedPreview;
  /** The session as its readers show it, or undefined when this feed does not hold it. */
  session(sessionId: string): RunSession | undefined;
  /** Whether the person may view the session's runs (domain/access.ts for the bot's own). */
  canView(userId: string, sessionId: string): boolean;
}

export interface QueuedPreview {
  items: Pick<QueuedMessage, "id" | "senderId" | "text" | "createdAt">[];
  total: number;
}

export interface RunSession {
  id: string;
  /** `agent` for an outside agent's session (`agent:<name>:<to>`). */
  channel: Channel | "agent";
  chatType: "private" | "group" | "none";
  title: string;
  topic?: SessionTopic;
  /** What its viewers may do from a page: an outside agent's task is ended by its agent alone. */
  allows: SessionAllows;
}

export interface SessionAllows {
  queue: boolean;
  cancel: boolean;
  retry: boolean;
}

export const ALL_ALLOWED: SessionAllows = Object.freeze({ queue: true, cancel: true, retry: true });
export const READ_ONLY: SessionAllows = Object.freeze({ queue: false, cancel: false, retry: false });

export interface RunEvents extends Record<string, unknown> {
  /**
   * A run began: from a message, from the queue (`queueId`), from a retry, or resumed after a restart.
   * `card` says where its progress card goes; a run without one (a web session's) has none.
   */
  run_started: { run: RunView; card: CardPlacement | undefined; resumed: boolean; queueId?: string };
  run_updated: RunView;
  /** The session's queue changed (never for a session that queues nothing). */
  queue_changed: { sessionId: string; queued: QueuedMessage[] };
}

/** Where a run's card goes: a reply to the message that started it, or sent to a person or a group. */
export type CardPlacement =
  | { kind: "reply"; chatId: string; messageId: string }
  | { kind: "send"; to: { openId: string } | { chatId: string }; chatType: "private" | "group" };
