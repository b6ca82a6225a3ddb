import type {
  PermissionOption,
  RequestPermissionOutcome,
  RequestPermissionRequest,
} from "@agentclientprotocol/sdk";
import { z } from "zod";
import { LIMITS } from "../../../asks/schema.ts";
import { strings } from "../../../strings/index.ts";
import { parseJson } from "../../../util/json.ts";

/**
 * `session/request_permission` as an `ask_user_questions` call: one single-choice question naming the tool
 * call, the agent's options as the choices. Going through the same tool keeps every ask rule in one place:
 * the form on the card, sender-only answers, first answer wins with the session page and WebSocket clients,
 * the timeout. Whatever is not a pick of one of the agent's options answers `cancelled`.
 */

export interface PermissionAsk {
  args: {
    questions: {
      question: string;
      header: string;
      options: { label: string; description: string }[];
      multiSelect: false;
    }[];
    metadata: Record<string, unknown>;
  };
  /** Option label on the card → the agent's option id. */
  optionIds: Map<string, string>;
  /** The labels that say no: the agent's reject options and the 不允许 offered beside a lone option. */
  refusals: Set<string>;
}

const CANCELLED: RequestPermissionOutcome = { outcome: "cancelled" };

export function permissionAsk(
  request: RequestPermissionRequest,
  about: { title: string; kind: keyof typeof strings.acp.toolKinds; where: string; tool?: string },
): PermissionAsk {
  // A form offers 2–4 choices; more than four is unheard of in practice, so the first four are offered.
  const offered = request.options.slice(0, LIMITS.maxOptions);
  const optionIds = new Map<string, string>();
  const refusals = new Set<string>();
  const options = offered.map((option) => {
    const label = uniqueLabel(option, optionIds);
    optionIds.set(label, option.optionId);
    if (option.kind === "reject_once" || option.kind === "reject_always") refusals.add(label);
    return { label, description: strings.acp.optionKinds[option.kind] };
  });
  // One option alone cannot make a form; "不允许" beside it answers cancelled.
  if (options.length < LIMITS.minOptions) {
    const label = uniqueLabel({ name: strings.acp.rejectLabel }, optionIds);
    refusals.add(label);
    options.push({ label, description: strings.acp.optionKinds.reject_once });
  }
  const title = about.title || request.toolCall.toolCallId;
  // The agent's name for its tool beside our word for the kind (编辑（Edit）), as the "always" line names it.
  const kind = strings.acp.standingScope(strings.acp.toolKinds[about.kind], about.tool?.trim() ?? "");
  const question = strings.acp.permissionQuestion(title, kind, about.where);
  return {
    args: {
      questions: [
        {
          question: clip(question, LIMITS.maxQuestionChars),
          header: strings.acp.permissionHeader,
          options,
          multiSelect: false,
        },
      ],
      metadata: { source: "acp_permission", toolCallId: request.toolCall.toolCallId },
    },
    optionIds,
    refusals,
  };
}

const askResult = z.union([
  z.object({ answers: z.array(z.object({ selectedLabels: z.array(z.string()) })).min(1) }),
  z.object({ error: z.string() }),
]);

/** The ask tool's JSON result → the agent's outcome. Custom text, timeout, cancel, no surface: cancelled. */
export function permissionOutcome(
  result: string,
  optionIds: ReadonlyMap<string, string>,
): RequestPermissionOutcome {
  const parsed = askResult.safeParse(parseJson(result));
  if (!parsed.success || "error" in parsed.data) return CANCELLED;
  const label = parsed.data.answers[0]?.selectedLabels[0];
  const optionId = label === undefined ? undefined : optionIds.get(label);
  return optionId === undefined ? CANCELLED : { outcome: "selected", optionId };
}

/**
 * The person answered the form by saying no (picked a reject option or 不允许): a choice, not a failure.
 * A timeout, a cancel or a typed answer is not a refusal.
 */
export function refusedIn(result: string, refusals: ReadonlySet<string>): boolean {
  const parsed = askResult.safeParse(parseJson(result));
  if (!parsed.success || "error" in parsed.data) return false;
  const label = parsed.data.answers[0]?.selectedLabels[0];
  return label !== undefined && refusals.has(label);
}

function uniqueLabel(option: Pick<PermissionOption, "name">, taken: ReadonlyMap<string, string>): string {
  const base = clip(option.name.trim() || strings.acp.optionFallback, LIMITS.maxLabelChars - 3);
  let label = base;
  for (let n = 2; taken.has(label); n += 1) label = `${base} ${n}`;
  return label;
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
