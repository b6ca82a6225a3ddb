import { ASK_TOOL_NAME } from "../asks/schema.ts";
import { toolResultOf } from "../asks/summary.ts";
import type { ToolResult } from "../domain/tool-result.ts";
import type { HistoryMessage, RunView, SessionInfo, Step } from "../domain/types.ts";
import type { Store } from "../store/repos.ts";
import { type PendingTurn, type PendingTurnCall, TurnStore } from "../store/turns.ts";
import { abortReason } from "../util/sleep.ts";
import type { AgentContext, ToolCallRequest } from "./agents/agent.ts";
import type { ToolDispatcher } from "./dispatcher.ts";
import { isShutdown } from "./shutdown.ts";

/** Steps kept per run: enough for any card (which shows far fewer) without growing without bound. */
export const MAX_STEPS_KEPT = 200;

export interface TurnRunnerDeps {
  dispatcher: ToolDispatcher;
  store: Store;
  /** Pending turns; without it a waiting turn lives in memory only and a restart makes it again. */
  turns: TurnStore | undefined;
  newId: () => string;
  now: () => number;
  touch: (run: RunView) => void;
  /** A write of the run, made only while this process holds it (run-ownership.ts); absent: just written. */
  guarded?: <T>(runId: string, body: (store: Store) => Promise<T>) => Promise<T>;
}

/**
 * Runs one assistant turn: its calls together, each a step; then saves the turn — the assistant message
 * with every call, then every result — in one transaction, only once all have returned (seed resume-design
 * D6). A turn with an `ask_user_questions` call is also kept as a pending turn beside the history while it
 * waits, with each result as it returns; on resume the agent makes the same turn again (same calls, same
 * arguments), which claims the pending one: returned calls give their saved results, the ask waits on its
 * original request id, and only calls that had not returned run again. A turn without an ask that a
 * shutdown interrupts is not saved at all, and a resumed model simply makes it again.
 */
export function createTurnRunner(
  deps: TurnRunnerDeps,
  session: SessionInfo,
  run: RunView,
  signal: AbortSignal,
  resumable: PendingTurn[],
): AgentContext["callTools"] {
  const { dispatcher, store, turns, newId, now } = deps;
  // The turn's writes, under the run's hold: an instance that lost the run (issue 27) writes no turn of it.
  const held = <T>(body: (writer: Store, pending: TurnStore | undefined) => Promise<T>): Promise<T> =>
    deps.guarded
      ? deps.guarded(run.id, (writer) =>
          body(writer, writer === store ? turns : turns && new TurnStore(writer.sql, writer)),
        )
      : body(store, turns);
  const runOne = async (
    call: ToolCallRequest,
    modelId: string,
    saved: PendingTurnCall | undefined,
    turn: PendingTurn | undefined,
    resuming: boolean,
  ) => {
    const id = saved?.id ?? modelId;
    if (saved?.result !== undefined) {
      return {
        call,
        id,
        result: saved.result,
        // Saved with its summary since it was written; rows from before that are read as a tool's output.
        summary: saved.summary ?? toolResultOf(saved.result).summary,
      };
    }
    const stepId = saved?.stepId ?? newId();
    let step = run.steps.find((candidate) => candidate.id === stepId);
    if (step) step.status = "running";
    else {
      step = {
        id: stepId,
        tool: call.name,
        title: call.title ?? call.name,
        status: "running",
        ...(call.titleWords ? { words: { title: call.titleWords } } : {}),
        startedAt: now(),
      };
      run.steps.push(step);
      if (run.steps.length > MAX_STEPS_KEPT) run.steps.splice(0, run.steps.length - MAX_STEPS_KEPT);
    }
    if (run.status === "recovering") run.status = "running";
    deps.touch(run);
    const outcome = await dispatcher.dispatch(call.name, call.args, {
      session,
      runId: run.id,
      senderId: run.senderId,
      // A call withdrawn alone ends as a cancel (its ask is cancelled); the run's abort still ends them all.
      signal: call.signal ? AbortSignal.any([signal, call.signal]) : signal,
      toolCallId: id,
      ...(resuming ? { resuming: true } : {}),
    });
    const { content: result, summary } = outcome;
    finishStep(step, outcome, now());
    deps.touch(run);
    if (turn && saved && !signal.aborted) {
      saved.result = result;
      saved.summary = summary;
      await updates.get(turn)?.();
    }
    return { call, id, result, summary };
  };

  // Each call records its result as it returns: one write at a time per turn, so a result recorded on one
  // connection is never overwritten by an older list landing later on another.
  const updates = new Map<PendingTurn, () => Promise<void>>();

  return async (calls, options) => {
    if (signal.aborted) throw abortReason(signal);
    if (calls.length === 0) return [];
    const text = options?.text ?? "";
    const ids = callIds(calls, newId);
    const claimed = claim(resumable, calls);
    const turn =
      claimed ??
      (turns && calls.some((call) => call.name === ASK_TOOL_NAME)
        ? newTurn(run, session, text, calls, ids, newId, now())
        : undefined);
    if (turn && !claimed) await held(async (_, pending) => pending?.save(turn));
    if (turn && turns && !updates.has(turn))
      updates.set(
        turn,
        serially(() => held(async (_, pending) => pending?.update(turn))),
      );
    // Wait for every call (none is left running unseen), then fail the turn if any call threw.
    const settled = await Promise.allSettled(
      calls.map((call, index) =>
        runOne(call, ids[index] ?? newId(), turn?.calls[index], turn, claimed !== undefined),
      ),
    );
    const done = settled.map((entry) => {
      if (entry.status === "rejected") throw entry.reason;
      return entry.value;
    });
    if (isShutdown(signal)) throw abortReason(signal);
    const messages: HistoryMessage[] = [
      {
        role: "assistant",
        content: claimed?.text ?? text,
        runId: run.id,
        toolCalls: done.map(({ id, call }) => ({ id, name: call.name, arguments: argumentsText(call.args) })),
      },
      ...done.map(
        ({ id, call, result, summary }): HistoryMessage => ({
          role: "tool",
          content: result,
          runId: run.id,
          toolCallId: id,
          toolName: call.name,
          summary,
        }),
      ),
    ];
    if (turn && turns) {
      await updates.get(turn)?.();
      await held(async (_, pending) => pending?.finish(turn, messages));
      updates.delete(turn);
    } else await held((writer) => writer.appendMessages(session.id, messages));
    return done.map(({ result }) => result);
  };
}

