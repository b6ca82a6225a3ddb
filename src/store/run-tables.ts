import type { Generated } from "kysely";
import type { HistoryMessage, RunStatus, SessionInfo } from "../domain/types.ts";

/**
 * The bot's sessions, runs, messages, queue, pending turns and members as Kysely sees them (sql.ts), on either
 * dialect. Times are milliseconds since the epoch; JSON columns are text, parsed back with zod (run-rows.ts).
 */

export interface SessionsTable {
  id: string;
  channel: SessionInfo["channel"];
  chat_type: SessionInfo["chatType"];
  chat_id: string | null;
  workspace: string;
  owner_id: string;
  title: string;
  topic_root_id: string | null;
  topic_group_id: string | null;
  created_at: number;
  updated_at: number;
}

export interface RunsTable {
  id: string;
  session_id: string;
  sender_id: string;
  input: string;
  status: RunStatus;
  steps_json: string;
  final_text: string | null;
  error: string | null;
  error_words_json: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  cached_tokens: number | null;
  model: string | null;
  started_at: number;
  ended_at: number | null;
  source_json: string | null;
}

export interface MessagesTable {
  /** Ascending in insertion order on both dialects (AUTOINCREMENT, bigserial): the history's order. */
  id: Generated<number>;
  session_id: string;
  run_id: string | null;
  role: HistoryMessage["role"];
  content: string;
  tool_calls: string | null;
  tool_call_id: string | null;
  tool_name: string | null;
  summary: string | null;
  created_at: number;
}

export interface QueuedMessagesTable {
  id: string;
  session_id: string;
  sender_id: string;
  text: string;
  source_json: string | null;
  /** A real: 插队 puts a message before the first (min − 1), and positions are counted, not stored. */
  seq: number;
  created_at: number;
}

export interface PendingTurnsTable {
  turn_id: string;
  run_id: string;
  session_id: string;
  text: string;
  calls: string;
  created_at: number;
}

export interface SessionMembersTable {
  session_id: string;
  user_id: string;
  last_seen_at: number;
}

export interface RunTables {
  sessions: SessionsTable;
  runs: RunsTable;
  messages: MessagesTable;
  queued_messages: QueuedMessagesTable;
  pending_turns: PendingTurnsTable;
  session_members: SessionMembersTable;
}
