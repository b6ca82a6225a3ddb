import type { HistoryMessage, SessionInfo, Step, ToolDefinition, Words } from "../../domain/types.ts";
import type { RunUsage } from "../../domain/usage.ts";

/**
 * The port every agent implements. An agent reads the input and history, calls tools through
 * `callTool` / `callTools` (the runner records each call as a step and in history), may stream text, and
 * returns its final answer. It must stop when `signal` aborts; throwing means the run failed with that message.
 */

/** One tool call of an assistant turn. `args` may be the model's raw text when it is not valid JSON. */
export interface ToolCallRequest {
  /**
   * The model's own id for the call, kept byte-for-byte in the saved turn and history: the history a model is
   * sent back must be what it wrote (prompt caches, providers that check ids). The runner makes one only when
   * there is none (or it repeats another call's of the same turn).
   */
  id?: string;
  name: string;
  args: unknown;
  /** The step's title on the card (default: the tool's name). */
  title?: string;
  /** The title in every language, when it is the bot's words (等待你的回答), not the model's. */
  titleWords?: Words;
  /**
   * Withdraws this call alone (an ACP agent's `$/cancel_request`): a question it is waiting on is cancelled
   * and its form leaves the card at once; the run goes on. Aborting the run is the run's signal's job.
   */
  signal?: AbortSignal;
}

export interface AgentContext {
  session: SessionInfo;
  runId: string;
  senderId: string;
  input: string;
  /** Saved conversation of this session, oldest first (includes this run's input and, on resume, its progress). */
  history: HistoryMessage[];
  /** True when the run is being resumed after a restart. */
  resumed: boolean;
  /**
   * On resume: the turns that were waiting on a question when the process stopped, oldest first. Making the
   * same turn again (same calls, same arguments) through `callTools` continues it: returned calls are not run
   * again and the question waits on its original request. A model agent replays it instead of asking the
   * model again.
   */
  pendingTurns?: { text: string; calls: { id: string; name: string; arguments: string }[] }[];
  /** Tools this session's agent may call, already filtered for the session. */
  tools: ToolDefinition[];
  /** A turn of one call: `callTools([{ name, args, title }])`. */
  callTool(
    name: string,
    args: unknown,
    options?: { title?: string; titleWords?: Words; signal?: AbortSignal },
  ): Promise<string>;
  /**
   * One assistant turn: the calls run together; the turn (its `text`, every call, every result) is saved
   * only after all of them returned, so an interrupted turn leaves nothing half-saved. Results keep the
   * calls' order.
   */
  callTools(calls: ToolCallRequest[], options?: { text?: string }): Promise<string[]>;
  /** Text of the answer so far, for a live preview; the final text is the return value. */
  reportText(text: string): void;
  /**
   * For agents whose tools run outside the runner (an ACP agent reports its own plan and tool calls): shows
   * or updates the step known by `key`, or removes it when `step` is null. Not saved to history (the agent
   * keeps its own), only on the run and its card.
   */
  reportStep(key: string, step: ReportedStep | null): void;
  /**
   * Several `reportStep`s and the text at once, as one change of the run: one write and one update for the
   * lot (an agent that coalesces a burst of its own updates hands them on this way).
   */
  reportBatch?(batch: { text?: string; steps: readonly (readonly [string, ReportedStep | null])[] }): void;
  /**
   * What one model request cost, as the service reported it (an unknown field left out): added to the run's
   * sums (domain/usage.ts), saved with the run, shown on its final card. Agents that learn nothing say nothing.
   */
  reportUsage?(usage: RunUsage): void;
  signal: AbortSignal;
}

export type ReportedStep = Pick<Step, "tool" | "title" | "status" | "words"> & { summary?: string };

export interface AgentResult {
  text: string;
  /**
   * `rejected`: the agent stopped because the person refused what it asked (an ACP permission); the run ends
   * 已拒绝, neither failed nor completed. Absent: the agent finished its answer.
   */
  ending?: "rejected";
}

export interface Agent {
  readonly name: string;
  run(context: AgentContext): Promise<AgentResult>;
  /** Stops what the agent keeps between runs (an ACP agent's child processes); called once on shutdown. */
  close?(): Promise<void>;
  /**
   * Whether the run's agent lives on its host (an ACP agent: its process and workspace are on that disk), so
   * that the run cannot move to another instance (issue 27): with several instances only an instance with the
   * same DATA_DIR resumes it. Absent: the run resumes anywhere (its state is all in the store).
   */
  pinned?(runId: string): Promise<boolean>;
}
