import type { RunUsage } from "./usage.ts";
/**
 * The shapes shared by sessions, runs, tools and agents: the domain every layer speaks. Nothing here imports
 * anything but other domain modules (test/boundary.test.ts enforces it).
 */

export type Channel = "feishu" | "wechat" | "web";
export type ChatType = "private" | "group" | "none";

export interface SessionInfo {
  id: string;
  channel: Channel;
  chatType: ChatType;
  /** Feishu chat id, when the session belongs to a Feishu chat. */
  chatId?: string;
  /** Working directory of the agent (session-id.ts builds a Feishu chat's). */
  workspace: string;
  /** Who opened the session (the private chat's user, or the first sender in a group). */
  ownerId: string;
  title: string;
  /**
   * Set on a session that is a topic of a group (issue 19), recorded when it is made (session-id.ts
   * `feishuSession`) and stored with it: what every reader asks — whether replies go into a thread, whose
   * members may view it, what clients are told — instead of reading it out of the id.
   */
  topic?: SessionTopic;
}

/** Where a topic session lives: its group chat, the message it hangs under, and the group's own session id. */
export interface SessionTopic {
  chatId: string;
  rootMessageId: string;
  /** The group's session id (it may have no session: a topic group's chat often has none). */
  groupSessionId: string;
}

/**
 * `rejected`: the agent stopped because the person refused what it asked for (an ACP permission). The person
 * chose it: it is neither a failure nor something to retry.
 */
export type RunStatus = "running" | "recovering" | "completed" | "failed" | "cancelled" | "rejected";

export const TERMINAL_STATUSES: readonly RunStatus[] = ["completed", "failed", "cancelled", "rejected"];

/** A run that has ended for good; the one definition of it (TERMINAL_STATUSES). */
export function isTerminal(run: Pick<RunView, "status">): boolean {
  return TERMINAL_STATUSES.includes(run.status);
}

/** The `tool` of steps that are an agent's plan entries: the card keeps them in view as the task's checklist. */
export const PLAN_STEP_TOOL = "plan";

/**
 * One text in every language, by Feishu locale code (`zh_cn`, `en_us`): the bot's own words on a step, so a
 * shared card shows each reader theirs (issue 19). The plain `title`/`summary` stay the bot's language.
 */
export type Words = Readonly<Record<string, string>>;

export type StepStatus = "pending" | "running" | "done" | "failed" | "stopped";

export interface Step {
  id: string;
  tool: string;
  title: string;
  /**
   * `pending`: announced but not begun (an ACP agent's plan entry or queued tool call). `stopped`: it was
   * still running when its run was cancelled, or the person refused it (an ACP permission): not a failure.
   */
  status: StepStatus;
  summary?: string;
  /** The bot's words of `title`/`summary` in every language; absent where an agent or model wrote them. */
  words?: { title?: Words; summary?: Words };
  startedAt: number;
  endedAt?: number;
}

export interface RunView {
  id: string;
  sessionId: string;
  /** The person whose message started the run: the only one who may answer its questions or cancel it. */
  senderId: string;
  input: string;
  status: RunStatus;
  steps: Step[];
  /** Text streamed so far, then the final answer (markdown). */
  text?: string;
  error?: string;
  /** `error` in every language when the bot wrote it (a model service's failure, a full disk). */
  errorWords?: Words;
  startedAt: number;
  endedAt?: number;
  /** The outside agent whose task this is (agents-api); absent for the bot's own runs. */
  agent?: string;
  /** Tokens and model of the run's model requests, where its agent reports them (domain/usage.ts). */
  usage?: RunUsage;
}

export interface QueuedMessage {
  id: string;
  sessionId: string;
  senderId: string;
  text: string;
  /** Where the message came from (e.g. the Feishu message id), for the channel that queued it. */
  source?: Record<string, unknown>;
  createdAt: number;
}

export interface HistoryMessage {
  role: "user" | "assistant" | "tool";
  content: string;
  runId?: string;
  toolCalls?: { id: string; name: string; arguments: string }[];
  toolCallId?: string;
  toolName?: string;
  summary?: string;
}

export interface ToolDefinition {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  /** A tool that only makes sense on one channel. */
  only?: "feishu" | "wechat";
}
