import type { SessionUpdate, ToolCallUpdate } from "@agentclientprotocol/sdk";

/**
 * What a chat session's agent said about each tool call (issue 30, "always allow"): ACP agents announce a call
 * with `tool_call` (title, kind, name, rawInput) and then often send `session/request_permission`
 * with a `toolCall` carrying the id alone, or a few fields. A request read on its own is then unnamed, and an
 * unnamed acting kind is never remembered as "always" (domain/standing-permissions.ts scopeOf). The request is
 * read with what the session's earlier updates said of the same `toolCallId`, the request's own fields winning.
 *
 * Kept per chat session beside its agent process, across turns (an id is unique within its ACP session), and
 * bounded: the oldest calls are forgotten first, so a long session cannot grow it without end.
 */

/**
 * The fields a permission request may lack that an earlier update carried: what the call is. Not its
 * locations or content: those are the step's summary (step-summary.ts), which the turn's reporter keeps, and
 * filled in here they would replace a better one (a diff) with a bare path.
 */
type Known = Pick<ToolCallUpdate, "title" | "kind" | "name" | "rawInput"> & { agentTool?: string };

export const MAX_REMEMBERED_CALLS = 1_000;

export class ToolCallMemory {
  readonly #calls = new Map<string, Known>();
  readonly #max: number;

  constructor(max = MAX_REMEMBERED_CALLS) {
    this.#max = max;
  }

  /** Notes what a `tool_call` or `tool_call_update` says; other updates are not about calls. */
  apply(update: SessionUpdate): void {
    if (update.sessionUpdate !== "tool_call" && update.sessionUpdate !== "tool_call_update") return;
    this.#note(update);
  }

  /** The request's call with every field it leaves out filled from what the session said of that id before. */
  merged(call: ToolCallUpdate): ToolCallUpdate {
    const known = this.#calls.get(call.toolCallId);
    this.#note(call);
    if (!known) return call;
    const filled: ToolCallUpdate = { ...call };
    // `null` and absent both mean "unchanged" in ACP: the earlier value stands.
    if (filled.title == null && known.title != null) filled.title = known.title;
    if (filled.kind == null && known.kind != null) filled.kind = known.kind;
    if (filled.name == null && known.name != null) filled.name = known.name;
    if (filled.rawInput === undefined && known.rawInput !== undefined) filled.rawInput = known.rawInput;
    return filled;
  }

  /**
   * The tool's name as the agent's own `_meta` gives it (agentToolName), from the request or, failing that, the
   * session's earlier updates of the call: Claude Code names its tools only there. Read after `merged`.
   */
  agentTool(toolCallId: string): string | undefined {
    return this.#calls.get(toolCallId)?.agentTool;
  }

  #note(call: ToolCallUpdate): void {
    const known = this.#calls.get(call.toolCallId) ?? {};
    const next: Known = { ...known };
    if (call.title != null) next.title = call.title;
    if (call.kind != null) next.kind = call.kind;
    if (call.name != null && call.name.trim() !== "") next.name = call.name;
    if (call.rawInput !== undefined) next.rawInput = call.rawInput;
    const agentTool = agentToolName(call._meta);
    if (agentTool !== undefined) next.agentTool = agentTool;
    // Re-inserted last: the map's order is the calls' age, the oldest forgotten first.
    this.#calls.delete(call.toolCallId);
    this.#calls.set(call.toolCallId, next);
    while (this.#calls.size > this.#max) {
      const oldest = this.#calls.keys().next().value;
      if (oldest === undefined) break;
      this.#calls.delete(oldest);
    }
  }
}

/** At most this long, letters, digits, `_` and `-`, a letter first: `Edit`, `mcp__acp__Write`, `mcp__db__query`. */
const TOOL_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,79}$/;

/**
 * `_meta.claudeCode.toolName`: where Claude Code's ACP adapter (@zed-industries/claude-code-acp) names the tool
 * of a call (its `tool_call` and `tool_call_update`s; its permission requests carry no `_meta`), never in ACP's
 * `name`. Read defensively: `_meta` is the agent's free-form extension, so anything but a short name of safe
 * characters (a number, an object, a huge or odd string) counts as no name.
 */
export function agentToolName(meta: unknown): string | undefined {
  if (typeof meta !== "object" || meta === null) return undefined;
  const claudeCode: unknown = (meta as Record<string, unknown>).claudeCode;
  if (typeof claudeCode !== "object" || claudeCode === null) return undefined;
  const toolName: unknown = (claudeCode as Record<string, unknown>).toolName;
  return typeof toolName === "string" && TOOL_NAME.test(toolName) ? toolName : undefined;
}
