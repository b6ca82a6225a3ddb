import { strings } from "../strings.ts";
import { ASK_TOOL_NAME } from "./schema.ts";

/**
 * One line for conversation history and step lists, from a tool's JSON result
 * (the seed's ToolResultSummarizer): `回答了 N 个问题`, or a readable reason when it failed.
 */
export function summarizeToolResult(toolName: string, result: string): string {
  const parsed = safeParse(result);
  const error = isRecord(parsed) && typeof parsed.error === "string" ? parsed.error : undefined;
  if (toolName === ASK_TOOL_NAME) {
    if (error !== undefined) return summarizeAskError(error);
    if (isRecord(parsed) && Array.isArray(parsed.answers))
      return strings.answeredSummary(parsed.answers.length);
    return strings.answeredSummary(0);
  }
  if (error !== undefined) return strings.toolFailedSummary(oneLine(error));
  if (isRecord(parsed) && typeof parsed.summary === "string") return oneLine(parsed.summary);
  return oneLine(result);
}

function summarizeAskError(error: string): string {
  if (error === ASK_ERRORS.timeout) return strings.askTimedOutSummary;
  if (error === ASK_ERRORS.cancelled) return strings.askCancelledSummary;
  if (error === strings.askUnavailable) return strings.askUnavailable;
  if (error.startsWith("Invalid arguments"))
    return strings.askInvalidSummary(oneLine(error.replace(/^Invalid arguments:\s*/, "")));
  return strings.toolFailedSummary(oneLine(error));
}

/** The error texts the model sees (seed §6); they stay English and stable, the model is their reader. */
export const ASK_ERRORS = {
  timeout: "User did not respond within timeout",
  cancelled: "Session cancelled",
} as const;

function oneLine(text: string, max = 120): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