/** The pending turn these calls repeat (same tools, same arguments, in order), taken off the list. */
function claim(resumable: PendingTurn[], calls: ToolCallRequest[]): PendingTurn | undefined {
  const index = resumable.findIndex(
    (turn) =>
      turn.calls.length === calls.length &&
      turn.calls.every(
        (saved, i) => saved.name === calls[i]?.name && saved.arguments === argumentsText(calls[i]?.args),
      ),
  );
  if (index < 0) return undefined;
  return resumable.splice(index, 1)[0];
}

/**
 * Each call's id in the saved turn: the model's own, byte-for-byte (a resumed turn sends the model back what
 * it wrote); one is made only for a call without one, or whose id another call of this turn already has
 * (results are matched to calls by id, so two alike would swap or lose a result).
 */
function callIds(calls: ToolCallRequest[], newId: () => string): string[] {
  const seen = new Set<string>();
  return calls.map((call) => {
    const id = call.id !== undefined && call.id !== "" && !seen.has(call.id) ? call.id : newId();
    seen.add(id);
    return id;
  });
}

function newTurn(
  run: RunView,
  session: SessionInfo,
  text: string,
  calls: ToolCallRequest[],
  ids: string[],
  newId: () => string,
  at: number,
): PendingTurn {
  return {
    turnId: newId(),
    runId: run.id,
    sessionId: session.id,
    text,
    calls: calls.map((call, index) => ({
      id: ids[index] ?? newId(),
      stepId: newId(),
      name: call.name,
      arguments: argumentsText(call.args),
      ...(call.title ? { title: call.title } : {}),
    })),
    createdAt: at,
  };
}

function finishStep(step: Step, result: ToolResult, at: number): void {
  step.status = result.isError ? "failed" : "done";
  step.summary = result.summary;
  // The bot's words in every language beside it; a tool's or model's own summary has none.
  const title = step.words?.title;
  const summary = result.summaryWords;
  if (title || summary) step.words = { ...(title ? { title } : {}), ...(summary ? { summary } : {}) };
  else delete step.words;
  step.endedAt = at;
}

/** A model's raw argument text is kept as written (even when it is not JSON: the model should see its own call). */
export function argumentsText(args: unknown): string {
  return typeof args === "string" ? args : JSON.stringify(args ?? {});
}

/** `write` run one at a time: each call waits for the ones before it, then writes what is current. */
function serially(write: () => Promise<void>): () => Promise<void> {
  let last: Promise<void> = Promise.resolve();
  return () => {
    const next = last.catch(() => undefined).then(write);
    last = next;
    return next;
  };
}
