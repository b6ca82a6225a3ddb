import type {
  ContentBlock,
  SessionUpdate,
  ToolCallContent,
  ToolCallUpdate,
  ToolKind,
} from "@agentclientprotocol/sdk";
import { PLAN_STEP_TOOL } from "../../../domain/types.ts";
import { inEveryLocale, strings } from "../../../strings.ts";
import type { AgentContext, ReportedStep } from "../agent.ts";

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
  summary?: string;
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

  readonly #roots: string[];

  /** `roots`: the workspace's paths, shown relative on the card (the reader knows which chat this is). */
  constructor(sink: Sink, roots: readonly string[] = []) {
    this.#sink = sink;
    this.#roots = [...new Set(roots)]
      .filter((root) => root.length > 1)
      .map((root) => `${root.replace(/\/$/, "")}/`);
  }

  #short(text: string): string {
    return this.#roots.reduce((out, root) => out.replaceAll(root, ""), text);
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
    const summary = mapOptional(summarize(call), (text) => this.#short(text)) ?? known?.summary;
    if (summary) state.summary = summary;
    this.#tools.set(call.toolCallId, state);
    this.#paragraph = true;
    const shown = state.title || call.toolCallId;
    this.#sink.reportStep(`tool:${call.toolCallId}`, {
      tool: `acp_${state.kind}`,
      title: `${strings.acp.toolKinds[state.kind]} · ${shown}`,
      // The kind is our word, the title the agent's: each language frames it in its own (读取 / Read).
      words: { title: inEveryLocale((s) => `${s.acp.toolKinds[state.kind]} · ${shown}`) },
      status: state.status,
      ...(state.summary ? { summary: state.summary } : {}),
    });
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

/** One line saying what the call did or touches: its text output, the file it changes, or where it looks. */
function summarize(call: ToolCallUpdate): string | undefined {
  for (const item of call.content ?? []) {
    const line = contentLine(item);
    if (line) return line;
  }
  const where = call.locations?.map((location) => location.path).join(", ");
  if (where) return where;
  if (typeof call.rawOutput === "string" && call.rawOutput.trim() !== "") return firstLine(call.rawOutput);
  return undefined;
}

function contentLine(item: ToolCallContent): string | undefined {
  if (item.type === "diff") return `diff ${item.path}`;
  if (item.type === "terminal") return undefined;
  if (item.content.type === "text" && item.content.text.trim() !== "") return firstLine(item.content.text);
  if (item.content.type === "resource_link") return item.content.uri;
  return undefined;
}

function firstLine(text: string): string {
  const line = text.trim().split("\n")[0] ?? "";
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}

function mapOptional(value: string | undefined, map: (value: string) => string): string | undefined {
  return value === undefined ? undefined : map(value);
}

function locationsOf(call: ToolCallUpdate): string {
  return (call.locations ?? []).map((location) => location.path).join(", ");
}
