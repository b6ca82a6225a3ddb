import type { CardPlacement } from "../domain/run-feed.ts";
import type { RunView } from "../domain/types.ts";
import type { AgentTaskFeed } from "./sessions.ts";
import { type AgentStore, storedRunSchema } from "./store.ts";
import type { AgentPrincipal } from "./token.ts";

/**
 * The outside agents' tasks this process holds (service.ts decides what an agent may do with them): kept in
 * memory and in their table, shown through the run feed, and their steps written and shown at most once per
 * `stepsCoalesceMs`. After a restart the running ones come back (`resume`); an ended one is read from its row.
 */

export interface AgentTask {
  agent: string;
  /** The token that made it: only that token may use it (undefined for tasks from before token ids). */
  tokenId?: string;
  to: string;
  chatType: "private" | "group";
  /** A question card opened by ask_user_questions without a task: it ends when its question does. */
  implicit: boolean;
  run: RunView;
}

const MAX_TASKS_KEPT = 5000;
const STEPS_COALESCE_MS = 250;

export interface TaskBookOptions {
  now: () => number;
  newId: () => string;
  /** The tasks as the run feed's sessions: a task's card goes out when the feed says it started. */
  feed: AgentTaskFeed;
  /** Tasks kept across restarts; without it they live in memory only. */
  store?: AgentStore;
  /** report_progress calls on one task within this long are one write, one card update, one feed change. */
  stepsCoalesceMs?: number;
}

export class TaskBook {
  readonly #o: TaskBookOptions;
  readonly #tasks = new Map<string, AgentTask>();
  /** Tasks whose steps changed since they were last written and shown, with when that last happened. */
  readonly #unflushed = new Map<string, NodeJS.Timeout>();
  readonly #flushedAt = new Map<string, number>();

  constructor(options: TaskBookOptions) {
    this.#o = options;
  }

  /** A task not yet kept anywhere: nothing is written or shown until the book adopts it. */
  draft(who: AgentPrincipal, to: string, title: string, implicit: boolean): AgentTask {
    const chatType = to.startsWith("oc_") ? "group" : "private";
    const id = this.#o.newId();
    const run: RunView = {
      id,
      // The agent's name is in the session id, so the ask audit rows say which agent asked.
      sessionId: `agent:${who.agent}:${to}`,
      senderId: chatType === "private" ? to : "",
      input: title,
      status: "running",
      steps: [],
      startedAt: this.#o.now(),
      agent: who.agent,
    };
    return { agent: who.agent, tokenId: who.tokenId, to, chatType, implicit, run };
  }

  get(id: string): AgentTask | undefined {
    return this.#tasks.get(id);
  }

