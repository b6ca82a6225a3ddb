import { z } from "zod";
import type { Emulator } from "../emulator/index.ts";
import type { ConsoleFeed } from "./feed.ts";
import type { CallbackEntry, Toast } from "./view.ts";

/**
 * A click on a card, delivered as Feishu delivers it: `card.action.trigger` to the bot's webhook, signed and
 * encrypted, with the platform's 3 s limit. The answer's toast is returned and its card applied to the
 * message, like the Feishu client does; failures become the error toasts the client shows (§2.3).
 */

export const CALLBACK_TIMEOUT_MS = 3000;

const toastSchema = z.object({
  type: z.enum(["success", "error", "warning", "info"]),
  content: z.string().optional(),
  i18n: z.record(z.string(), z.string()).optional(),
});
const responseSchema = z.object({
  toast: toastSchema.optional(),
  card: z
    .union([
      z.object({ type: z.literal("raw"), data: z.record(z.string(), z.unknown()) }),
      z.object({ type: z.literal("template"), data: z.unknown() }),
    ])
    .optional(),
});

export interface ActionInput {
  messageId: string;
  chatId: string;
  operator: { openId: string; name: string };
  value?: Record<string, unknown>;
  formValue?: Record<string, unknown>;
  name?: string;
  label?: string;
}

export interface ActionOutcome {
  toast: Toast | null;
  durationMs: number;
  status?: number;
  card: CallbackEntry["card"];
  error?: string;
}

type Deps = { emulator: Emulator; feed: ConsoleFeed; webhookUrl: string };

export async function performAction(deps: Deps, input: ActionInput): Promise<ActionOutcome> {
  const { emulator, feed } = deps;
  const revBefore = feed.rev(input.messageId);
  const payload = emulator.cardAction({
    messageId: input.messageId,
    operatorOpenId: input.operator.openId,
    ...(input.value !== undefined ? { value: input.value } : {}),
    ...(input.formValue !== undefined ? { formValue: input.formValue } : {}),
    ...(input.name !== undefined ? { name: input.name } : {}),
  });
  const at = emulator.clock.now();
  const delivered = await deliver(deps, payload);
  const outcome = "outcome" in delivered ? delivered.outcome : applyAnswer(deps, input, delivered, revBefore);
  logCallback(feed, input, at, outcome);
  return outcome;
}

/** The bot's answer, or the error the client shows when there is none (§2.3: 3 s, no retry). */
async function deliver(
  deps: Deps,
  payload: unknown,
): Promise<{ body: unknown; durationMs: number } | { outcome: ActionOutcome }> {
  const started = performance.now();
  let result: Awaited<ReturnType<Emulator["deliverWebhook"]>>;
  try {
    result = await deps.emulator.deliverWebhook(deps.webhookUrl, payload, { timeoutMs: CALLBACK_TIMEOUT_MS });
  } catch (error) {
    const timedOut = error instanceof Error && error.name === "TimeoutError";
    const reason = timedOut
      ? `机器人未在 ${CALLBACK_TIMEOUT_MS / 1000} 秒内响应`
      : `无法连接机器人：${error instanceof Error ? error.message : String(error)}`;
    return { outcome: failed(200341, reason, round(performance.now() - started)) };
  }
  const durationMs = round(result.durationMs);
  if (result.status !== 200) {
    const outcome = failed(200671, `机器人返回 HTTP ${result.status}`, durationMs);
    return { outcome: { ...outcome, status: result.status } };
  }
  return { body: result.body, durationMs };
}

/** The answer's toast, and its card applied to the message as the client applies it. */
function applyAnswer(
  deps: Deps,
  input: ActionInput,
  answer: { body: unknown; durationMs: number },
  revBefore: number,
): ActionOutcome {
  const parsed = responseSchema.safeParse(answer.body);
  if (!parsed.success) return { ...failed(200672, "回调响应格式错误", answer.durationMs), status: 200 };
  const answered = { toast: toToast(parsed.data.toast), durationMs: answer.durationMs, status: 200 };
  const card = parsed.data.card;
  if (!card) return { ...answered, card: "none" };
  if (card.type === "template")
    return { ...answered, card: "rejected", error: "模拟器不支持模板卡片（card.type=template）" };
  // Our bot PATCHes only after its answer went out (DESIGN §5): an update that landed while the callback
  // was in flight is newer than the answer's card, which Feishu applied first. Keep the newer one.
  if (deps.feed.rev(input.messageId) !== revBefore) return { ...answered, card: "superseded" };
  const applied = deps.emulator.applyCallbackCard(input.messageId, card.data);
  if (applied.ok) return { ...answered, card: "applied" };
  return {
    ...answered,
    toast: { type: "error", content: `卡片更新失败（错误码 ${applied.code}）` },
    card: "rejected",
    error: `${applied.code}: ${applied.reason}`,
  };
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
    ...(outcome.error !== undefined ? { error: outcome.error } : {}),
    durationMs: outcome.durationMs,
  });
}

function failed(code: number, reason: string, durationMs: number): ActionOutcome {
  return {
    toast: { type: "error", content: `出错了，请稍后重试（错误码 ${code}）` },
    durationMs,
    card: "none",
    error: `${code}: ${reason}`,
  };
}

/** The client shows the zh_cn text when there is one. */
function toToast(toast: z.infer<typeof toastSchema> | undefined): Toast | null {
  if (!toast) return null;
  const content = toast.i18n?.zh_cn ?? toast.content;
  return content === undefined ? null : { type: toast.type, content };
}

const round = (ms: number): number => Math.round(ms * 10) / 10;
