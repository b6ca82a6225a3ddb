import type { CardPlacement } from "../domain/run-feed.ts";
import type { RunView } from "../domain/types.ts";
import type { Logger } from "../logger.ts";
import type { AgentTaskFeed } from "./sessions.ts";
import { type AgentStore, storedRunSchema } from "./store.ts";
import type { AgentPrincipal } from "./token.ts";

/**
 * The outside agents' tasks this process holds (service.ts decides what an agent may do with them): kept in
 * memory and in their table, shown through the run feed, and their steps written and shown at most once per
 * `stepsCoalesceMs`. After a restart the running ones come back (`resume`), and the recently ended ones are read
 * back for the feed (`storedRun`).
 *
 * Memory is the truth for the tasks held here; the store follows it. A change is made in memory at once (the
 * live-task cap and every check see it), then written; the feed hears of it once the row is written, so a card
 * never shows what a restart would lose. Writes of one task are chained: on Postgres two statements of one
 * task in flight at once could otherwise land in the wrong order and leave an older state in the row.
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
/**
 * How far back `resume` reads ended tasks: the card side repairs, after a restart, the final state of cards up
 * to 14 days old (store/feishu.ts CARD_PATCHABLE_MS, which this area may not import), reading their runs
 * through the feed, whose reads are synchronous.
 */
const ENDED_READ_BACK_MS = 14 * 24 * 60 * 60 * 1000;

export interface TaskBookOptions {
  now: () => number;
  newId: () => string;
  /** The tasks as the run feed's sessions: a task's card goes out when the feed says it started. */
  feed: AgentTaskFeed;
  /** Tasks kept across restarts; without it they live in memory only. */
  store?: AgentStore;
  /** report_progress calls on one task within this long are one write, one card update, one feed change. */
  stepsCoalesceMs?: number;
  /** Where a write nobody waits for (a coalesced step, a task ended by its question) reports a failure. */
  logger?: Logger;
}

export class TaskBook {
  readonly #o: TaskBookOptions;
  readonly #tasks = new Map<string, AgentTask>();
  /** Tasks whose steps changed since they were last written and shown, with when that last happened. */
  readonly #unflushed = new Map<string, NodeJS.Timeout>();
  readonly #flushedAt = new Map<string, number>();
  /** Each task's latest write: the next one of that task starts after it. */
  readonly #writes = new Map<string, Promise<void>>();
  /** Ended tasks from before a restart, as last written (`resume` reads them). */
  readonly #ended = new Map<string, RunView>();

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
  async resume(): Promise<number> {
    const store = this.#o.store;
    if (!store) return 0;
    for (const row of await store.endedTasks(this.#o.now() - ENDED_READ_BACK_MS, MAX_TASKS_KEPT)) {
      const run = storedRunSchema.safeParse(row.run);
      if (run.success) this.#ended.set(row.id, { ...run.data, agent: row.agent });
    }
    const stored = await store.runningTasks();
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

  /**
   * An ended task from before a restart, as last written (the feed's reads need no task in memory). Read back
   * by `resume`: the feed's reads are synchronous, the store's are not.
   */
  storedRun(runId: string): RunView | undefined {
    return this.#ended.get(runId);
  }

  /**
   * Writes and shows every task whose latest steps are still held back, and waits for every write under way
   * (shutdown calls it before the store closes). A failed write is logged, not thrown: shutdown goes on.
   */
  async flush(): Promise<void> {
    for (const id of [...this.#unflushed.keys()]) {
      const task = this.#tasks.get(id);
      if (task) this.background(this.update(task, {}));
      else this.#forget(id);
    }
    await Promise.allSettled([...this.#writes.values()]);
  }

  /** The task is held and written; a task whose first write fails is not held (the call that made it fails). */
  async adopt(task: AgentTask): Promise<void> {
    const id = task.run.id;
    try {
      await this.#remember(id, task);
    } catch (error) {
      if (this.#tasks.get(id) === task) this.#tasks.delete(id);
      throw error;
    }
    this.#o.feed.changed(task.run);
  }

  /** Runs a change nobody waits for: a failure is logged (without a logger it is left unhandled, never hidden). */
  background(change: Promise<void>): void {
    const { logger } = this.#o;
    if (logger) change.catch((err: unknown) => logger.error({ err }, "agent task not written"));
    else void change;
  }

  show(task: AgentTask): void {
    this.#o.feed.started(task.run, this.#placement(task), false);
  }

  /** An agent's card is sent to its person or group: there is no message of theirs to reply to. */
  #placement(task: AgentTask): CardPlacement {
    const to = task.chatType === "group" ? { chatId: task.to } : { openId: task.to };
    return { kind: "send", to, chatType: task.chatType };
  }

  /** Writes the task as it is now, after any write of it still under way. */
  #save(task: AgentTask): Promise<void> {
    const store = this.#o.store;
    if (!store) return Promise.resolve();
    const id = task.run.id;
    // A snapshot: a task's run is replaced on every change, never edited in place.
    const row = { id, ...task, status: task.run.status };
    const at = this.#o.now();
    const write = () => store.saveTask(row, at);
    const written = (this.#writes.get(id) ?? Promise.resolve()).then(write, write);
    this.#writes.set(id, written);
    const done = () => {
      if (this.#writes.get(id) === written) this.#writes.delete(id);
    };
    written.then(done, done);
    return written;
  }

  #remember(id: string, task: AgentTask): Promise<void> {
    this.#tasks.set(id, task);
    const saved = this.#save(task);
    if (this.#tasks.size > MAX_TASKS_KEPT)
      for (const [oldId, old] of this.#tasks) {
        if (this.#tasks.size <= MAX_TASKS_KEPT) break;
        if (old.run.status !== "running") this.#tasks.delete(oldId);
      }
    return saved;
  }

  /**
   * Steps are written and shown at most once per `stepsCoalesceMs` per task: the first at once, the rest
   * together at the end of the window. Anything else that changes the task (a question, the end) writes
   * the steps held back with it.
   */
  async soon(task: AgentTask): Promise<void> {
    const id = task.run.id;
    if (this.#unflushed.has(id)) return;
    const windowMs = this.#o.stepsCoalesceMs ?? STEPS_COALESCE_MS;
    const waitMs = (this.#flushedAt.get(id) ?? Number.NEGATIVE_INFINITY) + windowMs - this.#o.now();
    if (waitMs <= 0) {
      await this.update(task, {});
      return;
    }
    const timer = setTimeout(() => {
      this.#unflushed.delete(id);
      const current = this.#tasks.get(id);
      if (current) this.background(this.update(current, {}));
    }, waitMs);
    timer.unref();
    this.#unflushed.set(id, timer);
  }

  #forget(id: string): void {
    clearTimeout(this.#unflushed.get(id));
    this.#unflushed.delete(id);
    this.#flushedAt.delete(id);
  }

  async update(task: AgentTask, patch: Partial<RunView>): Promise<void> {
    const id = task.run.id;
    clearTimeout(this.#unflushed.get(id));
    this.#unflushed.delete(id);
    task.run = { ...task.run, ...patch };
    if (task.run.status === "running") this.#flushedAt.set(id, this.#o.now());
    else this.#forget(id);
    await this.#save(task);
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
