import { unansweredReason } from "../asks/answers.ts";
import type { ElicitationAsk, ElicitResponse } from "../asks/elicitation.ts";
import type { PendingAsk } from "../asks/pending.ts";
import { declineAsk } from "../asks/person-actions.ts";
import { firstQuestionIndexes } from "../asks/question-numbers.ts";
import {
  type AskSubmitValue,
  type ProgressValue,
  parseActionValue,
  type QueueValue,
} from "../cards/actions.ts";
import { formFields, parseButtonName, readStack } from "../cards/form-fields.ts";
import { mapElicitFormValue, mapFormValue, readDraft } from "../cards/form-value.ts";
import { describeError } from "../errors.ts";
import type { Logger } from "../logger.ts";
// Every toast text in every language (issue 19): the operator's client shows its own from `i18n`.
import { inEveryLocale, type Localized, bilingual as strings } from "../strings/index.ts";
import { oneLine } from "../util/text.ts";
import {
  type CallbackResult,
  type CardActionDeps,
  onlyAnswerer,
  toast,
  withCard,
} from "./card-action-deps.ts";
import { parseCardAction } from "./events.ts";
import type { ActiveCard } from "./progress/card-book.ts";
import { progressAction, queueAction } from "./run-actions.ts";

/**
 * card.action.trigger (DESIGN §6). Answered within 3 s: never awaits a PATCH or the agent; the card comes from
 * memory, or (several instances, a card another instance runs) from a few reads of its rows.
 * While it is answered, the card's PATCHes are held; `afterResponse` releases them once the response is
 * sent, because Feishu reverts an update made before or in parallel with the response.
 */

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
  const { messageId } = action.value;
  const mine = messageId ? deps.cards.cardByMessage(messageId) : undefined;
  // Several instances: a question on a card another instance runs is answered with the card from the rows.
  const remote = !mine && messageId && value.value.kind === "feishu_ask" ? deps.remote : undefined;
  // Said before anything is read, so the card's instance holds its PATCHes from the click's arrival.
  if (remote && messageId) remote.answering(messageId);
  const theirs = remote && messageId ? await cardFromRows(remote, messageId, logger) : undefined;
  const active = mine ?? theirs;
  const release = active?.publisher?.hold();
  let result: CallbackResult;
  try {
    result = await route(deps, value.value, operator, action.value.formValue, action.value.name, active);
  } catch (error) {
    // A handler that throws (e.g. the database refused the answer) must not leave the card held: a held
    // publisher never PATCHes again, and shutdown would wait for it for ever. The platform shows what it
    // showed; the caller answers the click with the error toast.
    release?.(undefined);
    if (remote && messageId) remote.responded(messageId);
    throw error;
  }
  // The card the platform shows once a delivered answer carried one: the publisher compares against it.
  const answered = result.response.card?.data;
  return {
    response: result.response,
    afterResponse: (delivered) => {
      release?.(delivered ? answered : undefined);
      if (remote && messageId) remote.responded(messageId);
      result.afterResponse?.(delivered);
    },
  };
}

