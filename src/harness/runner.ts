import type { AskRegistry } from "../asks/registry.ts";
import { ASK_ERRORS } from "../asks/summary.ts";
import { canViewSession } from "../domain/access.ts";
import type { ActionResult, RunnerEvents, SessionRuns, SubmitResult } from "../domain/ports.ts";
import type { RunSession } from "../domain/run-feed.ts";
import type { QueuedMessage, RunView, SessionInfo, Step } from "../domain/types.ts";
import { describeError, ModelError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { isStorageError } from "../store/db.ts";
import type { SessionMembers } from "../store/members.ts";
import type { Store } from "../store/repos.ts";
import type { PendingTurn, TurnStore } from "../store/turns.ts";
import { inEveryLocale, strings } from "../strings.ts";
import { Emitter } from "../util/emitter.ts";
import { abortReason } from "../util/sleep.ts";
import type { Agent, AgentContext, ReportedStep } from "./agents/agent.ts";
import type { ToolDispatcher } from "./dispatcher.ts";
import { feedSession, placementOf } from "./run-reads.ts";
import { ShutdownError } from "./shutdown.ts";
import { askToolDefinition, filterToolsForSession } from "./tools.ts";
import { createTurnRunner, MAX_STEPS_KEPT } from "./turn-runner.ts";

export { MAX_STEPS_KEPT } from "./turn-runner.ts";

/** Messages one session (a chat, a topic) may have waiting behind its run, unless configured (QUEUE_MAX). */
export const DEFAULT_MAX_QUEUED = 20;

// The channel-facing shapes live in domain/ports.ts; re-exported for callers of the old path.
export type { ActionResult, RunnerEvents, SubmitResult } from "../domain/ports.ts";

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

/** A run's state that could not be written is retried at this pace, off the caller's path. */
const WRITE_RETRY_MS = [100, 250, 500, 1000, 2000];

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

/** The run lost the only surface it had (its Feishu card was recalled or deleted): it fails with `message`. */
class AbandonedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AbandonedError";
  }
}

/**
 * Sessions and their runs: one run at a time per session; messages that arrive while a run is busy are
 * queued in SQLite and run in order afterwards; cancel aborts the run and fails its pending asks;
 * retry re-runs the last input; runs a crash interrupted are resumed on start.
 */
export class SessionRunner implements SessionRuns {
  readonly #deps: RunnerDeps;
  readonly #active = new Map<string, ActiveRun>();
  readonly #events: Emitter<RunnerEvents>;
  #stopping = false;
  /** Runs whose latest state is not on disk yet, with when their writes started failing. */
  readonly #unsaved = new Map<string, RunView>();
  /** Runs a shutdown stopped, as they were then (text streamed since the last write included). */
  readonly #halted = new Map<string, RunView>();
  /** Sessions whose queue could not be drained (the database refused): drained again by the retry timer. */
  readonly #undrained = new Set<string>();
  /** Ended runs whose clean-up (pending turns, asks) the database refused: retried with the state above. */
  readonly #uncleaned = new Map<string, () => void>();
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #retryAttempt = 0;

