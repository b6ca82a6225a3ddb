import type { AskRegistry } from "../asks/registry.ts";
import type { Card } from "../cards/model.ts";
import type { SessionRuns } from "../domain/ports.ts";
import type { FeishuStore } from "../store/feishu.ts";
import { currentLocale, type Localized, bilingual as strings } from "../strings/index.ts";
import type { AskTimes } from "./ask-deadline.ts";
import type { ActiveCard } from "./progress/card-book.ts";
import type { RemoteAnswers } from "./progress/remote-answers.ts";
import type { QueuedCards } from "./queued-cards.ts";

/**
 * What a card click (card-actions.ts, run-actions.ts) may read and change, and what it answers: a toast in
 * every language, and the card as it is now.
 */

/** Everything a click may read or change, named: the runtime (runtime.ts) hands these over explicitly. */
export interface CardActionDeps {
  runner: Pick<
    SessionRuns,
    "activeRun" | "currentRun" | "cancel" | "replace" | "retry" | "queued" | "promote" | "unqueue"
  >;
  registry: Pick<
    AskRegistry,
    "get" | "open" | "pendingOfRun" | "complete" | "respond" | "decline" | "getPendingForSession" | "extend"
  >;
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
  /** Several instances: cards whose tasks other instances run (progress/remote-answers.ts). */
  remote?: Pick<RemoteAnswers, "answering" | "cardFromRows" | "responded">;
  times: Pick<AskTimes, "extendMs" | "extendMaxMs" | "timeZone">;
  now: () => number;
  /** The app whose card was clicked (feishu/apps.ts): a retry's new card goes out through it too. */
  appId?: string;
}

export type Toast = { type: "success" | "error" | "info" | "warning"; content: string; i18n: Localized };
export interface CallbackResult {
  response: { toast?: Toast; card?: { type: "raw"; data: Card } };
  /** `delivered`: this response (not the transport's timeout toast) is what the platform got. */
  afterResponse?: (delivered: boolean) => void;
}

/** A question's form clicked by someone else: the toast names who may answer (issue 25), when it can. */
export function onlyAnswerer(deps: Pick<CardActionDeps, "cards">, answererId: string): CallbackResult {
  const name = deps.cards.nameOf(answererId);
  return toast(
    "error",
    name === undefined ? strings.feishu.onlyAnswererUnnamed : strings.feishu.onlyAnswerer(name),
  );
}

/** A toast in the bot's language, with every language in `i18n`. */
export function toast(type: Toast["type"], text: Localized): CallbackResult {
  return { response: { toast: { type, content: text[currentLocale()], i18n: text } } };
}

export function withCard(result: CallbackResult, card: Card | undefined): CallbackResult {
  return card ? { response: { ...result.response, card: { type: "raw", data: card } } } : result;
}
