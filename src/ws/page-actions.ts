import { checkAnswers } from "../asks/answers.ts";
import { declineAsk, type ExtendTimes, extendRunAsks } from "../asks/person-actions.ts";
import type { AskRegistry } from "../asks/registry.ts";
import type { AskAnswer } from "../asks/schema.ts";
import type { RunCommands } from "../domain/ports.ts";
import type { RunFeed } from "../domain/run-feed.ts";
import type { ClientFrame, ErrorCode } from "./protocol.ts";

/**
 * What a person does from a session page over the WebSocket (hub.ts): answer, 拒绝回答, 取消任务, 延长. Each
 * applies the same rules as the card's buttons (asks/person-actions.ts) and says why it was refused, if it
 * was; the hub turns a refusal into an error frame. Success needs no reply: the settle or the run's change
 * reaches every connection (a cancel also tells its own connection which run it stopped).
 */
export interface PageActionDeps {
  registry: AskRegistry;
  runs: RunFeed;
  commands: Pick<RunCommands, "cancel">;
  times: ExtendTimes;
  /** The surface named on the answers (the hub's name). */
  surface: string;
}

/** A refused action: the fields of its error frame. */
export interface Refusal {
  code: ErrorCode;
  message: string;
  requestId?: string;
  action?: "cancel" | "extend";
}

const STALE = "this question is no longer waiting for an answer";
const NOT_ANSWERER = "only the person who started the task may answer";

/** The frames that act (page-actions.ts), each with the session it acts in. */
export type PageActionFrame = Extract<
  ClientFrame,
  { type: "ask_user_questions_result" | "ask_user_questions_decline" | "cancel" | "extend" }
> & { sessionId: string };

/** One page action by `userId`: undefined when done, else why not (a cancel says which run it stopped). */
export async function pageAction(
  d: PageActionDeps,
  userId: string,
  frame: PageActionFrame,
): Promise<Refusal | { cancelled: string } | undefined> {
  const at = { userId, sessionId: frame.sessionId };
  switch (frame.type) {
    case "ask_user_questions_result":
      return answerFromPage(d, { ...at, requestId: frame.data.requestId }, frame.data.answers);
    case "ask_user_questions_decline":
      return declineFromPage(d, { ...at, requestId: frame.data.requestId });
    case "cancel":
      return cancelFromPage(d, at);
    case "extend":
      return extendFromPage(d, at);
  }
}

/** Where a refused page action's error belongs: the question it answered or declined, or its button. */
export function refusalTarget(frame: PageActionFrame): Pick<Refusal, "requestId" | "action"> {
  if (frame.type === "cancel" || frame.type === "extend") return { action: frame.type };
  return { requestId: frame.data.requestId };
}

/** An answer from a page: the registry's compare-and-set decides (the hub orders "accepted" first). */
export async function answerFromPage(
  d: PageActionDeps,
  at: { userId: string; sessionId: string; requestId: string },
  rawAnswers: unknown,
): Promise<Refusal | undefined> {
  const { userId, sessionId, requestId } = at;
  const ask = await d.registry.open(requestId);
  if (!ask || ask.sessionId !== sessionId) return { code: "stale_request", message: STALE, requestId };
  // Said before the answers are checked; the registry's settle refuses a wrong answerer all the same.
  if (ask.answererId !== userId) return { code: "forbidden", message: NOT_ANSWERER, requestId };
  const checked = checkAnswers(ask.questions, rawAnswers);
  if (!checked.ok) return { code: "invalid_answers", message: checked.error, requestId };
  const answers: AskAnswer[] = checked.answers;
  const result = await d.registry.complete(sessionId, requestId, answers, { surface: d.surface, userId });
  if (result.ok) return undefined;
  if (result.reason === "forbidden") return { code: "forbidden", message: NOT_ANSWERER, requestId };
  return { code: "stale_request", message: STALE, requestId };
}

/** 拒绝回答 from a page: the card's rule (asks/person-actions.ts); the settle withdraws it everywhere. */
export async function declineFromPage(
  d: PageActionDeps,
  at: { userId: string; sessionId: string; requestId: string },
): Promise<Refusal | undefined> {
  const { userId, sessionId, requestId } = at;
  // No "accepted" for a decline: every connection hears the settle, reason "declined".
  const result = await declineAsk(d.registry, { sessionId, requestId }, { surface: d.surface, userId });
  if (result.ok) return undefined;
  if (result.reason === "forbidden")
    return { code: "forbidden", message: "only the person asked may decline", requestId };
  if (result.reason === "not_declinable")
    return { code: "forbidden", message: "this question cannot be declined", requestId };
  return { code: "stale_request", message: STALE, requestId };
}

/** 取消任务 from a page: the run it stopped, or why not. */
export async function cancelFromPage(
  d: PageActionDeps,
  at: { userId: string; sessionId: string },
): Promise<{ cancelled: string } | Refusal> {
  const { userId, sessionId } = at;
  const refuse = (code: ErrorCode, message: string): Refusal => ({ code, message, action: "cancel" });
  // Some sessions' runs are not stopped from a page: an outside agent's task ends when its agent says so.
  if ((await d.runs.session(sessionId))?.allows.cancel === false)
    return refuse("forbidden", "an outside agent's task is ended by its agent");
  // Strangers learn nothing, not even whether something is running.
  if (!(await d.runs.canView(userId, sessionId)))
    return refuse("forbidden", "only the person who started the task may cancel it");
  const run = d.runs.activeRun(sessionId) ?? (await d.runs.currentRun(sessionId));
  const result = await d.commands.cancel(sessionId, userId);
  if (result.ok && run) return { cancelled: run.id };
  if (!result.ok && result.reason === "forbidden")
    return refuse("forbidden", "only the person who started the task may cancel it");
  return refuse("not_running", "no task is running in this session");
}

/** 延长 from a page: the same rule and effect as the card's button (asks/person-actions.ts). */
export async function extendFromPage(
  d: PageActionDeps,
  at: { userId: string; sessionId: string },
): Promise<Refusal | undefined> {
  const { userId, sessionId } = at;
  const refuse = (code: ErrorCode, message: string): Refusal => ({ code, message, action: "extend" });
  if (!(await d.runs.canView(userId, sessionId)))
    return refuse("forbidden", "only the person asked may extend the deadline");
  const run = d.runs.activeRun(sessionId);
  const result = run
    ? await extendRunAsks(d.registry, { sessionId, runId: run.id }, userId, d.times)
    : ({ ok: false, reason: "none" } as const);
  // Success needs no reply of its own: every connection gets the asks again with their new deadlines.
  if (result.ok) return undefined;
  if (result.reason === "forbidden")
    return refuse("forbidden", "only the person asked may extend the deadline");
  if (result.reason === "limit") return refuse("extend_limit", "no further extensions are allowed");
  return refuse("not_running", "no question is waiting in this session");
}