  constructor(deps: RunnerDeps) {
    this.#deps = deps;
    this.#events = new Emitter<RunnerEvents>((error, event) => deps.onListenerError(error, String(event)));
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

  getSession(sessionId: string): SessionInfo | undefined {
    return this.#deps.store.getSession(sessionId);
  }

  session(sessionId: string): RunSession | undefined {
    return feedSession(this.getSession(sessionId));
  }

  canView(userId: string, sessionId: string): boolean {
    return canViewSession(this, userId, sessionId);
  }

  activeRun(sessionId: string): RunView | undefined {
    return this.#active.get(sessionId)?.run;
  }

  /** The active run, or else the most recent one. */
  currentRun(sessionId: string): RunView | undefined {
    return this.activeRun(sessionId) ?? this.#deps.store.latestRun(sessionId);
  }

  /**
   * One run by id: the live state while it is active (or as a shutdown left it), else the latest state
   * whose write is still being retried, else as saved. Channels render cards from this, so it must be the
   * newest state the runner knows, not only the one on disk.
   */
  getRun(runId: string): RunView | undefined {
    for (const active of this.#active.values()) if (active.run.id === runId) return active.run;
    return this.#halted.get(runId) ?? this.#unsaved.get(runId) ?? this.#deps.store.getRun(runId);
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

  /** What a snapshot shows of the queue: the first `limit`, texts cut to `chars`, and how many wait in all. */
  queuedPreview(sessionId: string, limit: number, chars: number) {
    const { store } = this.#deps;
    return { items: store.queuedPreview(sessionId, limit, chars), total: store.queuedCount(sessionId) };
  }

  hasQueuedFrom(sessionId: string, userId: string): boolean {
    return this.#deps.store.hasQueuedFrom(sessionId, userId);
  }

  now(): number {
    return this.#deps.now();
  }

  /** `userId` wrote to the bot, or clicked one of its cards, in the session's chat just now. */
  noteInChat(sessionId: string, userId: string): void {
    this.#deps.members?.note(sessionId, userId, this.#deps.now());
  }

  /** When `userId` was last seen in the session's chat, if ever. */
  lastSeenInChat(sessionId: string, userId: string): number | undefined {
    return this.#deps.members?.lastSeen(sessionId, userId);
  }

  submit(input: {
    sessionId: string;
    senderId: string;
    text: string;
    source?: Record<string, unknown>;
  }): SubmitResult {
    const session = this.#requireSession(input.sessionId);
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
      if (this.#active.has(session.id) || this.#stopping) {
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
   * Fails an active run that nobody can see or answer any more (its card is gone), with `reason` as its
   * error: its asks end at once, the agent is aborted, and the session's queue moves on. No sender check:
   * the channel, not a person, decides this.
   */
  abandon(runId: string, reason: string): ActionResult {
    const active = [...this.#active.values()].find((candidate) => candidate.run.id === runId);
    if (!active) return { ok: false, reason: "not_running" };
    this.#deps.registry.failAllForSession(active.run.sessionId, reason);
    active.controller.abort(new AbandonedError(reason));
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
      const card = placementOf(this.#deps.store.runSource(run.id));
      this.#events.emit("run_started", { run: snapshot(launched), card, resumed: true });
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
    // One last try for state the database refused; what still fails is resumed from disk next start.
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    if (this.#unsaved.size > 0 || this.#uncleaned.size > 0) this.#retryWrites();
    clearTimeout(this.#retryTimer);
  }

  /** Writes a new run and its user message (inside the caller's transaction); starts nothing. */
  #insertRun(
    session: SessionInfo,
    senderId: string,
    text: string,
    source: Record<string, unknown> | undefined,
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
  #begin(
    session: SessionInfo,
    run: RunView,
    source: Record<string, unknown> | undefined,
    queueId: string | undefined,
  ): void {
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
        // Not saved as ended (the next start resumes it), but its cards may still land its last state.
        this.#halted.set(run.id, run);
        this.#active.delete(session.id);
        return;
      }
      if (reason instanceof CancelledError) {
        run.status = "cancelled";
      } else if (reason instanceof AbandonedError) {
        run.status = "failed";
        run.error = reason.message;
        logger.info({ sessionId: session.id, runId: run.id, reason: reason.message }, "run abandoned");
      } else {
        run.status = "failed";
        // A write the database refused (a turn, the answer) fails the run; the card says what to check.
        run.error = isStorageError(error)
          ? strings.storageFailed(describeError(error))
          : describeError(error);
        // The same in every language when the words are ours; anything else reads as it was thrown.
        const words = isStorageError(error)
          ? inEveryLocale((s) => s.storageFailed(describeError(error)))
          : error instanceof ModelError
            ? error.words
            : undefined;
        if (words) run.errorWords = words;
        logger.warn({ sessionId: session.id, runId: run.id, err: error }, "run failed");
      }
    }
    for (const step of run.steps) if (step.status === "running") step.status = "failed";
    // An ask can only outlive its run if the agent stopped waiting for it; nobody would read the answer.
    const asks = registry.getPendingForSession(session.id).map((ask) => ask.requestId);
    this.#cleanUp(run.id, () => {
      this.#deps.turns?.dropRun(run.id);
      for (const requestId of asks) registry.cancel(requestId, ASK_ERRORS.cancelled);
    });
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
    const reported = new Map<string, Step>();
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
      reportStep: (key, update) => this.#reportStep(run, reported, key, update),
      reportBatch: ({ text, steps }) => {
        // A batch flushed after a cancel (the coalescer's end-of-turn flush) is the stopped agent's last word:
        // the cancelled card does not take it.
        if (signal.aborted) return;
        if (text !== undefined) run.text = text;
        for (const [key, update] of steps) this.#reportStep(run, reported, key, update, false);
        this.#touch(run);
      },
      callTool: async (name, args, options) => {
        const [result] = await callTools([
          {
            name,
            args,
            ...(options?.title ? { title: options.title } : {}),
            ...(options?.titleWords ? { titleWords: options.titleWords } : {}),
            ...(options?.signal ? { signal: options.signal } : {}),
          },
        ]);
        return result ?? "";
      },
      callTools,
    };
  }

  /** A step the agent ran itself (see `AgentContext.reportStep`): upserted by key, kept in call order. */
  #reportStep(
    run: RunView,
    reported: Map<string, Step>,
    key: string,
    update: ReportedStep | null,
    touch = true,
  ): void {
    const existing = reported.get(key);
    if (update === null) {
      if (!existing) return;
      reported.delete(key);
      const index = run.steps.indexOf(existing);
      if (index >= 0) run.steps.splice(index, 1);
    } else if (existing) {
      const finished = update.status === "done" || update.status === "failed";
      Object.assign(existing, update);
      if (update.summary === undefined) delete existing.summary;
      if (update.words === undefined) delete existing.words;
      if (finished && existing.endedAt === undefined) existing.endedAt = this.#deps.now();
    } else {
      const step: Step = { id: this.#deps.newId(), ...update, startedAt: this.#deps.now() };
      reported.set(key, step);
      run.steps.push(step);
      if (run.steps.length > MAX_STEPS_KEPT) run.steps.splice(0, run.steps.length - MAX_STEPS_KEPT);
    }
    if (run.status === "recovering") run.status = "running";
    if (touch) this.#touch(run);
  }

  /** Starts the next queued message: taking it off the queue and writing its run is one transaction. */
  #drain(sessionId: string): void {
    const { store } = this.#deps;
    let started: { session: SessionInfo; run: RunView; next: QueuedMessage } | undefined;
    try {
      started = store.transaction(() => {
        const session = store.getSession(sessionId);
        if (!session) return undefined;
        const next = store.dequeue(sessionId);
        if (!next) return undefined;
        return { session, next, run: this.#insertRun(session, next.senderId, next.text, next.source) };
      });
    } catch (error) {
      // The queue is still intact on disk; try again shortly rather than leave it stuck.
      this.#deps.logger.warn({ err: error, sessionId }, "queue not drained: the database refused; retrying");
      this.#undrained.add(sessionId);
      this.#scheduleRetry();
      return;
    }
    this.#undrained.delete(sessionId);
    if (!started) return;
    this.#emitQueue(sessionId);
    this.#begin(started.session, started.run, started.next.source, started.next.id);
  }

  /**
   * Writes the run, then tells listeners (some read the store back). A write the database refuses (locked by
   * another process, disk full) neither blocks nor throws into the run: listeners still hear the change, and
   * the state is kept and retried off this path until it lands. The run itself fails, visibly, at its next
   * write that cannot wait (a turn, the answer).
   */
  #touch(run: RunView): void {
    if (this.#unsaved.has(run.id)) {
      this.#unsaved.set(run.id, run);
      this.#scheduleRetry();
    } else {
      try {
        this.#deps.store.saveRun(run);
      } catch (error) {
        this.#deps.logger.warn(
          { err: error, runId: run.id },
          "run state not saved: the database refused; retrying",
        );
        this.#unsaved.set(run.id, run);
        this.#scheduleRetry();
      }
    }
    this.#events.emit("run_updated", snapshot(run));
  }

  /**
   * An ended run's clean-up writes. One the database refuses must not stop the run from ending (its card at
   * 失败, the queue behind it drained): it is retried with the run's state until it lands.
   */
  #cleanUp(runId: string, cleanUp: () => void): void {
    try {
      cleanUp();
    } catch (error) {
      if (!isStorageError(error)) throw error;
      this.#deps.logger.warn({ err: error, runId }, "run clean-up not saved: the database refused; retrying");
      this.#uncleaned.set(runId, cleanUp);
      this.#scheduleRetry();
    }
  }

  #scheduleRetry(): void {
    if (this.#retryTimer !== undefined) return;
    const delay = WRITE_RETRY_MS[Math.min(this.#retryAttempt, WRITE_RETRY_MS.length - 1)] ?? 2000;
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      this.#retryWrites();
    }, delay);
    this.#retryTimer.unref();
  }

  #retryWrites(): void {
    try {
      // Stops at the first refusal: each try may block for the busy timeout, the rest wait for the next round.
      for (const [runId, run] of this.#unsaved) {
        this.#deps.store.saveRun(run);
        this.#unsaved.delete(runId);
      }
      for (const [runId, cleanUp] of this.#uncleaned) {
        cleanUp();
        this.#uncleaned.delete(runId);
      }
      for (const sessionId of [...this.#undrained]) {
        this.#undrained.delete(sessionId);
        if (!this.#active.has(sessionId) && !this.#stopping) this.#drain(sessionId);
      }
    } catch (error) {
      this.#deps.logger.debug({ err: error }, "database still refuses writes");
    }
    if (this.#unsaved.size > 0 || this.#uncleaned.size > 0 || this.#undrained.size > 0) {
      this.#retryAttempt += 1;
      this.#scheduleRetry();
    } else {
      this.#retryAttempt = 0;
    }
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
