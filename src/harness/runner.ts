import type { AskRegistry } from "../asks/registry.ts";
import { ASK_ERRORS } from "../asks/summary.ts";
import type { RunnerEvents, SessionRuns, SubmitResult } from "../domain/ports.ts";
import type { CardPlacement, RunFeed } from "../domain/run-feed.ts";
import type { RunView, SessionInfo } from "../domain/types.ts";
import type { Logger } from "../logger.ts";
import type { SessionMembers } from "../store/members.ts";
import type { Store } from "../store/repos.ts";
import type { StoreSql } from "../store/sql.ts";
import type { TurnStore } from "../store/turns.ts";
import { Emitter } from "../util/emitter.ts";
import type { Repeating } from "../util/every.ts";
import { KeyedLock } from "../util/keyed-lock.ts";
import { abortReason } from "../util/sleep.ts";
import type { Agent } from "./agents/agent.ts";
import type { ToolDispatcher } from "./dispatcher.ts";
import * as commands from "./run-commands.ts";
import {
  agentContext,
  type ContextDeps,
  endSteps,
  endStopped,
  interrupted,
  snapshot,
} from "./run-context.ts";
import { type IntakeDeps, takeIn, takeNext } from "./run-intake.ts";
import { type RunOwnership, soleOwner } from "./run-ownership.ts";
import { type ActiveRun, feedSession, placementOf, RunReads } from "./run-reads.ts";
import { adoptEvery, resumeInterrupted } from "./run-recovery.ts";
import { RunStateWrites } from "./run-state-writes.ts";
import { RunLostError, ShutdownError } from "./shutdown.ts";

/** Where a run comes from: a message (its source, a queue entry's id), or a resumed run (its card, or null). */
type RunOrigin = {
  source?: Record<string, unknown> | undefined;
  queueId?: string;
  resumed?: CardPlacement | null;
};

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
  /** Which runs are this process's (several instances: run-leases.ts); every one when absent. */
  ownership?: RunOwnership;
}

/**
 * Sessions and their runs: one run at a time per session; messages that arrive while a run is busy are
 * queued in the store and run in order afterwards; cancel aborts the run and fails its pending asks;
 * retry re-runs the last input; runs a crash interrupted are resumed on start. Its reads are RunReads
 * (run-reads.ts), its commands' rules run-commands.ts, a run's agent context run-context.ts.
 */
export class SessionRunner extends RunReads implements SessionRuns<StoreSql>, RunFeed {
  readonly #deps: RunnerDeps;
  readonly #events: Emitter<RunnerEvents>;
  /** A run's state, an ended run's clean-up, a queue's next run: written off the run's path, retried. */
  readonly #state: RunStateWrites;
  readonly #commands: commands.CommandDeps;
  readonly #context: ContextDeps;
  /** "A run under way? then queue, else start" happens for one message of a session at a time. */
  readonly #sessions = new KeyedLock();
  readonly #intake: IntakeDeps;
  /** Sessions with a run a crash interrupted, not resumed yet (prepareRecovery, recover). */
  readonly #resuming = new Set<string>();
  readonly #owner: RunOwnership;
  /** The look for runs to adopt (several instances), from the first recover on. */
  #adopting: Repeating | undefined;
  #stopping = false;

