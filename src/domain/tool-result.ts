import type { Words } from "./types.ts";

/**
 * What a tool call gave back, decided once where it is produced (the dispatcher, an ask's outcome) instead of
 * being stringified and later classified again by parsing or by the prefix of its text.
 * - `content`: what the model reads (JSON text, as the tool wrote it).
 * - `isError`: the call failed; its step shows as failed.
 * - `summary`: the one line that steps and history show for it (asks/summary.ts words it).
 * - `summaryWords`: that line in every language when the bot wrote it (a shared card shows each reader's).
 */
export interface ToolResult {
  content: string;
  isError: boolean;
  summary: string;
  summaryWords?: Words;
}

/** A failed call: the model reads `{"error": message}`; the step shows `summary`. */
export function toolError(message: string, summary: string, summaryWords?: Words): ToolResult {
  return {
    content: JSON.stringify({ error: message }),
    isError: true,
    summary,
    ...(summaryWords ? { summaryWords } : {}),
  };
}
