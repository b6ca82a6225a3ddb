import type { Emulator } from "../emulator/index.ts";
import type { ConsoleFeed } from "./feed.ts";
import type { CallbackEntry, Toast } from "./view.ts";

/**
 * A click on a card, delivered as Feishu delivers it: `card.action.trigger` over the app's subscription (the
 * long connection, or the signed and encrypted webhook), with the platform's 3 s limit. The emulator shows the
 * answer's toast and applies its card like the Feishu client does (`Emulator.click`); this logs the outcome.
 */

export const CALLBACK_TIMEOUT_MS = 3000;

export interface ActionInput {
  messageId: string;
  chatId: string;
  operator: { openId: string; name: string };
  value?: Record<string, unknown>;
  formValue?: Record<string, unknown>;
  name?: string;
  label?: string;
  /** The clicking client's language (the console's zh/en switch). */
  locale?: string;
}

export interface ActionOutcome {
  toast: Toast | null;
  durationMs: number;
  status?: number;
  card: CallbackEntry["card"];
  revertedUpdates?: number;
  error?: string;
}

type Deps = { emulator: Emulator; feed: ConsoleFeed };

export async function performAction(deps: Deps, input: ActionInput): Promise<ActionOutcome> {
  const at = deps.emulator.clock.now();
  const outcome: ActionOutcome = await deps.emulator.click(
    {
      messageId: input.messageId,
      operatorOpenId: input.operator.openId,
      ...(input.value !== undefined ? { value: input.value } : {}),
      ...(input.formValue !== undefined ? { formValue: input.formValue } : {}),
      ...(input.name !== undefined ? { name: input.name } : {}),
      ...(input.locale !== undefined ? { locale: input.locale } : {}),
    },
    { timeoutMs: CALLBACK_TIMEOUT_MS },
  );
  logCallback(deps.feed, input, at, outcome);
  return outcome;
}

function logCallback(feed: ConsoleFeed, input: ActionInput, at: number, outcome: ActionOutcome): void {
  feed.log({
    kind: "callback",
    at,
    messageId: input.messageId,
    chatId: input.chatId,
    operatorId: input.operator.openId,
    operatorName: input.operator.name,
    ...(input.label !== undefined ? { label: input.label } : {}),
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.value !== undefined ? { value: input.value } : {}),
    ...(input.formValue !== undefined ? { formValue: input.formValue } : {}),
    ...(outcome.status !== undefined ? { status: outcome.status } : {}),
    ...(outcome.toast ? { toast: outcome.toast } : {}),
    card: outcome.card,
    ...(outcome.revertedUpdates !== undefined ? { revertedUpdates: outcome.revertedUpdates } : {}),
    ...(outcome.error !== undefined ? { error: outcome.error } : {}),
    durationMs: outcome.durationMs,
  });
}
