import type { ContentBlock, SessionUpdate, ToolCallUpdate, ToolKind } from "@agentclientprotocol/sdk";
import { PLAN_STEP_TOOL } from "../../../domain/types.ts";
import { inEveryLocale, strings } from "../../../strings/index.ts";
import type { AgentContext, ReportedStep } from "../agent.ts";
import { hidePaths, type StepSummary, summarize } from "./step-summary.ts";

/**
 * Turns one prompt turn's `session/update` notifications into what the card shows: the plan as a checklist
 * of steps, each tool call as a step (kind, title, status, one-line summary), the agent's message as the
 * streamed answer. Thoughts are left out: they are the agent's scratch work, not its answer. The runner and
 * the publisher coalesce the changes, so every update is reported as it comes.
 */

type Sink = Pick<AgentContext, "reportStep" | "reportText">;

/**
 * Bounds on what one turn may make us keep (issue 24 item 10): the answer's length (a card shows a few
 * thousand characters; the rest is stored and kept in history, so it must not grow without end) and the
 * number of distinct tool calls followed (each is a step on the run).
 */
export const MAX_ANSWER_CHARS = 100_000;
export const MAX_TOOL_CALLS = 1_000;

interface ToolState {
  title: string;
  kind: ToolKind;
  status: ReportedStep["status"];
  summary?: StepSummary;
  /** The paths it touches, as announced by any of its updates. */
  where: string;
}

const TOOL_STATUS = {
  pending: "pending",
  in_progress: "running",
  completed: "done",
  failed: "failed",
} as const satisfies Record<string, ReportedStep["status"]>;

export class TurnReporter {
  readonly #sink: Sink;
  readonly #tools = new Map<string, ToolState>();
  #text = "";
  /** A tool ran since the last text: the next text starts a new paragraph rather than gluing on. */
  #paragraph = false;
  #planLength = 0;
  /** Calls whose permission the person refused: they end 已拒绝 (stopped), whatever failure the agent reports. */
  readonly #refused = new Set<string>();

  readonly #roots: string[];

  /** `roots`: the workspace's paths, shown relative on the card (the reader knows which chat this is). */
  constructor(sink: Sink, roots: readonly string[] = []) {
    this.#sink = sink;
    this.#roots = [...new Set(roots)];
  }

  /** Host paths off the card: relative inside the workspace, elided outside (step-summary.ts). */
  #short(text: string): string {
    return hidePaths(text, this.#roots);
  }

  /** The agent's message so far (the final answer once the turn stops). */
  get text(): string {
    return this.#text;
  }

  apply(update: SessionUpdate): void {
    switch (update.sessionUpdate) {
      case "agent_message_chunk":
        return this.#appendText(update.content);
      case "tool_call":
        return this.#tool(update, true);
      case "tool_call_update":
        return this.#tool(update, false);
      case "plan":
        return this.#plan(update.entries);
      default:
        // Thoughts, mode/command lists, usage, user echoes during a load: nothing a reader of the card needs.
        return;
    }
  }

