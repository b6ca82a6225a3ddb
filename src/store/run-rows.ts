import type { Selectable } from "kysely";
import { z } from "zod";
import type { QueuedMessage, RunView, SessionInfo, Step } from "../domain/types.ts";
import { hasUsage, type RunUsage } from "../domain/usage.ts";
import type { QueuedMessagesTable, RunsTable, SessionsTable } from "./run-tables.ts";

/**
 * The rows of the bot's sessions, runs, messages and queue as either dialect returns them, and how they are read
 * back (repos.ts): with zod where they hold JSON, so a row written by an older version or edited by hand is an
 * error with a message, not an undefined at a distance.
 */

/** One text by locale code (a step's or an error's words in every language). */
export const wordsSchema = z.record(z.string(), z.string());

export const stepsSchema = z.array(
  z.object({
    id: z.string(),
    tool: z.string(),
    title: z.string(),
    status: z.enum(["pending", "running", "done", "failed", "stopped"]),
    summary: z.string().optional(),
    words: z
      .object({
        title: wordsSchema.optional(),
        summary: wordsSchema.optional(),
      })
      .optional(),
    startedAt: z.number(),
    endedAt: z.number().optional(),
  }),
);

export const toolCallsSchema = z.array(z.object({ id: z.string(), name: z.string(), arguments: z.string() }));

/** The rows as either dialect reads them back (run-tables.ts is their one description). */
type SessionRow = Selectable<SessionsTable>;
type RunRow = Omit<Selectable<RunsTable>, "source_json">;
type QueueRow = Omit<Selectable<QueuedMessagesTable>, "seq">;

export function sessionFromRow(row: SessionRow): SessionInfo {
  return {
    id: row.id,
    channel: row.channel,
    chatType: row.chat_type,
    ...(row.chat_id ? { chatId: row.chat_id } : {}),
    workspace: row.workspace,
    ownerId: row.owner_id,
    title: row.title,
    ...(row.chat_id && row.topic_root_id && row.topic_group_id
      ? {
          topic: {
            chatId: row.chat_id,
            rootMessageId: row.topic_root_id,
            groupSessionId: row.topic_group_id,
          },
        }
      : {}),
  };
}

export function runFromRow(row: RunRow): RunView {
  const steps: Step[] = stepsSchema.parse(JSON.parse(row.steps_json));
  return {
    id: row.id,
    sessionId: row.session_id,
    senderId: row.sender_id,
    input: row.input,
    status: row.status,
    steps,
    ...(row.final_text !== null ? { text: row.final_text } : {}),
    ...(row.error !== null ? { error: row.error } : {}),
    ...(row.error_words_json !== null
      ? { errorWords: wordsSchema.parse(JSON.parse(row.error_words_json)) }
      : {}),
    startedAt: row.started_at,
    ...(row.ended_at !== null ? { endedAt: row.ended_at } : {}),
    ...usageFromRow(row),
  };
}

/** The run's usage columns: NULL is unknown, so a run with none of them has no `usage`. */
export function usageFromRow(row: RunRow): { usage?: RunUsage } {
  const usage: RunUsage = {};
  if (row.input_tokens !== null) usage.inputTokens = row.input_tokens;
  if (row.output_tokens !== null) usage.outputTokens = row.output_tokens;
  if (row.cached_tokens !== null) usage.cachedTokens = row.cached_tokens;
  if (row.model !== null) usage.model = row.model;
  return hasUsage(usage) ? { usage } : {};
}

export function parseSource(json: string): Record<string, unknown> {
  return z.record(z.string(), z.unknown()).parse(JSON.parse(json));
}

export function queuedFromRow(row: QueueRow): QueuedMessage {
  const source = row.source_json ? parseSource(row.source_json) : undefined;
  return {
    id: row.id,
    sessionId: row.session_id,
    senderId: row.sender_id,
    text: row.text,
    ...(source ? { source } : {}),
    createdAt: row.created_at,
  };
}
