import { ASK_ERRORS } from "../asks/summary.ts";
import { PLAN_STEP_TOOL, type RunView, type SessionInfo, type Step } from "../domain/types.ts";
import { addUsage } from "../domain/usage.ts";
import { describeError, ModelError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { isStorageError } from "../store/db.ts";
import type { Store } from "../store/repos.ts";
import type { PendingTurn, TurnStore } from "../store/turns.ts";
import { inEveryLocale, strings } from "../strings/index.ts";
import type { AgentContext, ReportedStep } from "./agents/agent.ts";
import type { ToolDispatcher } from "./dispatcher.ts";
import { askToolDefinition, filterToolsForSession } from "./tools.ts";
import { createTurnRunner, MAX_STEPS_KEPT, type TurnRunnerDeps } from "./turn-runner.ts";

/**
 * One run as its agent sees it (the context it is handed, the steps it reports) and how a run ends
 * (its steps closed, its error worded). SessionRunner (runner.ts) owns when these happen.
 */

export class CancelledError extends Error {
  constructor() {
    super(ASK_ERRORS.cancelled);
    this.name = "CancelledError";
  }
}

/** The run lost the only surface it had (its Feishu card was recalled or deleted): it fails with `message`. */
export class AbandonedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AbandonedError";
  }
}

export interface ContextDeps {
  store: Store;
  dispatcher: ToolDispatcher;
  turns?: TurnStore;
  now: () => number;
  newId: () => string;
  /** Writes the run and tells listeners. */
  touch: (run: RunView) => void;
  /** Tells listeners of new text without a write. */
  emitUpdate: (run: RunView) => void;
  /** The run's writes, made only while this process holds it (run-ownership.ts). */
  guarded?: TurnRunnerDeps["guarded"];
}

export async function agentContext(
  deps: ContextDeps,
  session: SessionInfo,
  run: RunView,
  signal: AbortSignal,
  resumed: boolean,
): Promise<AgentContext> {
  const { dispatcher, store, turns } = deps;
  const pendingTurns: PendingTurn[] = resumed ? ((await turns?.ofRun(run.id)) ?? []) : [];
  const callTools = createTurnRunner(
    {
      dispatcher,
      store,
      turns,
      newId: deps.newId,
      now: deps.now,
      touch: deps.touch,
      ...(deps.guarded ? { guarded: deps.guarded } : {}),
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
    history: await store.history(session.id),
    resumed,
    pendingTurns: pendingTurns.map((turn) => ({
      text: turn.text,
      calls: turn.calls.map(({ id, name, arguments: args }) => ({ id, name, arguments: args })),
    })),
    tools,
    signal,
    reportText: (text) => {
      run.text = text;
      deps.emitUpdate(run);
    },
    reportStep: (key, update) => reportStep(deps, run, reported, key, update),
    // Kept on the run, written with its next change (a step, the end): the footer reads the final run.
    reportUsage: (usage) => {
      run.usage = addUsage(run.usage, usage);
    },
    reportBatch: ({ text, steps }) => {
      // A batch flushed after a cancel (the coalescer's end-of-turn flush) is the stopped agent's last word:
      // the cancelled card does not take it.
      if (signal.aborted) return;
      if (text !== undefined) run.text = text;
      for (const [key, update] of steps) reportStep(deps, run, reported, key, update, false);
      deps.touch(run);
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
function reportStep(
  deps: ContextDeps,
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
    const finished = update.status !== "pending" && update.status !== "running";
    Object.assign(existing, update);
    if (update.summary === undefined) delete existing.summary;
    if (update.words === undefined) delete existing.words;
    if (finished && existing.endedAt === undefined) existing.endedAt = deps.now();
  } else {
    const step: Step = { id: deps.newId(), ...update, startedAt: deps.now() };
    reported.set(key, step);
    run.steps.push(step);
    if (run.steps.length > MAX_STEPS_KEPT) run.steps.splice(0, run.steps.length - MAX_STEPS_KEPT);
  }
  if (run.status === "recovering") run.status = "running";
  if (touch) deps.touch(run);
}

/** Sets the status and error of a run its agent did not finish: cancelled, abandoned or failed. */
export function endStopped(run: RunView, reason: unknown, error: unknown, logger: Logger): void {
  if (reason instanceof CancelledError) {
    run.status = "cancelled";
    return;
  }
  run.status = "failed";
  if (reason instanceof AbandonedError) {
    run.error = reason.message;
    logger.info({ sessionId: run.sessionId, runId: run.id, reason: reason.message }, "run abandoned");
    return;
  }
  // A write the database refused (a turn, the answer) fails the run; the card says what to check.
  run.error = isStorageError(error) ? strings.storageFailed(describeError(error)) : describeError(error);
  // The same in every language when the words are ours; anything else reads as it was thrown.
  const words = isStorageError(error)
    ? inEveryLocale((s) => s.storageFailed(describeError(error)))
    : error instanceof ModelError
      ? error.words
      : undefined;
  if (words) run.errorWords = words;
  logger.warn({ sessionId: run.sessionId, runId: run.id, err: error }, "run failed");
}

/**
 * The steps still under way when a run ended: a completed run finished them (an agent does not always say
 * so of each call), a cancelled or refused one stopped them, and only a failed run failed them. A plan entry keeps the
 * status its agent last gave it (a completed run's ⏳ 计划 2 is the agent's word, not a failure of ours).
 */
export function endSteps(run: RunView): void {
  const ending =
    run.status === "completed"
      ? "done"
      : run.status === "cancelled" || run.status === "rejected"
        ? "stopped"
        : ("failed" as const);
  for (const step of run.steps)
    if (step.status === "running" && step.tool !== PLAN_STEP_TOOL) step.status = ending;
}

/**
 * A run a crash interrupted, as it resumes: steps in flight then did not finish, except those of a turn
 * that waits on a question (that turn resumes where it waited). A plan entry is the agent's checklist, in
 * the agent's own words: it keeps the status the agent gave it.
 */
export function interrupted(run: RunView, waiting: readonly PendingTurn[]): RunView {
  const resumes = new Set(
    waiting.flatMap((turn) => turn.calls.filter((c) => c.result === undefined).map((c) => c.stepId)),
  );
  for (const step of run.steps)
    if (step.status === "running" && step.tool !== PLAN_STEP_TOOL && !resumes.has(step.id))
      step.status = "failed";
  return { ...run, status: waiting.length > 0 ? "running" : "recovering" };
}

export function snapshot(run: RunView): RunView {
  return { ...run, steps: run.steps.map((step) => ({ ...step })) };
}
