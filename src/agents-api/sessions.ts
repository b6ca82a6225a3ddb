import {
  type CardPlacement,
  type QueuedPreview,
  READ_ONLY,
  type RunEvents,
  type RunFeed,
  type RunSession,
} from "../domain/run-feed.ts";
import type { RunView } from "../domain/types.ts";
import type { Logger } from "../logger.ts";
import { strings } from "../strings/index.ts";
import { Emitter } from "../util/emitter.ts";

/**
 * Outside agents' tasks as the run feed's sessions (`agent:<name>:<to>`, domain/run-feed.ts): the hub and the
 * session page show such a task like the bot's own run, read-only (its agent alone ends it).
 */
export interface TaskView {
  agent: string;
  to: string;
  chatType: "private" | "group";
  run: RunView;
}

/** The session of `tasks` (oldest first), named after its agent; undefined when it has none. */
export function agentSession(sessionId: string, tasks: TaskView[]): RunSession | undefined {
  const latest = tasks.at(-1);
  if (!sessionId.startsWith("agent:") || !latest) return undefined;
  return {
    id: sessionId,
    channel: "agent",
    chatType: latest.chatType,
    title: strings.agents.sessionTitle(latest.agent),
    allows: READ_ONLY,
  };
}

/**
 * Who may look: in a private chat its person; in a group, whoever a task of the session waits on or waited
 * on (its answerer) — the bot does not know a group's members for an agent's card, so no one else.
 */
export function mayViewTasks(userId: string, sessionId: string, tasks: TaskView[]): boolean {
  if (!userId || !sessionId.startsWith("agent:")) return false;
  return tasks.some((task) =>
    task.chatType === "private" ? task.to === userId : task.run.senderId === userId,
  );
}

interface TaskLookup {
  /** The session's tasks, oldest first. */
  tasksOf(sessionId: string): TaskView[];
  /** A task's run: live while the process holds it, else as last written (an ended task from before a restart). */
  taskRun(runId: string): RunView | undefined;
}

/** Outside agents' tasks as one feed of runs: each session is its tasks, read-only, never a queue. */
export class AgentTaskFeed implements RunFeed {
  readonly #tasks: TaskLookup;
  readonly #events: Emitter<RunEvents>;

  constructor(tasks: TaskLookup & { logger?: Logger }) {
    this.#tasks = tasks;
    this.#events = new Emitter((err, event) => tasks.logger?.error({ err, event }, "event listener failed"));
  }

  /** A task's card is due: a new task's, or after a restart a running task's again (`resumed`). */
  started(run: RunView, card: CardPlacement, resumed: boolean): void {
    this.#events.emit("run_started", { run, card, resumed });
  }

  /** A task's run changed (or a task began): readers fetch it again. */
  changed(run: RunView): void {
    this.#events.emit("run_updated", run);
  }

  on<K extends keyof RunEvents>(event: K, listener: (payload: RunEvents[K]) => void): () => void {
    return this.#events.on(event, listener);
  }
  async getRun(runId: string): Promise<RunView | undefined> {
    return this.#tasks.taskRun(runId);
  }
  async session(sessionId: string): Promise<RunSession | undefined> {
    return agentSession(sessionId, this.#tasks.tasksOf(sessionId));
  }
  activeRun(sessionId: string): RunView | undefined {
    const run = this.#tasks.tasksOf(sessionId).at(-1)?.run;
    return run?.status === "running" ? run : undefined;
  }
  async currentRun(sessionId: string): Promise<RunView | undefined> {
    return this.#tasks.tasksOf(sessionId).at(-1)?.run;
  }
  async runs(sessionId: string, limit: number): Promise<RunView[]> {
    return this.#tasks
      .tasksOf(sessionId)
      .map((task) => task.run)
      .reverse()
      .slice(0, limit);
  }
  async queuedPreview(): Promise<QueuedPreview> {
    return { items: [], total: 0 };
  }
  async canView(userId: string, sessionId: string): Promise<boolean> {
    return mayViewTasks(userId, sessionId, this.#tasks.tasksOf(sessionId));
  }
}
