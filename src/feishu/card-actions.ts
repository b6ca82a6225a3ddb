import { unansweredReason } from "../asks/answers.ts";
import type { ElicitationAsk, ElicitResponse } from "../asks/elicitation.ts";
import type { PendingAsk } from "../asks/pending.ts";
import { declineAsk, extendRunAsks } from "../asks/person-actions.ts";
import type { AskRegistry } from "../asks/registry.ts";
import {
  type AskSubmitValue,
  type ProgressValue,
  parseActionValue,
  type QueueValue,
} from "../cards/actions.ts";
import { formFields, parseButtonName, readStack } from "../cards/form-fields.ts";
import { mapElicitFormValue, mapFormValue, readDraft } from "../cards/form-value.ts";
import type { Card } from "../cards/model.ts";
import { oneLine } from "../cards/text.ts";
import type { SessionRuns } from "../domain/ports.ts";
import { describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import type { FeishuStore } from "../store/feishu.ts";
// Every toast text in every language (issue 19): the operator's client shows its own from `i18n`.
import { currentLocale, inEveryLocale, type Localized, bilingual as strings } from "../strings.ts";
import { type AskTimes, extendedText } from "./ask-deadline.ts";
import { parseCardAction } from "./events.ts";
import type { ActiveCard } from "./progress/card-book.ts";
import type { QueuedCards } from "./queued-cards.ts";

/**
 * card.action.trigger (DESIGN §6). Answered within 3 s from memory only: never awaits a PATCH or the agent.
 * While it is answered, the card's PATCHes are held; `afterResponse` releases them once the response is
 * sent, because Feishu reverts an update made before or in parallel with the response.
 */

/** Everything a click may read or change, named: the runtime (runtime.ts) hands these over explicitly. */
export interface CardActionDeps {
  runner: Pick<
    SessionRuns,
    "activeRun" | "currentRun" | "cancel" | "replace" | "retry" | "queued" | "promote" | "unqueue"
  >;
  registry: Pick<AskRegistry, "get" | "complete" | "respond" | "decline" | "getPendingForSession" | "extend">;
  store: Pick<FeishuStore, "cardForRun">;
  /** The live progress cards (the channel): which card a click came from, and that card as it is now. */
  cards: {
    cardByMessage(messageId: string): ActiveCard | undefined;
    render(card: ActiveCard): Card;
    /** The operator clicked in this chat, so they are in it (the viewing rule, domain/access.ts). */
    noteChatMember(chatId: string, userId: string): void;
    /** A person's name if the channel learned it (people.ts): a toast is plain text and cannot @-mention. */
    nameOf(userId: string): string | undefined;
  };
  queuedCards: Pick<QueuedCards, "cardFor" | "forget" | "afterAnswer">;
  times: Pick<AskTimes, "extendMs" | "extendMaxMs" | "timeZone">;
  now: () => number;
}

type Toast = { type: "success" | "error" | "info" | "warning"; content: string; i18n: Localized };
export interface CallbackResult {
  response: { toast?: Toast; card?: { type: "raw"; data: Card } };
  /** `delivered`: this response (not the transport's timeout toast) is what the platform got. */
  afterResponse?: (delivered: boolean) => void;
}

export async function handleCardAction(
  deps: CardActionDeps,
  data: Record<string, unknown>,
  logger: Logger,
): Promise<CallbackResult> {
  const action = parseCardAction(data);
  if (!action.ok) {
    logger.warn({ error: action.error }, "unsupported card action ignored");
    return toast("error", strings.feishu.unknownAction);
  }
  const value = parseActionValue(action.value.value);
  if (!value.ok) {
    logger.info({ error: value.error }, "stale or unknown card action value");
    return toast("warning", strings.feishu.unknownAction);
  }
  const operator = action.value.operatorOpenId;
  // A click on a card in a chat proves the operator is in that chat: they may view its runs (access.ts).
  if (action.value.chatId) noteMember(deps, action.value.chatId, operator, logger);
  const active = action.value.messageId ? deps.cards.cardByMessage(action.value.messageId) : undefined;
  const release = active?.publisher?.hold();
  let result: CallbackResult;
  try {
    result = await route(deps, value.value, operator, action.value.formValue, action.value.name, active);
  } catch (error) {
    // A handler that throws (e.g. the database refused the answer) must not leave the card held: a held
    // publisher never PATCHes again, and shutdown would wait for it for ever. The platform shows what it
    // showed; the caller answers the click with the error toast.
    release?.(undefined);
    throw error;
  }
  // The card the platform shows once a delivered answer carried one: the publisher compares against it.
  const answered = result.response.card?.data;
  return {
    response: result.response,
    afterResponse: (delivered) => {
      release?.(delivered ? answered : undefined);
      result.afterResponse?.(delivered);
    },
  };
}

/** Best effort: a note the database refuses costs a later page view, not this click. */
function noteMember(deps: CardActionDeps, chatId: string, operator: string, logger: Logger): void {
  try {
    deps.cards.noteChatMember(chatId, operator);
  } catch (error) {
    logger.warn({ err: describeError(error), chatId }, "chat member not noted: the database refused");
  }
}

async function route(
  deps: CardActionDeps,
  value: AskSubmitValue | ProgressValue | QueueValue,
  operator: string,
  formValue: unknown,
  name: string | undefined,
  active: ActiveCard | undefined,
): Promise<CallbackResult> {
  switch (value.kind) {
    case "feishu_ask":
      return submitAnswer(deps, value, operator, formValue, name, active);
    case "progress":
      return progressAction(deps, value, operator, active);
    case "queue":
      return queueAction(deps, value, operator);
  }
}

function submitAnswer(
  deps: CardActionDeps,
  value: AskSubmitValue,
  operator: string,
  formValue: unknown,
  name: string | undefined,
  active: ActiveCard | undefined,
): CallbackResult {
  const { registry } = deps;
  const ask = registry.get(value.requestId);
  if (!ask || ask.sessionId !== value.sessionId) {
    // After a restart, or once answered elsewhere: the waiting tool call is gone (seed §4.5).
    return withCard(toast("warning", strings.feishu.askExpired), active && deps.cards.render(active));
  }
  // The registry's answerer is the truth; the button's `sender` is only what the card claimed.
  if (operator !== ask.answererId) return onlyAnswerer(deps, ask.answererId);
  if (ask.elicitation)
    return answerElicitation(deps, ask, ask.elicitation, value, operator, formValue, name, active);
  if (value.act === "decline") return declineQuestion(deps, ask, operator, active);
  if (value.act !== "submit") return toast("warning", strings.feishu.unknownAction);
  if (value.stack !== undefined) return submitStack(deps, value.stack, operator, formValue, active);
  // The submit button names its form; without one of our names, any form's fields count (form-value.ts).
  const submitted = parseButtonName(name);
  const formName = submitted?.act === "submit" ? formFields.form(submitted.askIndex) : undefined;
  const mapped = mapFormValue(ask.questions, formValue, formName);
  if (!mapped.ok) {
    // The answer carries the card, which replaces the form on screen: it must show what was submitted, or
    // the person's choices and typing are gone. Kept for later renders too, until the ask settles.
    // Platform finding: form_value holds only the submitted form's fields, so entries in the card's other
    // forms never reach us; any card in a callback answer (or a PATCH) resets those to what we render.
    // What we can keep is what each form last submitted, so a failed submit loses nothing of its own form.
    active?.drafts.set(ask.requestId, readDraft(ask.questions, formValue, formName));
    const reason = inEveryLocale((s) => unansweredReason(s, ask.questions, mapped.questionIndex));
    return withCard(toast("warning", reason), active && deps.cards.render(active));
  }
  const won = registry.complete(ask.sessionId, ask.requestId, mapped.answers, {
    surface: "feishu",
    userId: operator,
  });
  const done = submittedText(otherWins(ask, formValue, formName));
  // Settling removed the form from the card state synchronously; the response carries the card without it.
  return withCard(
    toast(won ? "success" : "warning", won ? done : strings.feishu.askExpired),
    active && deps.cards.render(active),
  );
}

/** 拒绝回答 on an outside agent's question: the rule is person-actions.ts's, shared with the session page. */
function declineQuestion(
  deps: CardActionDeps,
  ask: PendingAsk,
  operator: string,
  active: ActiveCard | undefined,
): CallbackResult {
  const result = declineAsk(deps.registry, ask, { surface: "feishu", userId: operator });
  if (!result.ok && result.reason === "forbidden") return onlyAnswerer(deps, ask.answererId);
  if (!result.ok && result.reason === "not_declinable") return toast("warning", strings.feishu.unknownAction);
  const text = result.ok ? strings.feishu.askDeclined : strings.feishu.askExpired;
  return withCard(toast(result.ok ? "success" : "warning", text), active && deps.cards.render(active));
}

/** 其他 text replaces a single choice picked with it (answer-rule.ts): which questions (1-based) it did so in. */
function otherWins(ask: PendingAsk, formValue: unknown, formName: string | undefined): number[] {
  return readDraft(ask.questions, formValue, formName).flatMap((entry, j) =>
    !ask.questions[j]?.multiSelect && entry.choices.length > 0 && entry.custom.trim() !== "" ? [j + 1] : [],
  );
}

/** 已提交, or (where 其他 replaced a choice) a toast that says so, where it happens. */
function submittedText(replaced: readonly number[]): Localized {
  return replaced.length > 0
    ? inEveryLocale((s) => s.feishu.submittedOtherWins(replaced.join(s.feishu.numberSeparator)))
    : strings.feishu.submitted;
}

/**
 * The one form of stacked asks (ask-form.ts askForms): everything typed arrives together, so every ask it
 * completes is answered and the others keep what was typed (pre-filled), none of it lost. The toast names
 * the first question still open, if any.
 */
function submitStack(
  deps: CardActionDeps,
  stack: string,
  operator: string,
  formValue: unknown,
  active: ActiveCard | undefined,
): CallbackResult {
  const { registry } = deps;
  const held = readStack(stack).flatMap(({ askIndex, requestId }) => {
    const ask = registry.get(requestId);
    return ask ? [{ ask, formName: formFields.form(askIndex) }] : [];
  });
  if (held.length === 0)
    return withCard(toast("warning", strings.feishu.askExpired), active && deps.cards.render(active));
  const other = held.find(({ ask }) => ask.answererId !== operator);
  if (other) return onlyAnswerer(deps, other.ask.answererId);
  let missing: Localized | undefined;
  let answered = 0;
  const replaced: number[] = [];
  for (const { ask, formName } of held) {
    const mapped = mapFormValue(ask.questions, formValue, formName);
    if (!mapped.ok) {
      active?.drafts.set(ask.requestId, readDraft(ask.questions, formValue, formName));
      missing ??= inEveryLocale((s) => unansweredReason(s, ask.questions, mapped.questionIndex));
      continue;
    }
    const by = { surface: "feishu", userId: operator };
    if (registry.complete(ask.sessionId, ask.requestId, mapped.answers, by)) answered += 1;
    replaced.push(...otherWins(ask, formValue, formName));
  }
  const card = active && deps.cards.render(active);
  if (missing) return withCard(toast("warning", missing), card);
  if (answered === 0) return withCard(toast("warning", strings.feishu.askExpired), card);
  return withCard(toast("success", submittedText(replaced)), card);
}

/** An MCP server's form (asks/elicitation.ts): 提交 checks the fields; 拒绝 / 取消 need nothing filled in. */
function answerElicitation(
  deps: CardActionDeps,
  ask: PendingAsk,
  elicitation: ElicitationAsk,
  value: AskSubmitValue,
  operator: string,
  formValue: unknown,
  name: string | undefined,
  active: ActiveCard | undefined,
): CallbackResult {
  let response: ElicitResponse;
  if (value.act !== "submit") response = { action: value.act };
  else {
    const mapped = mapElicitFormValue(elicitation.fields, formValue, parseButtonName(name)?.askIndex);
    if (!mapped.ok) {
      const title = oneLine(mapped.field.title);
      const reason =
        mapped.problem === "number"
          ? strings.feishu.elicitBadNumber(title)
          : strings.feishu.elicitMissing(title);
      return toast("warning", reason);
    }
    response =
      elicitation.url !== undefined ? { action: "accept" } : { action: "accept", content: mapped.content };
  }
  const won = deps.registry.respond(ask.sessionId, ask.requestId, response, {
    surface: "feishu",
    userId: operator,
  });
  const done =
    response.action === "accept"
      ? strings.feishu.submitted
      : response.action === "decline"
        ? strings.feishu.elicitDeclined
        : strings.feishu.elicitCancelled;
  return withCard(
    toast(won ? "success" : "warning", won ? done : strings.feishu.askExpired),
    active && deps.cards.render(active),
  );
}

async function cancelRun(
  deps: CardActionDeps,
  value: ProgressValue,
  operator: string,
  active: ActiveCard | undefined,
): Promise<CallbackResult> {
  const { runner } = deps;
  const run = runner.activeRun(value.sessionId);
  if (!run || run.id !== value.runId) return toast("info", strings.feishu.taskNotRunning);
  const result = runner.cancel(value.sessionId, operator);
  if (!result.ok)
    return toast(
      "error",
      result.reason === "forbidden" ? strings.feishu.onlySender : strings.feishu.taskNotRunning,
    );
  // The run settles on the next turns of the event loop; answer with the cancelled card, not a stale one.
  await new Promise((resolve) => setImmediate(resolve));
  return withCard(toast("success", strings.feishu.taskCancelled), active && deps.cards.render(active));
}

function progressAction(
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
function extendAsks(
  deps: CardActionDeps,
  value: ProgressValue,
  operator: string,
  active: ActiveCard | undefined,
): CallbackResult {
  const result = extendRunAsks(deps.registry, value, operator, deps.times);
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
  const result = runner.replace(value.sessionId, operator);
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

function retryRun(deps: CardActionDeps, value: ProgressValue, operator: string): CallbackResult {
  const { runner, store } = deps;
  const row = store.cardForRun(value.runId);
  const source = row ? { channel: "feishu", messageId: row.sourceMessageId, chatId: row.chatId } : undefined;
  const last = runner.currentRun(value.sessionId);
  if (!last || last.id !== value.runId) return toast("info", strings.feishu.notRetryable);
  const result = runner.retry(value.sessionId, operator, source);
  if (!result.ok)
    return toast(
      "error",
      result.reason === "forbidden" ? strings.feishu.onlySender : strings.feishu.notRetryable,
    );
  return toast("success", strings.feishu.retried);
}

function queueAction(deps: CardActionDeps, value: QueueValue, operator: string): CallbackResult {
  const { runner } = deps;
  const queued = runner.queued(value.sessionId).find((q) => q.id === value.queueId);
  if (!queued) return toast("info", strings.feishu.queueGone);
  if (value.act === "promote") {
    const result = runner.promote(value.queueId, operator);
    if (!result.ok)
      return toast(
        "error",
        result.reason === "forbidden" ? strings.feishu.onlySender : strings.feishu.queueGone,
      );
    const followUp = deps.queuedCards.afterAnswer(value.queueId, "queued", queued);
    return patchedAfter(
      withCard(
        toast("success", strings.feishu.promoted),
        deps.queuedCards.cardFor(value.queueId, "queued", queued),
      ),
      followUp,
    );
  }
  const result = runner.unqueue(value.queueId, operator);
  if (!result.ok)
    return toast(
      "error",
      result.reason === "forbidden" ? strings.feishu.onlySender : strings.feishu.queueGone,
    );
  const card = deps.queuedCards.cardFor(value.queueId, "withdrawn", queued);
  const followUp = deps.queuedCards.afterAnswer(value.queueId, "withdrawn", queued);
  deps.queuedCards.forget(value.queueId);
  return patchedAfter(withCard(toast("success", strings.feishu.unqueued), card), followUp);
}

/**
 * The answer's card reaches the clicker alone: once it settled, the queued card is PATCHed for the rest of
 * the chat (QueuedCards.afterAnswer), also when the answer never reached the platform (the state changed).
 */
function patchedAfter(result: CallbackResult, followUp: () => Promise<void>): CallbackResult {
  return { ...result, afterResponse: () => void followUp() };
}

/** A toast in the bot's language, with every language in `i18n`. */
/** A question's form clicked by someone else: the toast names who may answer (issue 25), when it can. */
function onlyAnswerer(deps: Pick<CardActionDeps, "cards">, answererId: string): CallbackResult {
  const name = deps.cards.nameOf(answererId);
  return toast(
    "error",
    name === undefined ? strings.feishu.onlyAnswererUnnamed : strings.feishu.onlyAnswerer(name),
  );
}

function toast(type: Toast["type"], text: Localized): CallbackResult {
  return { response: { toast: { type, content: text[currentLocale()], i18n: text } } };
}

function withCard(result: CallbackResult, card: Card | undefined): CallbackResult {
  return card ? { response: { ...result.response, card: { type: "raw", data: card } } } : result;
}