  constructor(deps: RunnerDeps) {
    super(deps);
    this.#deps = deps;
    this.#events = new Emitter<RunnerEvents>((error, event) => deps.onListenerError(error, String(event)));
    this.#owner = deps.ownership ?? soleOwner;
    this.#state = new RunStateWrites({
      store: deps.store,
      turns: deps.turns,
      owner: this.#owner,
      unsaved: this.live.unsaved,
      logger: deps.logger,
      lost: (runId) => this.#lost(runId),
    });
    this.#owner.onLost((runId) => this.#lost(runId));
    this.#intake = {
      store: deps.store,
      members: deps.members,
      now: deps.now,
      newId: deps.newId,
      maxQueued: deps.maxQueued ?? DEFAULT_MAX_QUEUED,
      busy: (sessionId) => this.live.active.has(sessionId) || this.#stopping || this.#resuming.has(sessionId),
      ownership: this.#owner,
    };
    this.#commands = {
      live: this.live,
      store: deps.store,
      registry: deps.registry,
      emitQueue: (sessionId) => this.#emitQueue(sessionId),
      latest: (sessionId) => this.currentRun(sessionId),
      submit: (input) => this.submit(input),
      forward: this.#owner.forward?.bind(this.#owner),
    };
    this.#owner.onCommand?.((command) => commands.obeyForwarded(this.#commands, command));
    this.#context = {
      store: deps.store,
      dispatcher: deps.dispatcher,
      ...(deps.turns ? { turns: deps.turns } : {}),
      now: deps.now,
      newId: deps.newId,
      touch: (run) => this.#touch(run),
      guarded: (runId, body) => this.#owner.guarded(deps.store, runId, body),
      emitUpdate: (run) => this.#events.emit("run_updated", snapshot(run)),
    };
  }

  on<K extends keyof RunnerEvents>(event: K, listener: (payload: RunnerEvents[K]) => void): () => void {
    return this.#events.on(event, listener);
  }

  /** `session.ownerId` is whoever the session is opened for now (a chat's sender): they are seen in its chat. */
  async ensureSession(session: SessionInfo): Promise<SessionInfo> {
    await this.#deps.store.upsertSession(session);
    await this.noteInChat(session.id, session.ownerId);
    return (await this.#deps.store.getSession(session.id)) ?? session;
  }

  async submit(input: {
    sessionId: string;
    senderId: string;
    text: string;
    source?: Record<string, unknown>;
  }): Promise<SubmitResult> {
    const session = await this.#deps.store.getSession(input.sessionId);
    if (!session) throw new Error(`Unknown session ${input.sessionId}`);
    const result = await this.#persistAndStart(session, input, async () => true);
    if (!result) throw new Error("unreachable: an unconditional submit always writes");
    return result;
  }

  /**
   * A channel's inbound message, made durable before the channel acknowledges it: `claim` (its de-duplication
   * row), the session, and the run or queue row in ONE transaction; `claim` false (a redelivery) writes nothing
   * and gives undefined. A failed write throws, leaving nothing: the channel refuses, Feishu sends it again.
   */
  accept(
    input: { session: SessionInfo; senderId: string; text: string; source?: Record<string, unknown> },
    claim: (tx: StoreSql) => Promise<boolean>,
  ): Promise<SubmitResult | undefined> {
    return this.#persistAndStart(input.session, input, claim, true);
  }

  // What a person may do to a run or a queued message, and who may: run-commands.ts.
  cancel = (sessionId: string, userId: string) => commands.cancelRun(this.#commands, sessionId, userId);
  abandon = (runId: string, reason: string) => commands.abandonRun(this.#commands, runId, reason);
  replace = (sessionId: string, userId: string) => commands.replaceRun(this.#commands, sessionId, userId);
  retry = (sessionId: string, userId: string, source?: Record<string, unknown>) =>
    commands.retryRun(this.#commands, sessionId, userId, source);
  promote = (queueId: string, userId: string) => commands.promoteQueued(this.#commands, queueId, userId);
  unqueue = (queueId: string, userId: string) => commands.unqueueMessage(this.#commands, queueId, userId);

  /** Before anything is taken in: a session a crash left a run in queues its messages until `recover`. */
  async prepareRecovery(): Promise<void> {
    for (const run of await this.#deps.store.unfinishedRuns()) this.#resuming.add(run.sessionId);
  }

  /**
   * On start: resume runs a crash left unfinished, then run what is queued; with several instances, again
   * every `adoptEveryMs`: the runs and queues whose instance is gone (takeover).
   */
  recover(): Promise<RunView[]> {
    if (!this.#stopping) this.#adopting ??= adoptEvery(this.#owner, () => this.recover(), this.#deps.logger);
    return resumeInterrupted({
      store: this.#deps.store,
      turns: this.#deps.turns,
      sessions: this.#sessions,
      resuming: this.#resuming,
      ownership: this.#owner,
      holdAsks: (runId) => this.#deps.registry.holdRun(runId),
      pinned: async (runId) => (await this.#deps.agent.pinned?.(runId)) ?? false,
      abandon: (runId, reason) => void this.abandon(runId, reason),
      busy: (sessionId) => this.live.active.has(sessionId) || this.#stopping,
      resume: (session, run, waiting, card) =>
        this.#begin(session, interrupted(run, waiting), { resumed: card ?? null }),
      drain: (sessionId) => this.live.active.has(sessionId) || this.#drain(sessionId),
    });
  }

  /** Resolves when no run is active and their state is written (runs started by draining the queue included). */
  async idle(): Promise<void> {
    for (;;) {
      await this.#state.queue.flushed();
      if (this.live.active.size === 0) {
        // Writing may have started the queue's next run; none did once nothing is written or running.
        if (this.#state.queue.waiting === 0 || this.#state.queue.retrying) return;
        continue;
      }
      await Promise.all([...this.live.active.values()].map((a) => a.done));
    }
  }

  /** Stops every run without marking it finished, so the next start resumes it. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#adopting?.stop();
    // A message being taken in starts nothing now; its transaction ends first.
    await this.#sessions.idle();
    for (const active of this.live.active.values()) active.controller.abort(new ShutdownError());
    await Promise.all([...this.live.active.values()].map((active) => active.done));
    // One last try for state the database refused; what still fails is resumed from disk next start.
    await this.#state.queue.close();
    // Stopped runs are given up at once, so another instance adopts them at its next look, not after the TTL.
    for (const runId of this.live.halted.keys()) await this.#owner.released(runId).catch(() => undefined);
    await this.#owner.close();
  }

  async #persistAndStart(
    given: SessionInfo,
    input: { senderId: string; text: string; source?: Record<string, unknown> },
    claim: (tx: StoreSql) => Promise<boolean>,
    upsert = false,
  ): Promise<SubmitResult | undefined> {
    // From the check for a run under way to the run in `live.active`, no other message of the session may
    // come between: one at a time per session.
    return this.#sessions.run(given.id, async () => {
      const planned = await takeIn(this.#intake, given, input, claim, upsert);
      if (!planned) return undefined;
      if (planned.kind === "full") return planned;
      if (planned.kind === "queued") {
        this.#emitQueue(planned.session.id);
        return { kind: "queued", queued: planned.queued, position: planned.position };
      }
      // Stopping meanwhile: its row says running, so the next start resumes it.
      if (!this.#stopping) this.#begin(planned.session, planned.run, { source: input.source });
      return { kind: "started", run: planned.run };
    });
  }

  /** Starts a run whose rows are committed: a new one (from its message's source), or a resumed one (its card). */
  #begin(session: SessionInfo, run: RunView, from: RunOrigin): RunView {
    const resumed = from.resumed !== undefined;
    const controller = new AbortController();
    const active: ActiveRun = { run, controller, done: Promise.resolve() };
    this.live.active.set(session.id, active);
    active.done = this.#execute(session, active, resumed).catch((error: unknown) => {
      this.#deps.logger.error({ err: error, runId: run.id }, "run bookkeeping failed");
    });
    const shown = feedSession(session);
    this.#events.emit("run_started", {
      run: snapshot(run),
      card: resumed ? (from.resumed ?? undefined) : placementOf(from.source),
      ...(from.queueId ? { queueId: from.queueId } : {}),
      resumed,
      ...(shown ? { session: shown } : {}),
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
      if (controller.signal.aborted) throw abortReason(controller.signal); // ended before it began (abandon)
      const context = await agentContext(this.#context, session, run, controller.signal, resumed);
      const result = await agent.run(context);
      if (controller.signal.aborted) throw abortReason(controller.signal);
      run.status = result.ending === "rejected" ? "rejected" : "completed";
      run.text = result.text;
      if (run.status === "completed" || result.text !== "")
        await this.#owner.guarded(store, run.id, (held) =>
          held.appendMessage(session.id, { role: "assistant", content: result.text, runId: run.id }),
        );
    } catch (error) {
      const reason: unknown = controller.signal.aborted ? controller.signal.reason : undefined;
      if (reason instanceof ShutdownError && !(reason instanceof RunLostError)) {
        // Not saved as ended (the next start resumes it), but its cards may still land its last state.
        this.live.halted.set(run.id, run);
        this.live.active.delete(session.id);
        return;
      }
      if (this.#owner.holds(run.id)) endStopped(run, reason, error, this.#deps.logger);
    }
    // Lost to another instance (RunLostError, the fence refused a write): it ends the run there, not here.
    if (!this.#owner.holds(run.id)) return void this.live.active.delete(session.id);
    endSteps(run);
    // An ask can only outlive its run if the agent stopped waiting for it; nobody would read the answer.
    // The clean-up must not stop the run from ending (its card at 失败, the queue drained): retried if refused
    // (the registry retries its own settles).
    for (const ask of registry.getPendingForSession(session.id))
      void registry.cancel(ask.requestId, ASK_ERRORS.cancelled);
    run.endedAt = this.#deps.now();
    this.live.active.delete(session.id);
    this.#touch(run);
    this.#state.ended(run);
    if (!this.#stopping) this.#drain(session.id);
  }

  /** The run's lease went to another instance: it stops here without a word (its asks stay pending). */
  #lost(runId: string): void {
    for (const active of this.live.active.values())
      if (active.run.id === runId) active.controller.abort(new RunLostError(runId));
  }

  /**
   * Starts the next queued message: taking it off the queue and writing its run is one transaction. When
   * the database refuses it, the queue is still intact on disk and is drained again by the retried writes.
   */
  #drain(sessionId: string): void {
    void this.#state.queue.write(`drain:${sessionId}`, "queue's next run", () =>
      this.#sessions.run(sessionId, async () => {
        if (this.live.active.has(sessionId) || this.#stopping) return;
        const started = await takeNext(this.#intake, sessionId);
        if (!started || this.#stopping) return;
        this.#emitQueue(sessionId);
        this.#begin(started.session, started.run, { source: started.next.source, queueId: started.next.id });
      }),
    );
  }

  /** Writes the run (off this path: run-state-writes.ts), then tells listeners (some read the store back). */
  #touch(run: RunView): void {
    this.#state.save(run);
    this.#events.emit("run_updated", snapshot(run));
  }

  /** Tells listeners the session's queue changed, as the store has it now (read off this path). */
  #emitQueue(sessionId: string): void {
    this.#deps.store.queue.queued(sessionId).then(
      (queued) => this.#events.emit("queue_changed", { sessionId, queued }),
      (error: unknown) =>
        this.#deps.logger.warn({ err: error, sessionId }, "queue not read for its listeners"),
    );
  }
}