  /** How many tasks of one agent (by name) are running. */
  liveTasks(agent: string): number {
    let live = 0;
    for (const task of this.#tasks.values())
      if (task.agent === agent && task.run.status === "running") live += 1;
    return live;
  }

  /** Whether the task has steps held back, not yet written and shown. */
  held(id: string): boolean {
    return this.#unflushed.has(id);
  }

  /** The tasks shown in one session (`agent:<name>:<to>`), oldest first: what the session page shows. */
  tasksOf(sessionId: string): { agent: string; to: string; chatType: "private" | "group"; run: RunView }[] {
    const found = [];
    for (const task of this.#tasks.values())
      if (task.run.sessionId === sessionId)
        found.push({ agent: task.agent, to: task.to, chatType: task.chatType, run: task.run });
    return found;
  }

  /** After a restart: every task that was running gets its card back and takes calls again. */
  resume(): number {
    const stored = this.#o.store?.runningTasks() ?? [];
    let resumed = 0;
    for (const row of stored) {
      const run = storedRunSchema.safeParse(row.run);
      if (!run.success) continue;
      const task: AgentTask = {
        agent: row.agent,
        ...(row.tokenId ? { tokenId: row.tokenId } : {}),
        to: row.to,
        chatType: row.chatType,
        implicit: row.implicit,
        // Rows from before runs named their agent: the row's column does.
        run: { ...run.data, agent: row.agent },
      };
      this.#tasks.set(row.id, task);
      this.#o.feed.started(task.run, this.#placement(task), true);
      resumed += 1;
    }
    // Ended tasks whose card never got its final state are the card side's to repair (feishu repairEnded reads
    // them through the feed: `storedRun`).
    return resumed;
  }

  /** An ended task from before a restart, as last written (the feed's reads need no task in memory). */
  storedRun(runId: string): RunView | undefined {
    const row = this.#o.store?.task(runId);
    if (!row) return undefined;
    const run = storedRunSchema.safeParse(row.run);
    return run.success ? { ...run.data, agent: row.agent } : undefined;
  }

  /** Writes and shows every task whose latest steps are still held back (shutdown calls it). */
  flush(): void {
    for (const id of [...this.#unflushed.keys()]) {
      const task = this.#tasks.get(id);
      if (task) this.update(task, {});
      else this.#forget(id);
    }
  }

  adopt(task: AgentTask): void {
    this.#remember(task.run.id, task);
    this.#o.feed.changed(task.run);
  }

  show(task: AgentTask): void {
    this.#o.feed.started(task.run, this.#placement(task), false);
  }

  /** An agent's card is sent to its person or group: there is no message of theirs to reply to. */
  #placement(task: AgentTask): CardPlacement {
    const to = task.chatType === "group" ? { chatId: task.to } : { openId: task.to };
    return { kind: "send", to, chatType: task.chatType };
  }

  #save(task: AgentTask): void {
    this.#o.store?.saveTask({ id: task.run.id, ...task, status: task.run.status }, this.#o.now());
  }

  #remember(id: string, task: AgentTask): void {
    this.#tasks.set(id, task);
    this.#save(task);
    if (this.#tasks.size <= MAX_TASKS_KEPT) return;
    for (const [oldId, old] of this.#tasks) {
      if (this.#tasks.size <= MAX_TASKS_KEPT) break;
      if (old.run.status !== "running") this.#tasks.delete(oldId);
    }
  }

  /**
   * Steps are written and shown at most once per `stepsCoalesceMs` per task: the first at once, the rest
   * together at the end of the window. Anything else that changes the task (a question, the end) writes
   * the steps held back with it.
   */
  soon(task: AgentTask): void {
    const id = task.run.id;
    if (this.#unflushed.has(id)) return;
    const windowMs = this.#o.stepsCoalesceMs ?? STEPS_COALESCE_MS;
    const waitMs = (this.#flushedAt.get(id) ?? Number.NEGATIVE_INFINITY) + windowMs - this.#o.now();
    if (waitMs <= 0) {
      this.update(task, {});
      return;
    }
    const timer = setTimeout(() => {
      this.#unflushed.delete(id);
      const current = this.#tasks.get(id);
      if (current) this.update(current, {});
    }, waitMs);
    timer.unref();
    this.#unflushed.set(id, timer);
  }

  #forget(id: string): void {
    clearTimeout(this.#unflushed.get(id));
    this.#unflushed.delete(id);
    this.#flushedAt.delete(id);
  }

  update(task: AgentTask, patch: Partial<RunView>): void {
    const id = task.run.id;
    clearTimeout(this.#unflushed.get(id));
    this.#unflushed.delete(id);
    task.run = { ...task.run, ...patch };
    if (task.run.status === "running") this.#flushedAt.set(id, this.#o.now());
    else this.#forget(id);
    this.#save(task);
    this.#o.feed.changed(task.run);
  }
}

/**
 * Whether `who` may use a task or ask: made by its token. Rows from before token ids (no `tokenId`) fall back
 * to the agent's name, as they were made; every row written since carries its token's id.
 */
export function ownedBy(made: { agent: string; tokenId?: string | undefined }, who: AgentPrincipal): boolean {
  if (made.agent !== who.agent) return false;
  return made.tokenId === undefined || made.tokenId === who.tokenId;
}
