import { z } from "zod";
import { applyCallbackCard, beforeCallback, revertUpdatesDuring } from "./callback-card.ts";
import type { EmulatorContext } from "./context.ts";
import type { Deliverer } from "./delivery.ts";
import { cardActionEvent } from "./events.ts";
import type { CardActionInput, ClickOutcome } from "./types.ts";

/**
 * A click as the Feishu client experiences it, over whichever transport the app subscribed: the callback is
 * pushed, the answer must come within 3 s (no retry), its toast is shown and its card applied to the message
 * (feishu-platform §2.3). Whatever goes wrong becomes the error toast the client shows.
 */

export const CALLBACK_DEADLINE_MS = 3000;

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

export async function click(
  ctx: EmulatorContext,
  deliverer: Deliverer,
  input: CardActionInput,
  options: { timeoutMs?: number } = {},
): Promise<ClickOutcome> {
  const payload = cardActionEvent(ctx, input);
  const before = beforeCallback(ctx, input.messageId);
  const timeoutMs = options.timeoutMs ?? CALLBACK_DEADLINE_MS;
  const started = performance.now();
  let answer: { status: number; body: unknown; durationMs: number };
  // Every CardKit update of this card fails with 200810 until the answer is in (feishu-platform §2.3).
  ctx.cardkit.callbackStarted(input.messageId);
  try {
    answer = await deliverer.deliver(payload, { timeoutMs });
  } catch (error) {
    const timedOut = error instanceof Error && error.name === "TimeoutError";
    const reason = timedOut
      ? `机器人未在 ${timeoutMs / 1000} 秒内响应`
      : `无法连接机器人：${error instanceof Error ? error.message : String(error)}`;
    return failed(200341, reason, performance.now() - started);
  } finally {
    ctx.cardkit.callbackEnded(input.messageId);
  }
  const durationMs = answer.durationMs;
  if (answer.status !== 200)
    return { ...failed(200671, `机器人返回 ${answer.status}`, durationMs), status: answer.status };
  const parsed = responseSchema.safeParse(answer.body);
  if (!parsed.success)
    return { ...failed(200672, "回调响应格式错误", durationMs), status: 200, answer: answer.body };
  // An update that landed while the callback was in progress is undone (§2.3 "Card reverts"): whatever the
  // bot sent meanwhile is lost, and the answer's card is what the clicker sees.
  const reverted = revertUpdatesDuring(ctx, input.messageId, before);
  const answered = {
    toast: toToast(parsed.data.toast, input.locale ?? ctx.config.clientLocale),
    durationMs: round(durationMs),
    status: 200,
    answer: answer.body,
    ...(reverted > 0 ? { revertedUpdates: reverted } : {}),
  };
  const card = parsed.data.card;
  if (!card) return { ...answered, card: "none" };
  if (card.type === "template")
    return { ...answered, card: "rejected", error: "模拟器不支持模板卡片（card.type=template）" };
  const applied = applyCallbackCard(ctx, input.messageId, card.data, input.operatorOpenId);
  if (applied.ok) return { ...answered, card: "applied" };
  return {
    ...answered,
    toast: { type: "error", content: `卡片更新失败（错误码 ${applied.code}）` },
    card: "rejected",
    error: `${applied.code}: ${applied.reason}`,
  };
}

function failed(code: number, reason: string, durationMs: number): ClickOutcome {
  return {
    toast: { type: "error", content: `出错了，请稍后重试（错误码 ${code}）` },
    durationMs: round(durationMs),
    card: "none",
    error: `${code}: ${reason}`,
  };
}

/** The client shows the toast's `i18n` text for its own language when there is one, else `content`. */
function toToast(toast: z.infer<typeof toastSchema> | undefined, locale: string): ClickOutcome["toast"] {
  if (!toast) return null;
  const content = toast.i18n?.[locale] ?? toast.content;
  return content === undefined ? null : { type: toast.type, content };
}

const round = (ms: number): number => Math.round(ms * 10) / 10;
