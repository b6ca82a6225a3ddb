import { z } from "zod";

/**
 * The `value` objects our buttons carry, and their parser for card callbacks (DESIGN §6).
 * Values are flat objects of strings: the SDK only passes object values through (feishu-platform §1.2).
 */
const id = z.string().min(1).max(300);

export const askSubmitValue = z.strictObject({
  kind: z.literal("feishu_ask"),
  // decline / cancel: an MCP elicitation's other two answers (asks/elicitation.ts).
  act: z.enum(["submit", "decline", "cancel"]),
  sessionId: id,
  requestId: id,
  sender: id,
  /** The submit of stacked asks' one form: which ask each `ask{i}` is (form-fields.ts writeStack). */
  stack: z.string().min(1).max(4000).optional(),
});

export const progressValue = z.strictObject({
  kind: z.literal("progress"),
  // extend: 延长 the run's pending asks; replace: 取消并处理新消息 (issue 16).
  act: z.enum(["cancel", "retry", "extend", "replace"]),
  sessionId: id,
  runId: id,
  sender: id,
});

export const queueValue = z.strictObject({
  kind: z.literal("queue"),
  act: z.enum(["promote", "unqueue"]),
  sessionId: id,
  queueId: id,
  sender: id,
});

export const actionValueSchema = z.discriminatedUnion("kind", [askSubmitValue, progressValue, queueValue]);

export type AskSubmitValue = z.infer<typeof askSubmitValue>;
export type ProgressValue = z.infer<typeof progressValue>;
export type QueueValue = z.infer<typeof queueValue>;
export type ActionValue = z.infer<typeof actionValueSchema>;

/** An unknown or malformed value is a result, never an exception: the callback answers it with a toast. */
export function parseActionValue(
  value: unknown,
): { ok: true; value: ActionValue } | { ok: false; error: string } {
  const parsed = actionValueSchema.safeParse(value);
  if (parsed.success) return { ok: true, value: parsed.data };
  const issue = parsed.error.issues[0];
  return {
    ok: false,
    error: `unsupported action value${issue ? ` (${issue.path.join(".") || "value"}: ${issue.message})` : ""}`,
  };
}
