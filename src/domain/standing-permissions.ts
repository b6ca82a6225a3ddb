/**
 * Standing permissions (issue 30, "always allow"): a person's "allow always" or "reject always" on an ACP
 * permission form, remembered for the chat's session so the next request of the same kind is answered
 * without a form. The rule of what "the same kind" is lives here, pure; the rows in store/permissions.ts.
 */

/** What a remembered choice covers: the tool call's kind, and the agent's name for its tool where it gives one. */
export interface PermissionScope {
  /** ACP's `ToolKind` (`edit`, `execute`, …). */
  kind: string;
  /**
   * ACP's `toolCall.name` (e.g. `Edit`, `Bash`), or for some kinds the agent's own `_meta` name (`scopeOf`);
   * "" when the agent names none.
   */
  tool: string;
}

export type StandingDecision = "allow" | "reject";

export interface StandingPermission extends PermissionScope {
  id: string;
  sessionId: string;
  decision: StandingDecision;
  /** The call the choice was made on, for the session page ("Edit notes.md"). */
  title: string;
  /** Who chose it (the task's sender then): the one who may revoke it. */
  grantedBy: string;
  grantedAt: number;
  /**
   * The agent was sent its own "always" option too, having offered no "once" one: it keeps the choice itself
   * (Claude Code in its project settings), where revoking it here cannot reach. Absent: the bot alone keeps it.
   */
  agentKeeps?: true;
}

/**
 * Where standing permissions are kept: SQLite in the service (store/permissions.ts), memory in a bare agent.
 * A choice is the chooser's own: `find` answers for one session, one person (the task's sender) and one scope,
 * so in a group Alice's "always" never answers a request in Bob's task; `grant` replaces what that person
 * had chosen for that scope.
 */
export interface StandingPermissions {
  find(sessionId: string, personId: string, scope: PermissionScope): Promise<StandingPermission | undefined>;
  grant(entry: Omit<StandingPermission, "id">): Promise<StandingPermission>;
  list(sessionId: string): Promise<StandingPermission[]>;
  /** The entry, once removed; undefined when the session has no entry of that id. */
  revoke(sessionId: string, id: string): Promise<StandingPermission | undefined>;
}

/**
 * Kinds whose calls only look: an unnamed "always" of these may cover the whole kind. Any other kind (run a
 * command, edit, delete, move, fetch…) is remembered only with a name for its tool: an "always" on `Bash: ls`
 * must not allow every later command.
 */
const LOOKING_KINDS = new Set(["read", "search"]);

/**
 * Kinds for which a name the agent gives only in its own `_meta` (Claude Code: `_meta.claudeCode.toolName`) may
 * scope an "always" to the whole tool, because that is what the agent's own UI means by it: Claude Code's
 * "always allow" on an edit is its acceptEdits, a rule for the tool (`Edit`), whatever the file. Not `execute`:
 * there its rules are per command (`Bash(npm run:*)`), and a rule for all of `Bash` would allow every command;
 * nor delete, move, switch_mode or other, which Claude Code's UI never offers to allow tool-wide.
 */
const TOOL_WIDE_KINDS = new Set(["read", "search", "edit", "fetch"]);

/**
 * The scope a request's "always" covers. "The same kind" is the same ACP tool kind and, when the agent names
 * its tool, the same tool: "Edit" and "MultiEdit" are both `edit` but not the same permission. The name is
 * ACP's `toolCall.name` (the protocol's stable programmatic name), else `agentTool`, the agent's own `_meta`
 * name (acp/tool-calls.ts agentToolName), for TOOL_WIDE_KINDS only. Never the title or the path ("Edit
 * notes.md" vs "Edit a.md"): an agent's "always" is about the kind of operation, which is what it would stop
 * asking for itself. A call with no name that counts is remembered only for a kind that just looks
 * (LOOKING_KINDS): otherwise undefined, and the choice reaches the agent without being remembered here (the
 * agent may still keep its own, narrower rule).
 */
export function scopeOf(call: {
  kind?: string | null | undefined;
  name?: string | null | undefined;
  agentTool?: string | undefined;
}): PermissionScope | undefined {
  const kind = call.kind ?? "other";
  const named = call.name?.trim() ?? "";
  const tool = named || (TOOL_WIDE_KINDS.has(kind) ? (call.agentTool?.trim() ?? "") : "");
  if (!tool && !LOOKING_KINDS.has(kind)) return undefined;
  return { kind, tool };
}

/**
 * A remembered tool's name as the card and the session page show it: Claude Code's `mcp__acp__` prefix (its
 * tools that go through the client's files) left off, as its adapter's own titles do ("Write hello.txt" for
 * `mcp__acp__Write`) and its permission rules name them (`Edit`, `Read`). The scope keeps the full name.
 */
export function shownTool(tool: string): string {
  return tool.startsWith("mcp__acp__") && tool.length > "mcp__acp__".length
    ? tool.slice("mcp__acp__".length)
    : tool;
}

/** Whether a remembered choice answers a request of `scope`: same kind, same tool (both unnamed counts). */
export function covers(entry: PermissionScope, scope: PermissionScope): boolean {
  return entry.kind === scope.kind && entry.tool === scope.tool;
}

type OptionKind = "allow_once" | "allow_always" | "reject_once" | "reject_always";

/** The choice an option stands for, if it is an "always" one. */
export function standingOf(kind: OptionKind): StandingDecision | undefined {
  if (kind === "allow_always") return "allow";
  if (kind === "reject_always") return "reject";
  return undefined;
}

/**
 * Which of the agent's options answers a request of this decision: its "once" option, else its "always" one;
 * none (the form is shown) when the agent offers neither this time. "Once" first, whether the choice was made
 * just now or stands from before: the bot remembers it (this file), and an agent told "always" would keep it
 * in its own memory, beyond the session, where revoking it on the session page cannot reach.
 */
export function standingOption<T extends { kind: OptionKind }>(
  options: readonly T[],
  decision: StandingDecision,
): T | undefined {
  const [once, always] =
    decision === "allow"
      ? (["allow_once", "allow_always"] as const)
      : (["reject_once", "reject_always"] as const);
  return options.find((option) => option.kind === once) ?? options.find((option) => option.kind === always);
}

/** Standing permissions of this process only: an agent built without the service's store (tests, tools). */
export class MemoryStandingPermissions implements StandingPermissions {
  readonly #entries = new Map<string, StandingPermission>();
  #next = 1;

  async find(
    sessionId: string,
    personId: string,
    scope: PermissionScope,
  ): Promise<StandingPermission | undefined> {
    return this.#of(sessionId).find((entry) => entry.grantedBy === personId && covers(entry, scope));
  }

  async grant(entry: Omit<StandingPermission, "id">): Promise<StandingPermission> {
    const old = await this.find(entry.sessionId, entry.grantedBy, entry);
    if (old) this.#entries.delete(old.id);
    const made = { ...entry, id: `sp-${this.#next++}` };
    this.#entries.set(made.id, made);
    return made;
  }

  async list(sessionId: string): Promise<StandingPermission[]> {
    return this.#of(sessionId);
  }

  #of(sessionId: string): StandingPermission[] {
    return [...this.#entries.values()].filter((entry) => entry.sessionId === sessionId);
  }

  async revoke(sessionId: string, id: string): Promise<StandingPermission | undefined> {
    const entry = this.#entries.get(id);
    if (!entry || entry.sessionId !== sessionId) return undefined;
    this.#entries.delete(id);
    return entry;
  }
}
