import type { PendingAsk } from "./pending.ts";
import type { AskRegistry } from "./registry.ts";

/**
 * What the person a question waits for may do with it besides answering, whichever surface they use (the
 * card's buttons, the session page's): 延长 the run's deadlines, and 拒绝回答 an outside agent's question.
 * One owner for both rules, so the card (feishu/card-actions.ts) and the page (ws/hub.ts) cannot drift.
 * Cancelling the task is the runner's rule (`RunCommands.cancel`), reached the same way from both.
 */

/** One 延长: 15 minutes (the button says so). */
export const EXTEND_MS = 15 * 60_000;
export const EXTEND_MINUTES = EXTEND_MS / 60_000;

export interface ExtendTimes {
  /** One 延长. */
  extendMs: number;
  /** ASK_EXTEND_MAX_MS: what 延长 may add to one ask in all. */
  extendMaxMs: number;
}

/** Whether one more 延长 fits within the ask's bound. */
export function canExtend(ask: Pick<PendingAsk, "extendedMs">, times: ExtendTimes): boolean {
  return times.extendMs > 0 && ask.extendedMs + times.extendMs <= times.extendMaxMs;
}

export type ExtendOutcome =
  | { ok: true; moved: PendingAsk[]; earliest: number }
  /** none: the run waits on nothing; forbidden: not the answerer's; limit: every ask is at its bound. */
  | { ok: false; reason: "none" | "forbidden" | "limit" };

/** 延长: the answerer moves every pending deadline of the run, each within its bound. */
export async function extendRunAsks(
  registry: Pick<AskRegistry, "pendingOfRun" | "extend">,
  run: { sessionId: string; runId: string },
  userId: string,
  times: ExtendTimes,
): Promise<ExtendOutcome> {
  const asks = await registry.pendingOfRun(run.sessionId, run.runId);
  if (asks.length === 0) return { ok: false, reason: "none" };
  if (asks.some((ask) => ask.answererId !== userId)) return { ok: false, reason: "forbidden" };
  const extended = await Promise.all(
    asks.map((ask) => registry.extend(ask.requestId, times.extendMs, times.extendMaxMs)),
  );
  const moved = extended.flatMap((ask) => ask ?? []);
  if (moved.length === 0) return { ok: false, reason: "limit" };
  const byId = new Map(moved.map((ask) => [ask.requestId, ask.expiresAt]));
  const earliest = Math.min(...asks.map((ask) => byId.get(ask.requestId) ?? ask.expiresAt));
  return { ok: true, moved, earliest };
}

export type DeclineOutcome =
  | { ok: true }
  /** gone: no longer pending; forbidden: not the answerer; not_declinable: its asker cannot read a decline. */
  | { ok: false; reason: "gone" | "forbidden" | "not_declinable" };

/**
 * 拒绝回答: the person asked settles the question without an answer. Only where the asker can read that
 * (`declinable`: an outside agent gets status "declined"); the bot's own runs have 取消任务 instead.
 */
export async function declineAsk(
  registry: Pick<AskRegistry, "open" | "decline">,
  target: { sessionId: string; requestId: string },
  by: { surface: string; userId: string },
): Promise<DeclineOutcome> {
  const ask = await registry.open(target.requestId);
  if (!ask || ask.sessionId !== target.sessionId) return { ok: false, reason: "gone" };
  // Who first (the registry would refuse it too), then which: a stranger learns nothing of the ask.
  if (ask.answererId !== by.userId) return { ok: false, reason: "forbidden" };
  if (!ask.declinable) return { ok: false, reason: "not_declinable" };
  return registry.decline(target.sessionId, target.requestId, by);
}
