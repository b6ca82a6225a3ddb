import type { AskRegistry } from "../asks/registry.ts";
import { ASK_ERRORS } from "../asks/summary.ts";
import type { ActionResult, RunnerEvents, SessionRuns, SubmitResult } from "../domain/ports.ts";
import type { RunFeed } from "../domain/run-feed.ts";
import type { QueuedMessage, RunView, SessionInfo } from "../domain/types.ts";
import type { Logger } from "../logger.ts";
import type { SessionMembers } from "../store/members.ts";
import type { Store } from "../store/repos.ts";
import type { TurnStore } from "../store/turns.ts";
import { RetriedWrites } from "../store/write-retry.ts";
import { Emitter } from "../util/emitter.ts";
import { abortReason } from "../util/sleep.ts";
import type { Agent } from "./agents/agent.ts";
import type { ToolDispatcher } from "./dispatcher.ts";
import {
  abandonRun,
  type CommandDeps,
  cancelRun,
  promoteQueued,
  replaceRun,
  retryRun,
  unqueueMessage,
} from "./run-commands.ts";
import {
  agentContext,
  type ContextDeps,
  endSteps,
  endStopped,
  interrupted,
  snapshot,
} from "./run-context.ts";
import { type ActiveRun, placementOf, RunReads } from "./run-reads.ts";
import { ShutdownError } from "./shutdown.ts";

/** Messages one session (a chat, a topic) may have waiting behind its run, unless configured (QUEUE_MAX). */
export const DEFAULT_MAX_QUEUED = 20;

export interface RunnerDeps {
  store: Store;
  agent: Agent;
  dispatcher: ToolDispatcher;
  registry: AskRegistry;
  /** Pending turns (issue 16): a run waiting on a question resumes at that call after a restart. */
  turns?: TurnStore;
  now: () => number;
  newId: () => string;
  logger: Logger;
  onListenerError: (error: unknown, event: string) => void;
  /** Queued messages per session at most (DEFAULT_MAX_QUEUED): a full queue refuses the next message. */
  maxQueued?: number;
  /** Who has been seen in each session's chat (the viewing rule, access.ts); nobody is when absent. */
  members?: SessionMembers;
}

/**
 * Sessions and their runs: one run at a time per session; messages that arrive while a run is busy are
 * queued in SQLite and run in order afterwards; cancel aborts the run and fails its pending asks;
 * retry re-runs the last input; runs a crash interrupted are resumed on start. Its reads are RunReads
 * (run-reads.ts), its commands' rules run-commands.ts, a run's agent context run-context.ts.
 */
export class SessionRunner extends RunReads implements SessionRuns, RunFeed {
  readonly #deps: RunnerDeps;
  readonly #events: Emitter<RunnerEvents>;
  /** Writes the database refused (a run's state, an ended run's clean-up, a queue's next run): retried. */
  readonly #writes: RetriedWrites;
  readonly #commands: CommandDeps;
  readonly #context: ContextDeps;
  #stopping = false;