/** Best effort: a card the database did not give is a toast without the card (its instance PATCHes it). */
async function cardFromRows(
  remote: NonNullable<CardActionDeps["remote"]>,
  messageId: string,
  logger: Logger,
): Promise<ActiveCard | undefined> {
  try {
    return await remote.cardFromRows(messageId);
  } catch (error) {
    logger.warn({ err: describeError(error), messageId }, "card not read from the rows: answered without it");
    return undefined;
  }
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

async function submitAnswer(
  deps: CardActionDeps,
  value: AskSubmitValue,
  operator: string,
  formValue: unknown,
  name: string | undefined,
  active: ActiveCard | undefined,
): Promise<CallbackResult> {
  const { registry } = deps;
  const ask = await registry.open(value.requestId);
  if (!ask || ask.sessionId !== value.sessionId) {
    // After a restart, or once answered elsewhere: the waiting tool call is gone (seed §4.5).
    return withCard(toast("warning", strings.feishu.askExpired), active && deps.cards.render(active));
  }
  // The registry's answerer is the truth; the button's `sender` is only what the card claimed. Said here,
  // before the form is read; the registry's settle refuses a wrong answerer all the same.
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
  const result = await registry.complete(ask.sessionId, ask.requestId, mapped.answers, {
    surface: "feishu",
    userId: operator,
  });
  if (!result.ok && result.reason === "forbidden") return onlyAnswerer(deps, ask.answererId);
  const won = result.ok;
  const done = submittedText(otherWins(ask, formValue, formName));
  // Settling removed the form from the card state synchronously; the response carries the card without it.
  return withCard(
    toast(won ? "success" : "warning", won ? done : strings.feishu.askExpired),
    active && deps.cards.render(active),
  );
}

/** 拒绝回答 on an outside agent's question: the rule is person-actions.ts's, shared with the session page. */
async function declineQuestion(
  deps: CardActionDeps,
  ask: PendingAsk,
  operator: string,
  active: ActiveCard | undefined,
): Promise<CallbackResult> {
  const result = await declineAsk(deps.registry, ask, { surface: "feishu", userId: operator });
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
async function submitStack(
  deps: CardActionDeps,
  stack: string,
  operator: string,
  formValue: unknown,
  active: ActiveCard | undefined,
): Promise<CallbackResult> {
  const { registry } = deps;
  const opened = await Promise.all(
    readStack(stack).map(async ({ askIndex, requestId }) => ({
      ask: await registry.open(requestId),
      formName: formFields.form(askIndex),
    })),
  );
  const held = opened.flatMap(({ ask, formName }) => (ask ? [{ ask, formName }] : []));
  if (held.length === 0)
    return withCard(toast("warning", strings.feishu.askExpired), active && deps.cards.render(active));
  const other = held.find(({ ask }) => ask.answererId !== operator);
  if (other) return onlyAnswerer(deps, other.ask.answererId);
  let missing: Localized | undefined;
  let answered = 0;
  const replaced: number[] = [];
  // The toast names a question by its number across the card, as the card shows it (asks/question-numbers.ts).
  const cardQuestions = held.flatMap(({ ask }) => ask.questions);
  const firsts = firstQuestionIndexes(held.map(({ ask }) => ask));
  for (const [k, { ask, formName }] of held.entries()) {
    const mapped = mapFormValue(ask.questions, formValue, formName);
    if (!mapped.ok) {
      active?.drafts.set(ask.requestId, readDraft(ask.questions, formValue, formName));
      const index = (firsts[k] ?? 0) + mapped.questionIndex;
      missing ??= inEveryLocale((s) => unansweredReason(s, cardQuestions, index));
      continue;
    }
    const by = { surface: "feishu", userId: operator };
    const result = await registry.complete(ask.sessionId, ask.requestId, mapped.answers, by);
    if (!result.ok && result.reason === "forbidden") return onlyAnswerer(deps, ask.answererId);
    if (result.ok) answered += 1;
    replaced.push(...otherWins(ask, formValue, formName));
  }
  const card = active && deps.cards.render(active);
  if (missing) return withCard(toast("warning", missing), card);
  if (answered === 0) return withCard(toast("warning", strings.feishu.askExpired), card);
  return withCard(toast("success", submittedText(replaced)), card);
}

/** An MCP server's form (asks/elicitation.ts): 提交 checks the fields; 拒绝 / 取消 need nothing filled in. */
async function answerElicitation(
  deps: CardActionDeps,
  ask: PendingAsk,
  elicitation: ElicitationAsk,
  value: AskSubmitValue,
  operator: string,
  formValue: unknown,
  name: string | undefined,
  active: ActiveCard | undefined,
): Promise<CallbackResult> {
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
  const result = await deps.registry.respond(ask.sessionId, ask.requestId, response, {
    surface: "feishu",
    userId: operator,
  });
  if (!result.ok && result.reason === "forbidden") return onlyAnswerer(deps, ask.answererId);
  const won = result.ok;
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
