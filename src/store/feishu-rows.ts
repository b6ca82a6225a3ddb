import { z } from "zod";

/**
 * The Feishu channel's rows as its callers see them (store/feishu.ts reads and writes them), and how a row read
 * back is parsed: with zod, so a row edited by hand is an error with a message, not a wrong card.
 */

export interface ProgressCardRow {
  runId: string;
  sessionId: string;
  messageId: string;
  chatId: string;
  senderId: string;
  sourceMessageId: string;
  createdAt: number;
  gone: boolean;
  /** When the card's final state (its run ended) was confirmed on the platform; undefined until then. */
  finalLandedAt: number | undefined;
}

export interface QueuedCardRow {
  queueId: string;
  sessionId: string;
  messageId: string;
  sourceMessageId: string;
  chatId: string;
}

/**
 * A sent @-ping or expiry reminder (feishu/progress/pings.ts): its message, the run and asks it points at
 * (ended ones too), and whether it words people as a group does. Kept until the message was edited.
 */
export interface AskPingRow {
  messageId: string;
  kind: "ping" | "reminder";
  runId: string;
  requestIds: string[];
  group: boolean;
  sentAt: number;
}

const cardSchema = z.object({
  run_id: z.string(),
  session_id: z.string(),
  message_id: z.string(),
  chat_id: z.string(),
  sender_id: z.string(),
  source_message_id: z.string(),
  created_at: z.number(),
  gone: z.number(),
  final_landed_at: z.number().nullable(),
});

const pingSchema = z.object({
  message_id: z.string(),
  kind: z.enum(["ping", "reminder"]),
  run_id: z.string(),
  request_ids: z.string(),
  in_group: z.number(),
  sent_at: z.number(),
});

const queuedSchema = z.object({
  queue_id: z.string(),
  session_id: z.string(),
  message_id: z.string(),
  source_message_id: z.string(),
  chat_id: z.string(),
});

export function toPing(raw: unknown): AskPingRow {
  const row = pingSchema.parse(raw);
  return {
    messageId: row.message_id,
    kind: row.kind,
    runId: row.run_id,
    requestIds: parseIds(row.request_ids),
    group: row.in_group === 1,
    sentAt: row.sent_at,
  };
}

export function toQueuedCard(raw: unknown): QueuedCardRow {
  const row = queuedSchema.parse(raw);
  return {
    queueId: row.queue_id,
    sessionId: row.session_id,
    messageId: row.message_id,
    sourceMessageId: row.source_message_id,
    chatId: row.chat_id,
  };
}

export function toCard(raw: unknown): ProgressCardRow {
  const row = cardSchema.parse(raw);
  return {
    runId: row.run_id,
    sessionId: row.session_id,
    messageId: row.message_id,
    chatId: row.chat_id,
    senderId: row.sender_id,
    sourceMessageId: row.source_message_id,
    createdAt: row.created_at,
    gone: row.gone === 1,
    finalLandedAt: row.final_landed_at ?? undefined,
  };
}

function parseIds(json: string): string[] {
  try {
    const ids: unknown = JSON.parse(json);
    return Array.isArray(ids) ? ids.filter((id): id is string => typeof id === "string") : [];
  } catch {
    return [];
  }
}
