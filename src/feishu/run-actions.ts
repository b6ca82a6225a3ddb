import { extendRunAsks } from "../asks/person-actions.ts";
import type { ProgressValue, QueueValue } from "../cards/actions.ts";
import { bilingual as strings } from "../strings/index.ts";
import { feishuSource } from "./apps.ts";
import { extendedText } from "./ask-deadline.ts";
import {
  type CallbackResult,
  type CardActionDeps,
  onlyAnswerer,
  toast,
  withCard,
} from "./card-action-deps.ts";
import type { ActiveCard } from "./progress/card-book.ts";

/**
 * The clicks on a card's run and queue buttons (card-actions.ts routes them here): 取消任务, 重试, 延长,
 * 取消并处理新消息, and a queued message's 立即处理 / 撤回. Each checks the clicker against the runner's rules
 * and answers with a toast and, where the card changed, the card.
 */

async function cancelRun(
  deps: CardActionDeps,
  value: ProgressValue,
  operator: string,
  active: ActiveCard | undefined,
): Promise<CallbackResult> {
  const { runner } = deps;
  // Here, or (several instances) the session's unfinished run in the store, run by another instance.
  const run = runner.activeRun(value.sessionId) ?? (await runner.currentRun(value.sessionId));
  if (!run || run.id !== value.runId) return toast("info", strings.feishu.taskNotRunning);
  const result = await runner.cancel(value.sessionId, operator);
  if (!result.ok)
    return toast(
      "error",
      result.reason === "forbidden" ? strings.feishu.onlySender : strings.feishu.taskNotRunning,
    );
  // The run settles on the next turns of the event loop; answer with the cancelled card, not a stale one.
  await new Promise((resolve) => setImmediate(resolve));
  return withCard(toast("success", strings.feishu.taskCancelled), active && deps.cards.render(active));
}

export function progressAction(
  deps: CardActionDeps,
  value: ProgressValue,
  operator: string,
  active: ActiveCard | undefined,
): CallbackResult | Promise<CallbackResult> {
  switch (value.act) {
    case "cancel":
      return cancelRun(deps, value, operator, active);
    case "retry":
      return retryRun(deps, value, operator);
    case "extend":
      return extendAsks(deps, value, operator, active);
    case "replace":
      return replaceRun(deps, value, operator, active);
  }
}

/** 延长 15 分钟: the answerer moves the run's pending deadlines, within ASK_EXTEND_MAX_MS in all (person-actions.ts). */
async function extendAsks(
  deps: CardActionDeps,
  value: ProgressValue,
  operator: string,
  active: ActiveCard | undefined,
): Promise<CallbackResult> {
  const result = await extendRunAsks(deps.registry, value, operator, deps.times);
  if (!result.ok) {
    if (result.reason === "none")
      return withCard(toast("info", strings.feishu.askExpired), active && deps.cards.render(active));
    if (result.reason === "forbidden") {
      const other = deps.registry
        .getPendingForSession(value.sessionId)
        .find((ask) => ask.runId === value.runId && ask.answererId !== operator);
      return onlyAnswerer(deps, other?.answererId ?? "");
    }
    return toast("warning", strings.asks.extendLimit);
  }
  const extended = extendedText(result.earliest, deps.times.timeZone, deps.now());
  return withCard(toast("success", extended), active && deps.cards.render(active));
}

/** 取消并处理新消息: the sender lets the queued message replace the run that waits on a question. */
async function replaceRun(
  deps: CardActionDeps,
  value: ProgressValue,
  operator: string,
  active: ActiveCard | undefined,
): Promise<CallbackResult> {
  const { runner } = deps;
  const run = runner.activeRun(value.sessionId);
  if (!run || run.id !== value.runId) return toast("info", strings.feishu.taskNotRunning);
  const result = await runner.replace(value.sessionId, operator);
  if (!result.ok) {
    if (result.reason === "forbidden") return toast("error", strings.feishu.onlySender);
    return toast(
      "info",
      result.reason === "not_found" ? strings.feishu.queueGone : strings.feishu.taskNotRunning,
    );
  }
  await new Promise((resolve) => setImmediate(resolve));
  return withCard(toast("success", strings.asks.replaced), active && deps.cards.render(active));
}

async function retryRun(
  deps: CardActionDeps,
  value: ProgressValue,
  operator: string,
): Promise<CallbackResult> {
  const { runner, store } = deps;
  const row = await store.cardForRun(value.runId);
  const source = row
    ? deps.appId
      ? feishuSource(deps.appId, row.sourceMessageId, row.chatId)
      : { channel: "feishu", messageId: row.sourceMessageId, chatId: row.chatId }
    : undefined;
  const last = await runner.currentRun(value.sessionId);
  if (!last || last.id !== value.runId) return toast("info", strings.feishu.notRetryable);
  const result = await runner.retry(value.sessionId, operator, source);
  if (!result.ok)
    return toast(
      "error",
      result.reason === "forbidden" ? strings.feishu.onlySender : strings.feishu.notRetryable,
    );
  return toast("success", strings.feishu.retried);
}

export async function queueAction(
  deps: CardActionDeps,
  value: QueueValue,
  operator: string,
): Promise<CallbackResult> {
  const { runner } = deps;
  const queued = (await runner.queued(value.sessionId)).find((q) => q.id === value.queueId);
  if (!queued) return toast("info", strings.feishu.queueGone);
  if (value.act === "promote") {
    const result = await runner.promote(value.queueId, operator);
    if (!result.ok)
      return toast(
        "error",
        result.reason === "forbidden" ? strings.feishu.onlySender : strings.feishu.queueGone,
      );
    const followUp = await deps.queuedCards.afterAnswer(value.queueId, "queued", queued);
    const card = await deps.queuedCards.cardFor(value.queueId, "queued", queued);
    return patchedAfter(withCard(toast("success", strings.feishu.promoted), card), followUp);
  }
  const result = await runner.unqueue(value.queueId, operator);
  if (!result.ok)
    return toast(
      "error",
      result.reason === "forbidden" ? strings.feishu.onlySender : strings.feishu.queueGone,
    );
  // Both read the message's card row before forget drops it.
  const card = await deps.queuedCards.cardFor(value.queueId, "withdrawn", queued);
  const followUp = await deps.queuedCards.afterAnswer(value.queueId, "withdrawn", queued);
  await deps.queuedCards.forget(value.queueId);
  return patchedAfter(withCard(toast("success", strings.feishu.unqueued), card), followUp);
}

/**
 * The answer's card reaches the clicker alone: once it settled, the queued card is PATCHed for the rest of
 * the chat (QueuedCards.afterAnswer), also when the answer never reached the platform (the state changed).
 */
function patchedAfter(result: CallbackResult, followUp: () => Promise<void>): CallbackResult {
  return { ...result, afterResponse: () => void followUp() };
}