  constructor(deps: RunnerDeps) {
    super(deps);
    this.#deps = deps;
    this.#events = new Emitter<RunnerEvents>((error, event) => deps.onListenerError(error, String(event)));
    this.#writes = new RetriedWrites(deps.logger);
    this.#commands = {
      live: this.live,
      store: deps.store,
      registry: deps.registry,
      emitQueue: (sessionId) => this.#emitQueue(sessionId),
      submit: (input) => this.submit(input),
    };
    this.#context = {
      store: deps.store,
      dispatcher: deps.dispatcher,
      ...(deps.turns ? { turns: deps.turns } : {}),
      now: deps.now,
      newId: deps.newId,
      touch: (run) => this.#touch(run),
      emitUpdate: (run) => this.#events.emit("run_updated", snapshot(run)),
    };
  }

  on<K extends keyof RunnerEvents>(event: K, listener: (payload: RunnerEvents[K]) => void): () => void {
    return this.#events.on(event, listener);
  }

  /** `session.ownerId` is whoever the session is opened for now (a chat's sender): they are seen in its chat. */
  ensureSession(session: SessionInfo): SessionInfo {
    this.#deps.store.upsertSession(session);
    this.noteInChat(session.id, session.ownerId);
    return this.#deps.store.getSession(session.id) ?? session;
  }

  submit(input: {
    sessionId: string;
    senderId: string;
    text: string;
    source?: Record<string, unknown>;
  }): SubmitResult {
    const session = this.#deps.store.getSession(input.sessionId);
    if (!session) throw new Error(`Unknown session ${input.sessionId}`);
    const result = this.#persistAndStart(session, input, () => true);
    if (!result) throw new Error("unreachable: an unconditional submit always writes");
    return result;
  }

  /**
   * A channel's inbound message, made durable before the channel acknowledges it: `claim` (the channel's
   * de-duplication row), the session, and the run or queue row are written in ONE transaction. `claim`
   * returning false (a redelivery) writes nothing and returns undefined. A failed write throws and leaves
   * nothing behind, so the channel can refuse the delivery and Feishu sends it again.
   */
  accept(
    input: { session: SessionInfo; senderId: string; text: string; source?: Record<string, unknown> },
    claim: () => boolean,
  ): SubmitResult | undefined {
    return this.#persistAndStart(input.session, input, claim, true);
  }

  cancel(sessionId: string, userId: string): ActionResult {
    return cancelRun(this.#commands, sessionId, userId);
  }

  abandon(runId: string, reason: string): ActionResult {
    return abandonRun(this.#commands, runId, reason);
  }

  replace(sessionId: string, userId: string): ActionResult {
    return replaceRun(this.#commands, sessionId, userId);
  }

  retry(
    sessionId: string,
    userId: string,
    source?: Record<string, unknown>,
  ): ActionResult<{ result: SubmitResult }> {
    return retryRun(this.#commands, sessionId, userId, source);
  }

  promote(queueId: string, userId: string): ActionResult<{ position: number }> {
    return promoteQueued(this.#commands, queueId, userId);
  }

  unqueue(queueId: string, userId: string): ActionResult {
    return unqueueMessage(this.#commands, queueId, userId);
  }

  /** On start: resume runs a crash left unfinished, then run what is queued. */
  recover(): RunView[] {
    const resumed: RunView[] = [];
    for (const run of this.#deps.store.unfinishedRuns()) {
      const session = this.#deps.store.getSession(run.sessionId);
      if (!session || this.live.active.has(session.id)) continue;
      const launched = this.#launch(session, interrupted(run, this.#deps.turns?.ofRun(run.id) ?? []), true);
      const card = placementOf(this.#deps.store.runSource(run.id));
      this.#events.emit("run_started", { run: snapshot(launched), card, resumed: true });
      resumed.push(launched);
    }
    for (const sessionId of this.#deps.store.sessionsWithQueue())
      if (!this.live.active.has(sessionId)) this.#drain(sessionId);
    return resumed;
  }

  /** Resolves when no run is active (runs started by draining the queue included). */
  async idle(): Promise<void> {
    while (this.live.active.size > 0) await Promise.all([...this.live.active.values()].map((a) => a.done));
  }

  /** Stops every run without marking it finished, so the next start resumes it. */
  async stop(): Promise<void> {
    this.#stopping = true;
    for (const active of this.live.active.values()) active.controller.abort(new ShutdownError());
    await Promise.all([...this.live.active.values()].map((active) => active.done));
    // One last try for state the database refused; what still fails is resumed from disk next start.
    this.#writes.close();
  }

  #persistAndStart(
    given: SessionInfo,
    input: { senderId: string; text: string; source?: Record<string, unknown> },
    claim: () => boolean,
    upsert = false,
  ): SubmitResult | undefined {
    const { store } = this.#deps;
    // Everything up to the commit is synchronous, so no other submit can start a run in between.
    const planned = store.transaction(() => {
      if (!claim()) return undefined;
      if (upsert) store.upsertSession(given);
      const session = upsert ? (store.getSession(given.id) ?? given) : given;
      this.noteInChat(session.id, input.senderId);
      if (this.live.active.has(session.id) || this.#stopping) {
        // Unbounded, a busy chat's queue grew without end and every message re-sent every queued card.
        const limit = this.#deps.maxQueued ?? DEFAULT_MAX_QUEUED;
        if (store.queuedCount(session.id) >= limit) return { kind: "full" as const, limit };
        const queued: QueuedMessage = {
          id: this.#deps.newId(),
          sessionId: session.id,
          senderId: input.senderId,
          text: input.text,
          ...(input.source ? { source: input.source } : {}),
          createdAt: this.#deps.now(),
        };
        return { kind: "queued" as const, session, queued, position: store.enqueue(queued) };
      }
      return {
        kind: "started" as const,
        session,
        run: this.#insertRun(session, input.senderId, input.text, input.source),
      };
    });
    if (!planned) return undefined;
    if (planned.kind === "full") return planned;
    if (planned.kind === "queued") {
      this.#emitQueue(planned.session.id);
      return { kind: "queued", queued: planned.queued, position: planned.position };
    }
    this.#begin(planned.session, planned.run, input.source, undefined);
    return { kind: "started", run: planned.run };
  }

  /** Writes a new run and its user message (inside the caller's transaction); starts nothing. */
  #insertRun(
    session: SessionInfo,
    senderId: string,
    text: string,
    source?: Record<string, unknown>,
  ): RunView {
    const run: RunView = {
      id: this.#deps.newId(),
      sessionId: session.id,
      senderId,
      input: text,
      status: "running",
      steps: [],
      startedAt: this.#deps.now(),
    };
    this.#deps.store.insertRun(run, source);
    this.#deps.store.appendMessage(session.id, { role: "user", content: text, runId: run.id });
    return run;
  }

  /** Starts a run whose rows are committed. */
  #begin(session: SessionInfo, run: RunView, source?: Record<string, unknown>, queueId?: string): void {
    this.#launch(session, run, false);
    this.#events.emit("run_started", {
      run: snapshot(run),
      card: placementOf(source),
      ...(queueId ? { queueId } : {}),
      resumed: false,
    });
  }

  #launch(session: SessionInfo, run: RunView, resumed: boolean): RunView {
    const controller = new AbortController();
    const active: ActiveRun = { run, controller, done: Promise.resolve() };
    this.live.active.set(session.id, active);
    active.done = this.#execute(session, active, resumed).catch((error: unknown) => {
      this.#deps.logger.error({ err: error, runId: run.id }, "run bookkeeping failed");
    });
    return run;
  }

  async #execute(session: SessionInfo, active: ActiveRun, resumed: boolean): Promise<void> {
    const { run, controller } = active;
    const { store, agent, registry } = this.#deps;
    this.#touch(run);
    try {
      // Let the caller see the run before the agent does anything (and before a synchronous agent finishes).
      await Promise.resolve();
      const result = await agent.run(agentContext(this.#context, session, run, controller.signal, resumed));
      if (controller.signal.aborted) throw abortReason(controller.signal);
      run.status = result.ending === "rejected" ? "rejected" : "completed";
      run.text = result.text;
      if (run.status === "completed" || result.text !== "")
        store.appendMessage(session.id, { role: "assistant", content: result.text, runId: run.id });
    } catch (error) {
      const reason: unknown = controller.signal.aborted ? controller.signal.reason : undefined;
      if (reason instanceof ShutdownError) {
        // Not saved as ended (the next start resumes it), but its cards may still land its last state.
        this.live.halted.set(run.id, run);
        this.live.active.delete(session.id);
        return;
      }
      endStopped(run, reason, error, this.#deps.logger);
    }
    endSteps(run);
    // An ask can only outlive its run if the agent stopped waiting for it; nobody would read the answer.
    // The clean-up must not stop the run from ending (its card at 失败, the queue drained): retried if refused
    // (the registry retries its own settles).
    for (const ask of registry.getPendingForSession(session.id))
      void registry.cancel(ask.requestId, ASK_ERRORS.cancelled);
    this.#writes.write(`cleanup:${run.id}`, "run clean-up", () => this.#deps.turns?.dropRun(run.id));
    run.endedAt = this.#deps.now();
    this.live.active.delete(session.id);
    this.#touch(run);
    if (!this.#stopping) this.#drain(session.id);
  }

  /**
   * Starts the next queued message: taking it off the queue and writing its run is one transaction. When
   * the database refuses it, the queue is still intact on disk and is drained again by the retried writes.
   */
  #drain(sessionId: string): void {
    this.#writes.write(`drain:${sessionId}`, "queue's next run", () => {
      if (this.live.active.has(sessionId) || this.#stopping) return;
      const { store } = this.#deps;
      const started = store.transaction(() => {
        const session = store.getSession(sessionId);
        if (!session) return undefined;
        const next = store.dequeue(sessionId);
        if (!next) return undefined;
        return { session, next, run: this.#insertRun(session, next.senderId, next.text, next.source) };
      });
      if (!started) return;
      this.#emitQueue(sessionId);
      this.#begin(started.session, started.run, started.next.source, started.next.id);
    });
  }

  /**
   * Writes the run, then tells listeners (some read the store back). A write the database refuses (locked by
   * another process, disk full) neither blocks nor throws into the run: listeners still hear the change, and
   * the state is kept (reads see it, run-reads.ts) and retried off this path until it lands. The run itself
   * fails, visibly, at its next write that cannot wait (a turn, the answer).
   */
  #touch(run: RunView): void {
    const { unsaved } = this.live;
    unsaved.set(run.id, run);
    this.#writes.write(`run:${run.id}`, "run state", () => {
      this.#deps.store.saveRun(run);
      unsaved.delete(run.id);
    });
    this.#events.emit("run_updated", snapshot(run));
  }

  #emitQueue(sessionId: string): void {
    this.#events.emit("queue_changed", { sessionId, queued: this.#deps.store.queued(sessionId) });
  }
}
