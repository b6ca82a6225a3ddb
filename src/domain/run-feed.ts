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
  getRun(runId: string): Promise<RunView | undefined>;
  /** The session's run that is going on now, in this process (its memory, never a read). */
  activeRun(sessionId: string): RunView | undefined;
  /** The active run, or else the most recent one. */
  currentRun(sessionId: string): Promise<RunView | undefined>;
  /** A session's runs, newest first. */
  runs(sessionId: string, limit: number): Promise<RunView[]>;
  /** The first `limit` queued messages (texts cut to `chars`) and how many are queued; none where nothing queues. */
  queuedPreview(sessionId: string, limit: number, chars: number): Promise<QueuedPreview>;
  /** The session as its readers show it, or undefined when this feed does not hold it. */
  session(sessionId: string): Promise<RunSession | undefined>;
  /** Whether the person may view the session's runs (domain/access.ts for the bot's own). */
  canView(userId: string, sessionId: string): Promise<boolean>;
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
  run_started: {
    run: RunView;
    card: CardPlacement | undefined;
    resumed: boolean;
    queueId?: string;
    /** The run's session as its readers show it, when the feed has it at hand (the bot's runs). */
    session?: RunSession;
  };
  run_updated: RunView;
  /** The session's queue changed (never for a session that queues nothing). */
  queue_changed: { sessionId: string; queued: QueuedMessage[] };
}

/**
 * Where a run's card goes: a reply to the message that started it, or sent to a person or a group. `appId`: the
 * Feishu app that sends it (the one that received the message); absent, the first app (feishu/apps.ts).
 */
export type CardPlacement =
  | { kind: "reply"; chatId: string; messageId: string; appId?: string }
  | {
      kind: "send";
      to: { openId: string } | { chatId: string };
      chatType: "private" | "group";
      appId?: string;
    };

/** Feeds read as one; more can join later (outside agents' tasks are mounted after the core is built). */
export interface JoinedFeed extends RunFeed {
  add(feed: RunFeed): void;
}

const NO_QUEUE: QueuedPreview = Object.freeze({ items: [], total: 0 }) as QueuedPreview;

/**
 * The feed that holds a session answers everything about it (the first that knows it, in joining order);
 * a run by id comes from the first feed that has it; a listener hears every feed, those joined later too.
 */
export function joinFeeds(...initial: RunFeed[]): JoinedFeed {
  const feeds = [...initial];
  /** Each listener as a way to subscribe it to one more feed, and its subscriptions so far. */
  const listeners: { subscribe: (feed: RunFeed) => () => void; offs: (() => void)[] }[] = [];
  const holder = async (sessionId: string): Promise<RunFeed | undefined> => {
    for (const feed of feeds) if ((await feed.session(sessionId)) !== undefined) return feed;
    return undefined;
  };
  return {
    add(feed) {
      feeds.push(feed);
      for (const entry of listeners) entry.offs.push(entry.subscribe(feed));
    },
    on(event, listener) {
      const entry = { subscribe: (feed: RunFeed) => feed.on(event, listener), offs: [] as (() => void)[] };
      for (const feed of feeds) entry.offs.push(entry.subscribe(feed));
      listeners.push(entry);
      return () => {
        for (const off of entry.offs) off();
        const at = listeners.indexOf(entry);
        if (at >= 0) listeners.splice(at, 1);
      };
    },
    async getRun(runId) {
      for (const feed of feeds) {
        const run = await feed.getRun(runId);
        if (run) return run;
      }
      return undefined;
    },
    session: async (sessionId) => (await holder(sessionId))?.session(sessionId),
    // In memory in each feed, and session ids are never shared: the first that has one.
    activeRun: (sessionId) => {
      for (const feed of feeds) {
        const run = feed.activeRun(sessionId);
        if (run) return run;
      }
      return undefined;
    },
    currentRun: async (sessionId) => (await holder(sessionId))?.currentRun(sessionId),
    runs: async (sessionId, limit) => (await (await holder(sessionId))?.runs(sessionId, limit)) ?? [],
    queuedPreview: async (sessionId, limit, chars) =>
      (await (await holder(sessionId))?.queuedPreview(sessionId, limit, chars)) ?? NO_QUEUE,
    canView: async (userId, sessionId) =>
      (await (await holder(sessionId))?.canView(userId, sessionId)) ?? false,
  };
}
