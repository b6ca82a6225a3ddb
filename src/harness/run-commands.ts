import type { AskRegistry } from "../asks/registry.ts";
import { ASK_ERRORS } from "../asks/summary.ts";
import type { ActionResult, SubmitResult } from "../domain/ports.ts";
import type { RunView } from "../domain/types.ts";
import type { Store } from "../store/repos.ts";
import { AbandonedError, CancelledError } from "./run-context.ts";
import type { RunCommand } from "./run-ownership.ts";
import type { LiveRuns } from "./run-reads.ts";

/**
 * What a person (or a channel) may do to a run or a queued message, and who may: the rules behind
 * `RunCommands` (domain/ports.ts). SessionRunner (runner.ts) hands these its live state.
 */
export interface CommandDeps {
  live: LiveRuns;
  store: Store;
  registry: AskRegistry;
  emitQueue: (sessionId: string) => void;
  /** The session's latest run, this process's newest state of it included (run-reads.ts currentRun). */
  latest: (sessionId: string) => Promise<RunView | undefined>;
  /** Several instances: hands a command to the instance running the run (run-ownership.ts). */
  forward?: ((command: RunCommand) => Promise<boolean>) | undefined;
  submit: (input: {
    sessionId: string;
    senderId: string;
    text: string;
    source?: Record<string, unknown>;
  }) => Promise<SubmitResult>;
}

/**
 * Only the run's sender may cancel it. A run another instance runs (issue 27) is cancelled there: checked here
 * against its row, then forwarded (so the answer is a promise then).
 */
export function cancelRun(
  deps: CommandDeps,
  sessionId: string,
  userId: string,
): ActionResult | Promise<ActionResult> {
  const active = deps.live.active.get(sessionId);
  if (!active)
    return deps.forward ? elsewhere(deps, "cancel", sessionId, userId) : { ok: false, reason: "not_running" };
  if (active.run.senderId !== userId) return { ok: false, reason: "forbidden" };
  // Fail the asks first so the waiting tool call returns "Session cancelled", then abort the run.
  void deps.registry.failAllForSession(sessionId, ASK_ERRORS.cancelled);
  active.controller.abort(new CancelledError());
  return { ok: true };
}

/**
 * Fails an active run that nobody can see or answer any more (its card is gone), with `reason` as its
 * error: its asks end at once, the agent is aborted, and the session's queue moves on. No sender check:
 * the channel, not a person, decides this.
 */
export function abandonRun(deps: CommandDeps, runId: string, reason: string): ActionResult {
  const active = [...deps.live.active.values()].find((candidate) => candidate.run.id === runId);
  if (!active) return { ok: false, reason: "not_running" };
  void deps.registry.failAllForSession(active.run.sessionId, reason);
  active.controller.abort(new AbandonedError(reason));
  return { ok: true };
}

/**
 * 取消并处理新消息: the sender lets the message queued behind a question replace the run. Its asks end as
 * superseded, the run as cancelled, and the queue runs next as after any cancel.
 */
export async function replaceRun(
  deps: CommandDeps,
  sessionId: string,
  userId: string,
): Promise<ActionResult> {
  const active = deps.live.active.get(sessionId);
  if (!active)
    return deps.forward
      ? elsewhere(deps, "replace", sessionId, userId)
      : { ok: false, reason: "not_running" };
  if (active.run.senderId !== userId) return { ok: false, reason: "forbidden" };
  if ((await deps.store.queue.count(sessionId)) === 0) return { ok: false, reason: "not_found" };
  // The run may have ended while the queue was read: then there is nothing to replace.
  if (deps.live.active.get(sessionId) !== active) return { ok: false, reason: "not_running" };
  void deps.registry.supersede(sessionId, ASK_ERRORS.cancelled);
  active.controller.abort(new CancelledError());
  return { ok: true };
}

/** Re-runs the last input of a failed or cancelled run, as its sender. */
export async function retryRun(
  deps: CommandDeps,
  sessionId: string,
  userId: string,
  source?: Record<string, unknown>,
): Promise<ActionResult<{ result: SubmitResult }>> {
  if (deps.live.active.has(sessionId)) return { ok: false, reason: "not_retryable" };
  const last = await deps.latest(sessionId);
  // Started meanwhile (a second tap of 重试): the first one retried it.
  if (deps.live.active.has(sessionId)) return { ok: false, reason: "not_retryable" };
  if (!last) return { ok: false, reason: "not_found" };
  if (last.senderId !== userId) return { ok: false, reason: "forbidden" };
  if (last.status !== "failed" && last.status !== "cancelled") return { ok: false, reason: "not_retryable" };
  return {
    ok: true,
    result: await deps.submit({
      sessionId,
      senderId: userId,
      text: last.input,
      ...(source ? { source } : {}),
    }),
  };
}

/** 插队: only the queued message's sender may move it to the front. */
export async function promoteQueued(
  deps: CommandDeps,
  queueId: string,
  userId: string,
): Promise<ActionResult<{ position: number }>> {
  const queued = await deps.store.queue.get(queueId);
  if (!queued) return { ok: false, reason: "not_found" };
  if (queued.senderId !== userId) return { ok: false, reason: "forbidden" };
  // Taken off the queue (run, or withdrawn) since it was read: nothing to move.
  if (!(await deps.store.queue.moveToFront(queueId))) return { ok: false, reason: "not_found" };
  deps.emitQueue(queued.sessionId);
  return { ok: true, position: 1 };
}

/** 取消排队: only the queued message's sender may withdraw it. */
export async function unqueueMessage(
  deps: CommandDeps,
  queueId: string,
  userId: string,
): Promise<ActionResult> {
  const queued = await deps.store.queue.get(queueId);
  if (!queued) return { ok: false, reason: "not_found" };
  if (queued.senderId !== userId) return { ok: false, reason: "forbidden" };
  if (!(await deps.store.queue.remove(queueId))) return { ok: false, reason: "not_found" };
  deps.emitQueue(queued.sessionId);
  return { ok: true };
}

/** A command for a run this process does not run: the same rules, read from the run's row, then forwarded. */
async function elsewhere(
  deps: CommandDeps,
  kind: RunCommand["kind"],
  sessionId: string,
  userId: string,
): Promise<ActionResult> {
  const run = await deps.latest(sessionId);
  if (!run || (run.status !== "running" && run.status !== "recovering"))
    return { ok: false, reason: "not_running" };
  if (run.senderId !== userId) return { ok: false, reason: "forbidden" };
  if (kind === "replace" && (await deps.store.queue.count(sessionId)) === 0)
    return { ok: false, reason: "not_found" };
  const sent = await deps.forward?.({ kind, runId: run.id, sessionId, userId });
  return sent ? { ok: true } : { ok: false, reason: "not_running" };
}

/**
 * A command another instance forwarded (it checked it), for a run this process holds: done once the run is under
 * way here; not yet (false) while it is being resumed; dropped once the run has ended.
 */
export async function obeyForwarded(deps: CommandDeps, command: RunCommand): Promise<boolean> {
  if (deps.live.active.get(command.sessionId)?.run.id !== command.runId) {
    const run = await deps.latest(command.sessionId);
    return !(run?.id === command.runId && (run.status === "running" || run.status === "recovering"));
  }
  const local = { ...deps, forward: undefined };
  if (command.kind === "cancel") cancelRun(local, command.sessionId, command.userId);
  else await replaceRun(local, command.sessionId, command.userId);
  return true;
}
