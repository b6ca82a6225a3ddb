import { type ToolResult, toolError } from "../domain/tool-result.ts";
import { bilingual, strings } from "../strings/index.ts";
import { parseJson } from "../util/json.ts";
import { oneLine, truncate } from "../util/text.ts";
import type { AskOutcome } from "./pending.ts";

/**
 * Tool results (domain/tool-result.ts) with the one line that history and step lists show for them (the
 * seed's ToolResultSummarizer): `回答了 N 个问题` for an ask, a readable reason when a call failed. Each is
 * built where the outcome is known, so nothing is classified afterwards by parsing its text.
 */

/** The error texts the model sees (seed §6); they stay English and stable, the model is their reader. */
export const ASK_ERRORS = {
  timeout: "User did not respond within timeout",
  cancelled: "Session cancelled",
  declined: "User declined to answer",
} as const;

/** The ask's result once its outcome is known (answered, timed out, or cancelled for `reason`). */
export function askResult(outcome: AskOutcome): ToolResult {
  switch (outcome.kind) {
    case "answered":
      return {
        content: JSON.stringify({ answers: outcome.answers }),
        isError: false,
        summary: strings.answeredSummary(outcome.answers.length),
        summaryWords: bilingual.answeredSummary(outcome.answers.length),
      };
    case "timeout":
      return toolError(ASK_ERRORS.timeout, strings.askTimedOutSummary, bilingual.askTimedOutSummary);
    case "declined":
      return toolError(ASK_ERRORS.declined, strings.askDeclinedSummary, bilingual.askDeclinedSummary);
    case "cancelled":
      return askRefused(outcome.reason);
  }
}

/**
 * An ask that was not put to anyone, or that ended without answers: `message` is the model's error text.
 * The two reasons a person may see on the card's step have their own wording; any other reads 失败：….
 */
export function askRefused(message: string): ToolResult {
  if (message === ASK_ERRORS.cancelled)
    return toolError(message, strings.askCancelledSummary, bilingual.askCancelledSummary);
  if (message === strings.askUnavailable)
    return toolError(message, strings.askUnavailable, bilingual.askUnavailable);
  return toolFailed(message);
}

/** Any call that failed with `message` (an unknown tool, a tool that threw): the step reads 失败：…. */
export function toolFailed(message: string): ToolResult {
  return toolError(
    message,
    strings.toolFailedSummary(stepLine(message)),
    bilingual.toolFailedSummary(stepLine(message)),
  );
}

/** Arguments the ask's schema refused: the model reads `error`; the step names only the `problem`. */
export function askInvalid(invalid: { error: string; problem: string }): ToolResult {
  const problem = stepLine(invalid.problem);
  return toolError(invalid.error, strings.askInvalidSummary(problem), bilingual.askInvalidSummary(problem));
}

/**
 * A tool's own output (the JSON text a ToolImpl returns), read once at the dispatcher: an object with an
 * `error` is a failure; the summary is its `summary`, its error, or its first words.
 */
export function toolResultOf(output: string): ToolResult {
  // Tools may return plain text: that is not an error, only not JSON.
  const parsed = parseJson(output);
  const record = isRecord(parsed) ? parsed : undefined;
  const isError = record !== undefined && "error" in record;
  if (typeof record?.error === "string")
    return {
      content: output,
      isError,
      summary: strings.toolFailedSummary(stepLine(record.error)),
      summaryWords: bilingual.toolFailedSummary(stepLine(record.error)),
    };
  if (typeof record?.summary === "string")
    return { content: output, isError, summary: stepLine(record.summary) };
  return { content: output, isError, summary: stepLine(output) };
}

/** A step's line: one line of at most 120 characters. */
function stepLine(text: string): string {
  return truncate(oneLine(text), 120);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
