import { z } from "zod";
import type { AskOutcome, PendingAsk } from "../asks/pending.ts";
import { canExtend, type ExtendTimes } from "../asks/person-actions.ts";
import type { TopicInfo } from "../domain/topic-view.ts";
import type { QueuedMessage, RunView } from "../domain/types.ts";

/**
 * WebSocket frames (DESIGN §7): JSON `{type, sessionId, data}`.
 * Client → server frames are parsed here, once; the hub below sees typed values only.
 */

export const MAX_FRAME_BYTES = 1024 * 1024;

const sessionId = z.string().min(1).max(300);

export const clientFrameSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("subscribe"), sessionId, data: z.unknown().optional() }),
  z.object({ type: z.literal("unsubscribe"), sessionId, data: z.unknown().optional() }),
  z.object({
    type: z.literal("ask_user_questions_result"),
    sessionId,
    data: z.object({ requestId: z.string().min(1).max(200), answers: z.unknown() }),
  }),
  // 拒绝回答 an outside agent's question (asks/person-actions.ts): the agent reads status "declined".
  z.object({
    type: z.literal("ask_user_questions_decline"),
    sessionId,
    data: z.object({ requestId: z.string().min(1).max(200) }),
  }),
  z.object({ type: z.literal("cancel"), sessionId, data: z.unknown().optional() }),
  // 延长: the session's running task's pending deadlines, as the card's button does (asks/person-actions.ts).
  z.object({ type: z.literal("extend"), sessionId, data: z.unknown().optional() }),
  z.object({ type: z.literal("ping"), sessionId: z.string().optional(), data: z.unknown().optional() }),
]);

export type ClientFrame = z.infer<typeof clientFrameSchema>;

export type ErrorCode =
  | "bad_frame"
  | "frame_too_large"
  | "unknown_type"
  | "forbidden"
  | "not_found"
  | "invalid_answers"
  | "stale_request"
  | "not_running"
  | "extend_limit"
  | "too_many_subscriptions"
  | "rate_limited"
  /** The database refused the write (a full disk, Postgres away): nothing changed, send it again later. */
  | "unavailable";

export type ServerFrame =
  | {
      type: "ask_user_questions";
      sessionId: string;
      data: {
        requestId: string;
        questions: PendingAsk["questions"];
        metadata: Record<string, unknown>;
        /** The deadline (ms since the epoch); each page writes it in its viewer's own zone. */
        expiresAt: number;
        /** One more 延长 fits this ask's bound. */
        canExtend: boolean;
        /** 拒绝回答 is offered (an outside agent's question). */
        declinable: boolean;
      };
    }
  | { type: "ask_user_questions_cancelled"; sessionId: string; data: { requestId: string; reason: string } }
  | { type: "ask_user_questions_accepted"; sessionId: string; data: { requestId: string } }
  | { type: "session_snapshot"; sessionId: string; data: SessionSnapshot }
  | {
      type: "subscribed";
      sessionId: string;
      /** For a topic session only: where it is (`topic`) and its title (its group and first words). */
      data: {
        canAnswer: boolean;
        /** The session's runs may be cancelled from a page (RunSession.allows; the runner checks who). */
        canCancel: boolean;
        title?: string;
        topic?: TopicInfo;
      };
    }
  | { type: "cancelled"; sessionId: string; data: { runId: string } }
  | { type: "pong"; sessionId: string; data: Record<string, never> }
  | {
      type: "error";
      sessionId: string | null;
      /** `action`: the refused 取消任务 or 延长 (a page says so by its buttons, not as a page error). */
      data: { code: ErrorCode; message: string; requestId?: string; action?: "cancel" | "extend" };
    };

export interface SessionSnapshot {
  active: boolean;
  run: RunView | null;
  /** The first queued messages, their text cut to a preview (ws/snapshot.ts); `queuedCount` counts them all. */
  queued: Pick<QueuedMessage, "id" | "senderId" | "text" | "createdAt">[];
  queuedCount: number;
}

export function askFrame(ask: PendingAsk, times: ExtendTimes): ServerFrame {
  return {
    type: "ask_user_questions",
    sessionId: ask.sessionId,
    data: {
      requestId: ask.requestId,
      questions: ask.questions,
      metadata: ask.metadata ?? {},
      expiresAt: ask.expiresAt,
      canExtend: canExtend(ask, times),
      declinable: ask.declinable === true,
    },
  };
}

export function cancelledFrame(ask: PendingAsk, outcome: AskOutcome): ServerFrame {
  const reason =
    outcome.kind === "answered"
      ? `answered via ${outcome.surface}`
      : outcome.kind === "timeout" || outcome.kind === "declined"
        ? outcome.kind
        : outcome.reason;
  return {
    type: "ask_user_questions_cancelled",
    sessionId: ask.sessionId,
    data: { requestId: ask.requestId, reason },
  };
}

/** Parses one text frame; returns an error frame's code and message when it is not a frame we accept. */
export function parseClientFrame(
  text: string,
): { ok: true; frame: ClientFrame } | { ok: false; code: ErrorCode; message: string } {
  if (Buffer.byteLength(text) > MAX_FRAME_BYTES) {
    return { ok: false, code: "frame_too_large", message: `frames are limited to ${MAX_FRAME_BYTES} bytes` };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, code: "bad_frame", message: "frame is not valid JSON" };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { ok: false, code: "bad_frame", message: "frame must be a JSON object {type, sessionId, data}" };
  }
  const type = (value as { type?: unknown }).type;
  if (!clientFrameSchema.options.some((option) => option.shape.type.value === type)) {
    return { ok: false, code: "unknown_type", message: `unknown frame type ${JSON.stringify(type)}` };
  }
  const parsed = clientFrameSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue ? issue.path.map(String).join(".") : "";
    return {
      ok: false,
      code: "bad_frame",
      message: `${where ? `${where}: ` : ""}${issue?.message ?? "bad frame"}`,
    };
  }
  return { ok: true, frame: parsed.data };
}
