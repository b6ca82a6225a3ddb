import { unansweredReason } from "../asks/answers.ts";
import type { PendingAsk } from "../asks/pending.ts";
import { firstQuestionIndexes } from "../asks/question-numbers.ts";
import type { AskRegistry } from "../asks/registry.ts";
import { REPLY_SURFACE, readReply } from "../asks/reply-answer.ts";
import type { SessionInfo } from "../domain/types.ts";
import { strings } from "../strings/index.ts";
import type { InboundMessage } from "./events.ts";
import type { ActiveCard, CardBook } from "./progress/card-book.ts";
import { endedText } from "./progress/pings.ts";

/**
 * Answering by replying to the card (issue 30): a text message that quotes a progress card with a pending
 * question is an answer to it, one more surface under the registry's compare-and-set beside the card's form,
 * the session page and a WebSocket client. What the reply says is read by asks/reply-answer.ts; who may
 * answer is the registry's answerer, as for a click (card-actions.ts).
 *
 * A reply to a card with nothing to answer is an ordinary message, except while the card's run still waits
 * on it: a question that just ended (answered elsewhere, timed out) is said to be gone, since the person
 * meant to answer it and a new task made of "2" would surprise them.
 */

export interface CardReplyDeps {
  book: Pick<CardBook, "byMessage" | "asksOf" | "runOf">;
  registry: Pick<AskRegistry, "complete" | "latestOfRun" | "state">;
  /** A person's name if the channel learned it: the refusal names who may answer. */
  nameOf(userId: string): string | undefined;
}

/**
 * What became of a reply: an answer (with, when it completed some asks and not another, that one's refusal to
 * send back), a refusal to send back (nothing settled), or an ordinary message.
 */
export type ReplyOutcome =
  | { kind: "answered"; refusal?: string }
  | { kind: "refused"; text: string }
  | { kind: "message" };

/** The live card a message quotes (its parent, else the root of its reply tree), if it is one of ours. */
export function cardRepliedTo(
  book: Pick<CardBook, "byMessage">,
  message: Pick<InboundMessage, "parentId" | "rootId">,
): ActiveCard | undefined {
  for (const id of [message.parentId, message.rootId]) {
    const card = id === undefined ? undefined : book.byMessage(id);
    if (card && !card.gone) return card;
  }
  return undefined;
}

/** The question asks a reply can answer (an MCP server's form has fields, not options: only its form answers). */
function questionAsks(deps: CardReplyDeps, card: ActiveCard): PendingAsk[] {
  return deps.book.asksOf(card).filter((ask) => !ask.elicitation);
}

/**
 * Whether a reply quoting `card` is about a question (then `answerByReply` decides it), without touching
 * anything: the caller records the message as seen first, so a redelivery settles nothing twice.
 */
export function isAboutQuestion(deps: CardReplyDeps, card: ActiveCard): boolean {
  // A running card whose question ended is told so (answerByReply reads the row); one that never asked is not.
  if (questionAsks(deps, card).length > 0) return true;
  return card.asked === true && deps.book.runOf(card).status === "running";
}

/** The words for the run's last question, when it ended and the run goes on (a reply came too late). */
async function endedWhileRunning(deps: CardReplyDeps, card: ActiveCard): Promise<string | undefined> {
  if (deps.book.runOf(card).status !== "running") return undefined;
  const latest = await deps.registry.latestOfRun(card.runId);
  if (!latest?.outcome) return undefined;
  return endedText(latest.outcome, card.chatType === "group");
}

/**
 * The reply as answers to the card's open questions, numbered across all of them as the card numbers them
 * (asks/question-numbers.ts): `1:2 3:暗色模式` or one line per question may reach several stacked asks, and
 * each ask it names settles under its own compare-and-set; a bare answer (`2`, a label, free text) is the first
 * open question's. An ask the reply names only in part gets the card's own refusal (第 N 题「…」：请至少选择一项或
 * 填写其他) and settles nothing; the others it completes are answered all the same, as with the card's one
 * stacked form (card-actions.ts submitStack). Only the asks' answerer, in the card's chat and thread, may
 * answer. `session` is where the reply itself was routed (topics.ts): a reply in a thread opened under the card
 * is another conversation than the card's.
 */
export async function answerByReply(
  deps: CardReplyDeps,
  card: ActiveCard,
  message: Pick<InboundMessage, "senderOpenId" | "chatId">,
  session: Pick<SessionInfo, "topic">,
  text: string,
): Promise<ReplyOutcome> {
  const asks = questionAsks(deps, card);
  const first = asks[0];
  if (!first) {
    const ended = await endedWhileRunning(deps, card);
    return ended === undefined ? { kind: "message" } : { kind: "refused", text: ended };
  }
  const cardQuestions = asks.flatMap((ask) => ask.questions);
  const read = readReply(cardQuestions, text);
  const firsts = firstQuestionIndexes(asks);
  const named = asks.flatMap((ask, k) => {
    const from = firsts[k] ?? 0;
    const answers = read.slice(from, from + ask.questions.length);
    return answers.some((answer) => answer !== undefined) ? [{ ask, from, answers }] : [];
  });
  // Said before the reply is read further; the registry's settle refuses a wrong answerer all the same.
  // The asks the reply names (a bare answer names the first): another ask's answerer is no one's business here.
  const targets = named.length > 0 ? named.map(({ ask }) => ask) : [first];
  const stranger = targets.find((ask) => ask.answererId !== message.senderOpenId);
  if (stranger) return { kind: "refused", text: onlyAnswererText(deps, stranger) };
  const sameThread = session.topic?.rootMessageId === card.topic?.rootMessageId;
  if (message.chatId !== card.chatId || !sameThread)
    return { kind: "refused", text: strings.feishu.replyElsewhere };
  const by = { surface: REPLY_SURFACE, userId: message.senderOpenId };
  let answered = 0;
  let refusal: string | undefined;
  for (const { ask, from, answers } of named) {
    const missing = answers.findIndex((answer) => !answer);
    if (missing >= 0) {
      refusal ??= unansweredReason(strings, cardQuestions, from + missing);
      continue;
    }
    const complete = answers.filter((answer) => answer !== null && answer !== undefined);
    const result = await deps.registry.complete(ask.sessionId, ask.requestId, complete, by);
    if (result.ok) answered += 1;
    else if (result.reason === "forbidden") refusal ??= onlyAnswererText(deps, ask);
    // Another surface answered first (or the deadline passed) between reading the ask and settling it.
    else refusal ??= await endedTextOf(deps, card, ask);
  }
  if (answered > 0) return refusal === undefined ? { kind: "answered" } : { kind: "answered", refusal };
  return { kind: "refused", text: refusal ?? unansweredReason(strings, cardQuestions, 0) };
}

/** How an ask that a reply lost ended (answered elsewhere, timed out), in the card's words. */
async function endedTextOf(
  deps: CardReplyDeps,
  card: ActiveCard,
  ask: Pick<PendingAsk, "requestId">,
): Promise<string> {
  const outcome = (await deps.registry.state(ask.requestId))?.outcome;
  return outcome ? endedText(outcome, card.chatType === "group") : strings.feishu.askExpired;
}

/** 只有 … 可以回答: the refusal of a reply by someone else than the person asked. */
function onlyAnswererText(deps: Pick<CardReplyDeps, "nameOf">, ask: Pick<PendingAsk, "answererId">): string {
  const name = deps.nameOf(ask.answererId);
  return name === undefined ? strings.feishu.onlyAnswererUnnamed : strings.feishu.onlyAnswerer(name);
}