  /** A permission request carries the call it is about, possibly with fields not announced before. */
  toolCallSeen(call: ToolCallUpdate): ToolState {
    this.#tool(call, !this.#tools.has(call.toolCallId));
    return (
      this.#tools.get(call.toolCallId) ?? {
        title: call.title ?? "",
        kind: "other",
        status: "pending",
        where: "",
      }
    );
  }

  /** The person refused this call's permission: its step reads ⏹️ … · 已拒绝 from now on. */
  refused(toolCallId: string): void {
    this.#refused.add(toolCallId);
    if (this.#tools.has(toolCallId)) this.#tool({ toolCallId }, false);
  }

  /** Whether the person refused a permission in this turn. */
  get anyRefused(): boolean {
    return this.#refused.size > 0;
  }

  #appendText(content: ContentBlock): void {
    if (content.type !== "text" || content.text === "") return;
    // Past the cap the answer ends in "…" and further chunks are dropped (the turn itself goes on).
    if (this.#text.length >= MAX_ANSWER_CHARS) return;
    if (this.#paragraph && this.#text !== "" && !this.#text.endsWith("\n\n")) this.#text += "\n\n";
    this.#paragraph = false;
    this.#text += content.text;
    if (this.#text.length >= MAX_ANSWER_CHARS) this.#text = `${this.#text.slice(0, MAX_ANSWER_CHARS - 1)}…`;
    this.#sink.reportText(this.#text);
  }

  #tool(call: ToolCallUpdate, created: boolean): void {
    const known = this.#tools.get(call.toolCallId);
    if (!known && this.#tools.size >= MAX_TOOL_CALLS) return;
    const state: ToolState = {
      title: this.#short(call.title ?? known?.title ?? ""),
      kind: call.kind ?? known?.kind ?? "other",
      // A new call without a status is pending (ACP's default); an update without one keeps the old.
      status: call.status ? TOOL_STATUS[call.status] : (known?.status ?? (created ? "pending" : "running")),
      where: this.#short(locationsOf(call)) || known?.where || "",
    };
    // Where it acts says nothing new when the title names the same path already.
    if (state.where && state.title.includes(state.where)) state.where = "";
    const summary = this.#shortSummary(summarize(call)) ?? known?.summary;
    if (summary) state.summary = summary;
    this.#tools.set(call.toolCallId, state);
    this.#paragraph = true;
    const shown = state.title || call.toolCallId;
    const title = {
      title: `${strings.acp.toolKinds[state.kind]} · ${shown}`,
      // The kind is our word, the title the agent's: each language frames it in its own (读取 / Read).
      words: { title: inEveryLocale((s) => `${s.acp.toolKinds[state.kind]} · ${shown}`) },
    };
    // Refused by the person (the agent then reports it failed, or never again): stopped, and said so.
    if (this.#refused.has(call.toolCallId) && state.status !== "done") {
      state.status = "stopped";
      this.#sink.reportStep(`tool:${call.toolCallId}`, {
        tool: `acp_${state.kind}`,
        title: title.title,
        words: { ...title.words, summary: inEveryLocale((s) => s.acp.refusedStep) },
        status: "stopped",
        summary: strings.acp.refusedStep,
      });
      return;
    }
    this.#sink.reportStep(`tool:${call.toolCallId}`, {
      tool: `acp_${state.kind}`,
      title: title.title,
      words: state.summary?.words ? { ...title.words, summary: state.summary.words } : title.words,
      status: state.status,
      ...(state.summary ? { summary: state.summary.text } : {}),
    });
  }

  #shortSummary(summary: StepSummary | undefined): StepSummary | undefined {
    if (!summary) return undefined;
    const words = summary.words
      ? Object.fromEntries(Object.entries(summary.words).map(([code, text]) => [code, this.#short(text)]))
      : undefined;
    return { text: this.#short(summary.text), ...(words ? { words } : {}) };
  }

  /** Every plan update is the whole plan (ACP): entries are replaced in place, surplus ones removed. */
  #plan(entries: readonly { content: string; status: "pending" | "in_progress" | "completed" }[]): void {
    entries.forEach((entry, index) => {
      this.#sink.reportStep(`plan:${index}`, {
        tool: PLAN_STEP_TOOL,
        title: `${strings.acp.planTitle} ${index + 1}. ${entry.content}`,
        words: { title: inEveryLocale((s) => `${s.acp.planTitle} ${index + 1}. ${entry.content}`) },
        status: TOOL_STATUS[entry.status],
      });
    });
    for (let index = entries.length; index < this.#planLength; index += 1)
      this.#sink.reportStep(`plan:${index}`, null);
    this.#planLength = entries.length;
  }
}

function locationsOf(call: ToolCallUpdate): string {
  return (call.locations ?? []).map((location) => location.path).join(", ");
}
