import type { QueuedPreview, RunEvents, RunFeed } from "../domain/run-feed.ts";
import { isTerminal, type QueuedMessage, type RunView } from "../domain/types.ts";
import type { Store } from "../store/repos.ts";
import { Emitter } from "../util/emitter.ts";

/**
 * The runs other instances run (issue 27), as this instance's hub and session pages show them: each is read
 * again from its row when the instance running it announces a change (run-wakeups.ts: `run:<id>`, ids only)
 * and on every poll, and told to readers as the runner tells of its own (`run_started` the first time,
 * `run_updated` at each change), so a page connected here sees it live. The same for a session's queue
 * (`queue:<session id>`), whoever queued the message. It never holds a session: the runner's feed, reading the
 * same store, answers for sessions, histories and queues; this one adds what is live elsewhere, the active run.
 *
 * The runs this instance runs are its runner's to tell: their wake-ups (its own, coming back) are ignored.
 * Nothing here writes, and a wake-up is never trusted: a late, repeated or forged one costs one read.
 */
export interface RemoteRunDeps {
  store: Pick<Store, "getRun" | "unfinishedRuns" | "queue">;
  onError: (error: unknown, what: string) => void;
}

/** Runs remembered as this instance's own, or as seen ended: enough for the wake-ups still on their way. */
const REMEMBERED = 2_000;

interface Copy {
  run: RunView;
  /** The run as last told, to tell nothing when a read finds it unchanged (a poll, an echo). */
  json: string;
  /** The read it came from (reads may overlap: an older one never overwrites a newer). */
  read: number;
}

export class RemoteRuns implements RunFeed {
  readonly #deps: RemoteRunDeps;
  readonly #events: Emitter<RunEvents>;
  /** Unfinished runs of other instances, by id, and the one of each session. */
  readonly #copies = new Map<string, Copy>();
  readonly #bySession = new Map<string, string>();
  /** Runs this instance runs (its runner tells of them) and runs seen ended here, oldest first. */
  readonly #mine = new Map<string, true>();
  readonly #ended = new Map<string, true>();
  /** Each session's queue as last told (its ids in order), for the sessions whose queue is not empty. */
  readonly #queues = new Map<string, string>();
  #reads = 0;

  constructor(deps: RemoteRunDeps) {
    this.#deps = deps;
    this.#events = new Emitter<RunEvents>((error, event) => deps.onError(error, String(event)));
  }

  on<K extends keyof RunEvents>(event: K, listener: (payload: RunEvents[K]) => void): () => void {
    return this.#events.on(event, listener);
  }

  /** A run this instance started or resumed: its runner tells of it (an adopted run's copy goes). */
  ownRun(runId: string): void {
    remember(this.#mine, runId, true);
    const copy = this.#copies.get(runId);
    if (copy) this.#forget(copy.run);
  }

  /** A run this instance lost to another (its lease): from now on it is another's, told from its row. */
  lostRun(runId: string): void {
    this.#mine.delete(runId);
  }

  /** A queue as this instance's runner told it: a wake-up that finds it so tells nothing again. */
  ownQueue(sessionId: string, queued: readonly QueuedMessage[]): void {
    this.#noteQueue(sessionId, queued);
  }

  /** A wake-up `run:<id>`: the run is read again and, if it changed, told. */
  async refresh(runId: string): Promise<void> {
    if (this.#mine.has(runId)) return;
    const read = ++this.#reads;
    const run = await this.#deps.store.getRun(runId);
    if (run) this.#apply(run, read);
  }

  /** A wake-up `queue:<session id>`: the session's queue is read again and, if it changed, told. */
  async refreshQueue(sessionId: string): Promise<void> {
    const queued = await this.#deps.store.queue.queued(sessionId);
    if ((this.#queues.get(sessionId) ?? "") === signature(queued)) return;
    this.#noteQueue(sessionId, queued);
    this.#events.emit("queue_changed", { sessionId, queued });
  }

  /**
   * A poll, or the wake-up connection came back: every unfinished run is read in one query, the copies that
   * are not unfinished any more are read for their end, and the queues of their sessions again. A wake-up
   * that was lost costs this one poll.
   */
  async poll(): Promise<void> {
    const read = ++this.#reads;
    const unfinished = await this.#deps.store.unfinishedRuns();
    const open = new Set(unfinished.map((run) => run.id));
    for (const run of unfinished) if (!this.#mine.has(run.id)) this.#apply(run, read);
    const gone = [...this.#copies.values()].filter((copy) => !open.has(copy.run.id));
    const sessions = new Set([...this.#bySession.keys(), ...this.#queues.keys()]);
    await Promise.all([
      ...gone.map((copy) => this.refresh(copy.run.id)),
      ...[...sessions].map((sessionId) => this.refreshQueue(sessionId)),
    ]);
  }

  /** How many runs of other instances are shown as under way here (for tests and /metrics). */
  get size(): number {
    return this.#copies.size;
  }

  #apply(run: RunView, read: number): void {
    if (this.#mine.has(run.id)) return;
    const copy = this.#copies.get(run.id);
    if (copy && copy.read > read) return;
    // Told ended already: a run never starts again (a retry is a new run), so any later read is old news.
    if (this.#ended.has(run.id)) return;
    const json = JSON.stringify(run);
    if (copy?.json === json) {
      copy.read = read;
      return;
    }
    if (isTerminal(run)) {
      if (copy) this.#forget(copy.run);
      remember(this.#ended, run.id, true);
    } else {
      const previous = this.#bySession.get(run.sessionId);
      const older = previous !== undefined && previous !== run.id ? this.#copies.get(previous) : undefined;
      // A session has one unfinished run at a time: a newer one there means the older ended.
      if (older) this.#forget(older.run);
      this.#copies.set(run.id, { run, json, read });
      this.#bySession.set(run.sessionId, run.id);
    }
    // First seen here: started, as the runner says of its own (no card: the run's own instance draws it).
    if (!copy) this.#events.emit("run_started", { run, card: undefined, resumed: false });
    this.#events.emit("run_updated", run);
  }

  #forget(run: RunView): void {
    this.#copies.delete(run.id);
    if (this.#bySession.get(run.sessionId) === run.id) this.#bySession.delete(run.sessionId);
  }

  #noteQueue(sessionId: string, queued: readonly QueuedMessage[]): void {
    if (queued.length > 0) this.#queues.set(sessionId, signature(queued));
    else this.#queues.delete(sessionId);
  }

  // The feed's reads: what is live elsewhere (the active run); the runner's feed holds every session.
  activeRun(sessionId: string): RunView | undefined {
    const id = this.#bySession.get(sessionId);
    return id === undefined ? undefined : this.#copies.get(id)?.run;
  }

  async getRun(runId: string): Promise<RunView | undefined> {
    return this.#copies.get(runId)?.run;
  }

  async currentRun(sessionId: string): Promise<RunView | undefined> {
    return this.activeRun(sessionId);
  }

  async runs(): Promise<RunView[]> {
    return [];
  }

  async queuedPreview(): Promise<QueuedPreview> {
    return { items: [], total: 0 };
  }

  async session(): Promise<undefined> {
    return undefined;
  }

  async canView(): Promise<boolean> {
    return false;
  }
}

/** A queue's messages by id, in order: what a reader shows of it changes only with this. */
const signature = (queued: readonly QueuedMessage[]) => queued.map((message) => message.id).join(",");

function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  for (const oldest of map.keys()) {
    if (map.size <= REMEMBERED) break;
    map.delete(oldest);
  }
}
