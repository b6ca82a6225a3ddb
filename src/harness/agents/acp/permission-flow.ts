import type {
  PermissionOption,
  RequestPermissionRequest,
  RequestPermissionResponse,
} from "@agentclientprotocol/sdk";
import { ASK_TOOL_NAME } from "../../../asks/schema.ts";
import {
  type PermissionScope,
  type StandingDecision,
  type StandingPermissions,
  scopeOf,
  shownTool,
  standingOf,
  standingOption,
} from "../../../domain/standing-permissions.ts";
import type { Logger } from "../../../logger.ts";
import { bilingual, inEveryLocale, type Strings, strings } from "../../../strings/index.ts";
import type { AgentContext } from "../agent.ts";
import type { CoalescingSink } from "./coalesce.ts";
import { permissionAsk, permissionOutcome, refusedIn } from "./permission.ts";
import type { ToolCallMemory } from "./tool-calls.ts";
import type { TurnReporter } from "./updates.ts";

/**
 * One `session/request_permission`, answered: by a standing choice of the session (issue 30, "always allow":
 * no form, a step line says so), or by the person on a form (permission.ts). A pick of the agent's
 * allow_always / reject_always option is remembered here, for the session and its scope (the call's kind and
 * tool, domain/standing-permissions.ts scopeOf), and the card says what it covers from now on. The agent is
 * answered with its own "once" option then and for every later request the choice covers, so the bot alone
 * remembers and revoking on the session page really stops it; only an agent that offers no "once" is sent its
 * "always" (it then keeps the choice itself, and the card and the page say revoking cannot undo that). Only the
 * task's sender can answer the form, so only they make such a choice.
 */

export interface PermissionFlow {
  ctx: AgentContext;
  reporter: TurnReporter;
  updates: CoalescingSink;
  standing: StandingPermissions;
  /** What the session's earlier updates said of each tool call: a request often names only the call's id. */
  calls: Pick<ToolCallMemory, "merged" | "agentTool">;
  logger: Logger;
  now: () => number;
}

type Kind = keyof Strings["acp"]["toolKinds"];
const CANCELLED: RequestPermissionResponse = { outcome: { outcome: "cancelled" } };

export async function answerPermission(
  f: PermissionFlow,
  asked: RequestPermissionRequest,
  requestSignal: AbortSignal,
): Promise<RequestPermissionResponse> {
  const { ctx, reporter, updates } = f;
  // The call as the session knows it: its earlier tool_call's title, kind and name where the request has none.
  const request = { ...asked, toolCall: f.calls.merged(asked.toolCall) };
  const callId = request.toolCall.toolCallId;
  const about = reporter.toolCallSeen(request.toolCall);
  // Claude Code names its tool only in its `_meta` (tool-calls.ts agentToolName), and only for some kinds may
  // that name scope an "always" (scopeOf); it names the tool on the form either way.
  const agentTool = f.calls.agentTool(callId);
  const scope = scopeOf({ kind: about.kind, name: request.toolCall.name, agentTool });
  const toolName = scope?.tool || request.toolCall.name?.trim() || agentTool || "";
  const shown = about.title || callId;
  // Only what this task's sender chose: in a group, another member's "always" is theirs, not this task's.
  // A choice that cannot be read (storage refused) is as none: the form asks.
  const remembered = scope
    ? await f.standing.find(ctx.session.id, ctx.senderId, scope).catch((error: unknown) => {
        f.logger.warn({ err: error, sessionId: ctx.session.id }, "standing permissions not read");
        return undefined;
      })
    : undefined;
  const option = remembered ? standingOption(request.options, remembered.decision) : undefined;
  if (remembered && option) {
    if (remembered.decision === "reject") reporter.refused(callId);
    const word = remembered.decision === "allow" ? "autoAllowed" : "autoRejected";
    updates.reportStep(`standing:${callId}`, {
      tool: "acp_permission",
      title: strings.acp[word](`${strings.acp.toolKinds[about.kind]} · ${shown}`),
      words: { title: inEveryLocale((s) => s.acp[word](`${s.acp.toolKinds[about.kind]} · ${shown}`)) },
      status: remembered.decision === "allow" ? "done" : "stopped",
    });
    updates.flush();
    f.logger.info(
      { sessionId: ctx.session.id, kind: about.kind, tool: scope?.tool, decision: remembered.decision },
      "acp permission answered by a standing choice",
    );
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  }
  // The card shows the call the form is about before the form.
  updates.flush();
  const ask = permissionAsk(request, { ...about, tool: shownTool(toolName) });
  if (requestSignal.aborted || ctx.signal.aborted) return CANCELLED;
  // The agent may withdraw its request ($/cancel_request) and then waits for our `cancelled`: the
  // request's signal withdraws the ask too, so its form leaves the card at once.
  const result = await ctx.callTool(ASK_TOOL_NAME, ask.args, {
    title: strings.acp.permissionTitle(about.title),
    titleWords: bilingual.acp.permissionTitle(about.title),
    signal: requestSignal,
  });
  if (requestSignal.aborted) return CANCELLED;
  if (refusedIn(result, ask.refusals)) reporter.refused(callId);
  const outcome = permissionOutcome(result, ask.optionIds);
  const picked =
    outcome.outcome === "selected"
      ? request.options.find((o: PermissionOption) => o.optionId === outcome.optionId)
      : undefined;
  const decision = picked ? standingOf(picked.kind) : undefined;
  // A mode switch (Claude Code's ExitPlanMode: its "always" is "auto-accept edits") is no permission to keep:
  // the option picked goes to the agent as it is, or "once" would mean "manually approve edits".
  if (!decision || about.kind === "switch_mode" || agentTool === "ExitPlanMode") return { outcome };
  // An "always": the bot keeps it (revocable on the session page) and tells the agent "once" where it offers
  // one, so the agent keeps nothing of its own there; every later request it covers is answered "once" too.
  const once = request.options.find((o) => o.kind === (decision === "allow" ? "allow_once" : "reject_once"));
  const answer: RequestPermissionResponse = once
    ? { outcome: { outcome: "selected", optionId: once.optionId } }
    : { outcome };
  if (scope)
    await remember(f, callId, scope, decision, {
      title: shown,
      kind: about.kind,
      agentKeeps: once === undefined,
    });
  else if (toolName) noteTool(f, callId, shownTool(toolName), once ? "onceOnlyTool" : "agentKeepsTool");
  else note(f, callId, once ? "onceOnlyUnnamed" : "agentKeepsOnly");
  f.logger.info(
    {
      sessionId: ctx.session.id,
      kind: about.kind,
      tool: scope?.tool,
      decision,
      toAgent: once ? "once" : "always",
    },
    "acp permission: an 'always' choice",
  );
  return answer;
}

