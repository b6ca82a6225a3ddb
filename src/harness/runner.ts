import type { AskRegistry } from "../asks/registry.ts";
import { ASK_ERRORS } from "../asks/summary.ts";
import { describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import type { Store } from "../store/repos.ts";
import type { PendingTurn, TurnStore } from "../store/turns.ts";
import { Emitter } from "../util/emitter.ts";
import { abortReason } from "../util/sleep.ts";
import type { Agent, AgentContext } from "./agents/agent.ts";
import type { ToolDispatcher } from "./dispatcher.ts";
import { ShutdownError } from "./shutdown.ts";
import { askToolDefinition, filterToolsForSession } from "./tools.ts";
import { createTurnRunner } from "./turn-runner.ts";
import type { QueuedMessage, RunView, SessionInfo } from "./types.ts";

export { MAX_STEPS_KEPT } from "./turn-runner.ts";

export type SubmitResult =
  | { kind: "started"; run: RunView }
  | { kind: "queued"; queued: QueuedMessage; position: number };

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
}

interface ActiveRun {
  run: RunView;
  controller: AbortController;
  done: Promise<void>;
}

class CancelledError extends Error {
  constructor() {
    super(ASK_ERRORS.cancelled);
    this.name = "CancelledError";
  }
}

/**
 * Sessions and their runs: one run at a time per session; messages that arrive while a run is busy are
 * queued in SQLite and run in order afterwards; cancel aborts the run and fails its pending asks;
 * retry re-runs the last input; runs a crash interrupted are resumed on start.
 */
export class SessionRunner {
  readonly #deps: RunnerDeps;
  readonly #active = new Map<string, ActiveRun>();
  readonly #events: Emitter<RunnerEvents>;
  #stopping = false;

  constructor(deps: RunnerDeps) {
    this.#deps = deps;
    this.#events = new Emitter<RunnerEvents>((error, event) => deps.onListenerError(error, String(event)));
  }

  on<K extends keyof RunnerEvents>(event: K, listener: (payload: RunnerEvents[K]) => void): () => void {
    return this.#events.on(event, listener);
  }

  ensureSession(session: SessionInfo): SessionInfo {
    this.#deps.store.upsertSession(session);
    return this.#deps.store.getSession(session.id) ?? session;
  }

  getSession(sessionId: string): SessionInfo | undefined {
    return this.#deps.store.getSession(sessionId);
  }

  activeRun(sessionId: string): RunView | undefined {
    return this.#active.get(sessionId)?.run;
  }

  /** The active run, or else the most recent one. */
  currentRun(sessionId: string): RunView | undefined {
    return this.activeRun(sessionId) ?? this.#deps.store.latestRun(sessionId);
  }

