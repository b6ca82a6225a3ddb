import { canViewSession } from "../domain/access.ts";
import { ALL_ALLOWED, type CardPlacement, type QueuedPreview, type RunSession } from "../domain/run-feed.ts";
import type { QueuedMessage, RunView, SessionInfo } from "../domain/types.ts";
import type { SessionMembers } from "../store/members.ts";
import type { Store } from "../store/repos.ts";

/**
 * The runner's reads (its side of the run feed, domain/run-feed.ts): sessions and runs as readers show them.
 * `SessionRunner` (runner.ts) extends this and owns the live state it reads; nothing here writes.
 */

/** A run under way: its live state, the signal that stops it, and when its bookkeeping is over. */
export interface ActiveRun {
  run: RunView;
  controller: AbortController;
  done: Promise<void>;
}

/** The runner's state in memory that a read must prefer over the store: the newest a run has. */
export interface LiveRuns {
  /** The active run of each session. */
  readonly active: Map<string, ActiveRun>;
  /** Runs a shutdown stopped, as they were then (text streamed since the last write included). */
  readonly halted: Map<string, RunView>;
  /** Runs whose latest state is not on disk yet (its write is being retried). */
  readonly unsaved: Map<string, RunView>;
}

export interface ReadDeps {
  store: Store;
  now: () => number;
  /** Who has been seen in each session's chat (the viewing rule, access.ts); nobody is when absent. */
  members?: SessionMembers;
}

export class RunReads {
  protected readonly live: LiveRuns = { active: new Map(), halted: new Map(), unsaved: new Map() };
  readonly #read: ReadDeps;

  constructor(deps: ReadDeps) {
    this.#read = deps;
  }

  getSession(sessionId: string): Promise<SessionInfo | undefined> {
    return this.#read.store.getSession(sessionId);
  }

  async session(sessionId: string): Promise<RunSession | undefined> {
    return feedSession(await this.getSession(sessionId));
  }

  canView(userId: string, sessionId: string): Promise<boolean> {
    return canViewSession(this, userId, sessionId);
  }

  activeRun(sessionId: string): RunView | undefined {
    return this.live.active.get(sessionId)?.run;
  }

  /** The active run, or else the most recent one. */
  async currentRun(sessionId: string): Promise<RunView | undefined> {
    const active = this.activeRun(sessionId);
    if (active) return active;
    const latest = await this.#read.store.latestRun(sessionId);
    // An ended run's last state may still be on its way to the row: this process's copy is the newer.
    return latest && (this.liveRun(latest.id) ?? latest);
  }

  /**
   * One run by id: the live state while it is active (or as a shutdown left it), else the latest state
   * whose write is still being retried, else as saved. Channels render cards from this, so it must be the
   * newest state the runner knows, not only the one on disk.
   */
  async getRun(runId: string): Promise<RunView | undefined> {
    return this.liveRun(runId) ?? this.#read.store.getRun(runId);
  }

  /** The run's state in this process's memory, when it has one newer than its row. */
  liveRun(runId: string): RunView | undefined {
    for (const active of this.live.active.values()) if (active.run.id === runId) return active.run;
    return this.live.halted.get(runId) ?? this.live.unsaved.get(runId);
  }

  /** A session's runs, newest first, the active one as it is now. */
  async runs(sessionId: string, limit: number): Promise<RunView[]> {
    const active = this.activeRun(sessionId);
    const saved = await this.#read.store.recentRuns(sessionId, limit);
    return saved.map((run) => (active && run.id === active.id ? active : (this.liveRun(run.id) ?? run)));
  }

  queued(sessionId: string): Promise<QueuedMessage[]> {
    return this.#read.store.queue.queued(sessionId);
  }

  /** What a snapshot shows of the queue: the first `limit`, texts cut to `chars`, and how many wait in all. */
  async queuedPreview(sessionId: string, limit: number, chars: number): Promise<QueuedPreview> {
    const { queue } = this.#read.store;
    const [items, total] = await Promise.all([
      queue.preview(sessionId, limit, chars),
      queue.count(sessionId),
    ]);
    return { items, total };
  }

  hasQueuedFrom(sessionId: string, userId: string): Promise<boolean> {
    return this.#read.store.queue.hasFrom(sessionId, userId);
  }

  now(): number {
    return this.#read.now();
  }

  /** `userId` wrote to the bot, or clicked one of its cards, in the session's chat just now. */
  async noteInChat(sessionId: string, userId: string): Promise<void> {
    await this.#read.members?.note(sessionId, userId, this.#read.now());
  }

  /** When `userId` was last seen in the session's chat, if ever. */
  async lastSeenInChat(sessionId: string, userId: string): Promise<number | undefined> {
    return this.#read.members?.lastSeen(sessionId, userId);
  }
}

/** A bot's session allows everything its viewers may ask of a run (queue, cancel, retry). */
export function feedSession(session: SessionInfo | undefined): RunSession | undefined {
  if (!session) return undefined;
  return {
    id: session.id,
    channel: session.channel,
    chatType: session.chatType,
    title: session.title,
    ...(session.topic ? { topic: session.topic } : {}),
    allows: ALL_ALLOWED,
  };
}

/** A Feishu message's run has its card as the reply to that message; any other run has no card. */
export function placementOf(source: Record<string, unknown> | undefined): CardPlacement | undefined {
  if (source?.channel !== "feishu") return undefined;
  return {
    kind: "reply",
    chatId: String(source.chatId ?? ""),
    messageId: String(source.messageId ?? ""),
    // The app that received the message sends its card (feishu/apps.ts); sources of earlier versions name none.
    ...(typeof source.appId === "string" ? { appId: source.appId } : {}),
  };
}