/**
 * Keeps the choice for the session, and says on the card what it covers from now on; `agentKeeps` when the
 * agent was sent its own "always" (it offered no "once"), which the card says revoking cannot undo.
 */
async function remember(
  f: PermissionFlow,
  callId: string,
  scope: PermissionScope,
  decision: StandingDecision,
  { title, kind, agentKeeps }: { title: string; kind: Kind; agentKeeps: boolean },
): Promise<void> {
  const { ctx } = f;
  try {
    await f.standing.grant({
      sessionId: ctx.session.id,
      ...scope,
      decision,
      title,
      grantedBy: ctx.senderId,
      grantedAt: f.now(),
      ...(agentKeeps ? { agentKeeps: true as const } : {}),
    });
  } catch (error) {
    // Not remembered (storage refused): the agent got this one answer; the next request asks again.
    f.logger.warn({ err: error, sessionId: ctx.session.id }, "standing permission not saved");
    return;
  }
  const word = decision === "allow" ? "standingAllowed" : "standingRejected";
  const line = (s: Strings) => s.acp[word](s.acp.standingScope(s.acp.toolKinds[kind], shownTool(scope.tool)));
  f.updates.reportStep(`standing:${callId}`, {
    tool: "acp_permission",
    title: line(strings),
    status: "done",
    ...(agentKeeps
      ? {
          summary: strings.acp.agentKeepsToo,
          words: { title: inEveryLocale(line), summary: inEveryLocale((s) => s.acp.agentKeepsToo) },
        }
      : { words: { title: inEveryLocale(line) } }),
  });
  f.updates.flush();
}

/** An "always" the bot cannot keep (the request names no tool it could be scoped to): the card says what became of it. */
function note(f: PermissionFlow, callId: string, word: "onceOnlyUnnamed" | "agentKeepsOnly"): void {
  f.updates.reportStep(`standing:${callId}`, {
    tool: "acp_permission",
    title: strings.acp[word],
    words: { title: inEveryLocale((s) => s.acp[word]) },
    status: "done",
  });
  f.updates.flush();
}

/**
 * An "always" on a tool the bot will not allow or refuse as a whole (a command: Claude Code's `Bash`, whose own
 * rules are per command): the card says it counted once, naming the tool.
 */
function noteTool(
  f: PermissionFlow,
  callId: string,
  tool: string,
  word: "onceOnlyTool" | "agentKeepsTool",
): void {
  f.updates.reportStep(`standing:${callId}`, {
    tool: "acp_permission",
    title: strings.acp[word](tool),
    words: { title: inEveryLocale((s) => s.acp[word](tool)) },
    status: "done",
  });
  f.updates.flush();
}