  /** One run by id: the live state while it is active, else as last saved. */
  getRun(runId: string): RunView | undefined {
    for (const active of this.#active.values()) if (active.run.id === runId) return active.run;
    return this.#deps.store.getRun(runId);
  }

  /** A session's runs, newest first, the active one as it is now. */
  runs(sessionId: string, limit: number): RunView[] {
    const active = this.activeRun(sessionId);
    return this.#deps.store
      .recentRuns(sessionId, limit)
      .map((run) => (active && run.id === active.id ? active : run));
  }

  queued(sessionId: string): QueuedMessage[] {
    return this.#deps.store.queued(sessionId);
  }

  submit(input: {
    sessionId: string;
    senderId: string;
    text: string;
    source?: Record<string, unknown>;
  }): SubmitResult {
    const session = this.#requireSession(input.sessionId);
    if (this.#active.has(session.id) || this.#stopping) {
      const queued: QueuedMessage = {
        id: this.#deps.newId(),
        sessionId: session.id,
        senderId: input.senderId,
        text: input.text,
        ...(input.source ? { source: input.source } : {}),
        createdAt: this.#deps.now(),
      };
      const position = this.#deps.store.enqueue(queued);
      this.#emitQueue(session.id);
      return { kind: "queued", queued, position };
    }
    return {
      kind: "started",
      run: this.#start(session, input.senderId, input.text, input.source, undefined),
    };
  }

  /** Only the run's sender may cancel it. */
  cancel(sessionId: string, userId: string): ActionResult {
    const active = this.#active.get(sessionId);
    if (!active) return { ok: false, reason: "not_running" };
    if (active.run.senderId !== userId) return { ok: false, reason: "forbidden" };
    // Fail the asks first so the waiting tool call returns "Session cancelled", then abort the run.
    this.#deps.registry.failAllForSession(sessionId, ASK_ERRORS.cancelled);
    active.controller.abort(new CancelledError());
    return { ok: true };
  }

  /**
   * 取消并处理新消息: the sender lets the message queued behind a question replace the run. Its asks end as
   * superseded, the run as cancelled, and the queue runs next as after any cancel.
   */
  replace(sessionId: string, userId: string): ActionResult {
    const active = this.#active.get(sessionId);
    if (!active) return { ok: false, reason: "not_running" };
    if (active.run.senderId !== userId) return { ok: false, reason: "forbidden" };
    if (this.#deps.store.queued(sessionId).length === 0) return { ok: false, reason: "not_found" };
    this.#deps.registry.supersede(sessionId, ASK_ERRORS.cancelled);
    active.controller.abort(new CancelledError());
    return { ok: true };
  }

  /** Re-runs the last input of a failed or cancelled run, as its sender. */
  retry(
    sessionId: string,
    userId: string,
    source?: Record<string, unknown>,
  ): ActionResult<{ result: SubmitResult }> {
    if (this.#active.has(sessionId)) return { ok: false, reason: "not_retryable" };
    const last = this.#deps.store.latestRun(sessionId);
    if (!last) return { ok: false, reason: "not_found" };
    if (last.senderId !== userId) return { ok: false, reason: "forbidden" };
    if (last.status !== "failed" && last.status !== "cancelled")
      return { ok: false, reason: "not_retryable" };
    return {
      ok: true,
      result: this.submit({ sessionId, senderId: userId, text: last.input, ...(source ? { source } : {}) }),
    };
  }

  /** 插队: only the queued message's sender may move it to the front. */
  promote(queueId: string, userId: string): ActionResult<{ position: number }> {
    const queued = this.#deps.store.getQueued(queueId);
    if (!queued) return { ok: false, reason: "not_found" };
    if (queued.senderId !== userId) return { ok: false, reason: "forbidden" };
    this.#deps.store.moveToFront(queueId);
    this.#emitQueue(queued.sessionId);
    return { ok: true, position: 1 };
  }

  /** 取消排队: only the queued message's sender may withdraw it. */
  unqueue(queueId: string, userId: string): ActionResult {
    const queued = this.#deps.store.getQueued(queueId);
    if (!queued) return { ok: false, reason: "not_found" };
    if (queued.senderId !== userId) return { ok: false, reason: "forbidden" };
    this.#deps.store.removeQueued(queueId);
    this.#emitQueue(queued.sessionId);
    return { ok: true };
  }

  /** On start: resume runs a crash left unfinished, then run what is queued. */
  recover(): RunView[] {
    const resumed: RunView[] = [];
    for (const run of this.#deps.store.unfinishedRuns()) {
      const session = this.#deps.store.getSession(run.sessionId);
      if (!session || this.#active.has(session.id)) continue;
      // Steps that were in flight when the process died did not finish; say so rather than spin forever.
      // Those of a turn that waits on a question are still in flight: that turn resumes where it waited.
      const waiting = this.#deps.turns?.ofRun(run.id) ?? [];
      const resumes = new Set(
        waiting.flatMap((turn) => turn.calls.filter((c) => c.result === undefined).map((c) => c.stepId)),
      );
      for (const step of run.steps)
        if (step.status === "running" && !resumes.has(step.id)) step.status = "failed";
      const status = waiting.length > 0 ? "running" : "recovering";
      const launched = this.#launch(session, { ...run, status }, true);
      const source = this.#deps.store.runSource(run.id);
      this.#events.emit("run_started", { run: snapshot(launched), source, resumed: true });
      resumed.push(launched);
    }
    for (const sessionId of this.#deps.store.sessionsWithQueue()) {
      if (!this.#active.has(sessionId)) this.#drain(sessionId);
    }
    return resumed;
  }

  /** Resolves when no run is active (runs started by draining the queue included). */
  async idle(): Promise<void> {
    while (this.#active.size > 0) {
      await Promise.all([...this.#active.values()].map((active) => active.done));
    }
  }

  /** Stops every run without marking it finished, so the next start resumes it. */
  async stop(): Promise<void> {
    this.#stopping = true;
    for (const active of this.#active.values()) active.controller.abort(new ShutdownError());
    await Promise.all([...this.#active.values()].map((active) => active.done));
  }

  #start(
    session: SessionInfo,
    senderId: string,
    text: string,
    source: Record<string, unknown> | undefined,
    queueId: string | undefined,
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
    this.#launch(session, run, false);
    this.#events.emit("run_started", {
      run: snapshot(run),
      source,
      ...(queueId ? { queueId } : {}),
      resumed: false,
    });
    return run;
  }

  #launch(session: SessionInfo, run: RunView, resumed: boolean): RunView {
    const controller = new AbortController();
    const active: ActiveRun = { run, controller, done: Promise.resolve() };
    this.#active.set(session.id, active);
    active.done = this.#execute(session, active, resumed).catch((error: unknown) => {
      this.#deps.logger.error({ err: error, runId: run.id }, "run bookkeeping failed");
    });
    return run;
  }

  async #execute(session: SessionInfo, active: ActiveRun, resumed: boolean): Promise<void> {
    const { run, controller } = active;
    const { store, agent, registry, logger } = this.#deps;
    this.#touch(run);
    try {
      // Let the caller see the run before the agent does anything (and before a synchronous agent finishes).
      await Promise.resolve();
      const result = await agent.run(this.#context(session, run, controller.signal, resumed));
      if (controller.signal.aborted) throw abortReason(controller.signal);
      run.status = "completed";
      run.text = result.text;
      store.appendMessage(session.id, { role: "assistant", content: result.text, runId: run.id });
    } catch (error) {
      const reason: unknown = controller.signal.aborted ? controller.signal.reason : undefined;
      if (reason instanceof ShutdownError) {
        this.#active.delete(session.id);
        return;
      }
      if (reason instanceof CancelledError) {
        run.status = "cancelled";
      } else {
        run.status = "failed";
        run.error = describeError(error);
        logger.warn({ sessionId: session.id, runId: run.id, err: error }, "run failed");
      }
    }
    for (const step of run.steps) if (step.status === "running") step.status = "failed";
    this.#deps.turns?.dropRun(run.id);
    // An ask can only outlive its run if the agent stopped waiting for it; nobody would read the answer.
    registry.failAllForSession(session.id, ASK_ERRORS.cancelled);
    run.endedAt = this.#deps.now();
    this.#active.delete(session.id);
    this.#touch(run);
    if (!this.#stopping) this.#drain(session.id);
  }

  #context(session: SessionInfo, run: RunView, signal: AbortSignal, resumed: boolean): AgentContext {
    const { dispatcher, store, turns } = this.#deps;
    const pendingTurns: PendingTurn[] = resumed ? (turns?.ofRun(run.id) ?? []) : [];
    const callTools = createTurnRunner(
      {
        dispatcher,
        store,
        turns,
        newId: this.#deps.newId,
        now: this.#deps.now,
        touch: (r) => this.#touch(r),
      },
      session,
      run,
      signal,
      [...pendingTurns],
    );
    const tools = filterToolsForSession([askToolDefinition(), ...dispatcher.definitions()], session);
    return {
      session,
      runId: run.id,
      senderId: run.senderId,
      input: run.input,
      history: store.history(session.id),
      resumed,
      pendingTurns: pendingTurns.map((turn) => ({
        text: turn.text,
        calls: turn.calls.map(({ id, name, arguments: args }) => ({ id, name, arguments: args })),
      })),
      tools,
      signal,
      reportText: (text) => {
        run.text = text;
        this.#events.emit("run_updated", snapshot(run));
      },
      callTool: async (name, args, options) => {
        const [result] = await callTools([
          { name, args, ...(options?.title ? { title: options.title } : {}) },
        ]);
        return result ?? "";
      },
      callTools,
    };
  }

  #drain(sessionId: string): void {
    const next = this.#deps.store.dequeue(sessionId);
    if (!next) return;
    this.#emitQueue(sessionId);
    const session = this.#deps.store.getSession(sessionId);
    if (!session) return;
    this.#start(session, next.senderId, next.text, next.source, next.id);
  }

  #touch(run: RunView): void {
    this.#deps.store.saveRun(run);
    this.#events.emit("run_updated", snapshot(run));
  }

  #emitQueue(sessionId: string): void {
    this.#events.emit("queue_changed", { sessionId, queued: this.#deps.store.queued(sessionId) });
  }

  #requireSession(sessionId: string): SessionInfo {
    const session = this.#deps.store.getSession(sessionId);
    if (!session) throw new Error(`Unknown session ${sessionId}`);
    return session;
  }
}

function snapshot(run: RunView): RunView {
  return { ...run, steps: run.steps.map((step) => ({ ...step })) };
}
