import type { ToolCallContent, ToolCallUpdate } from "@agentclientprotocol/sdk";
import type { Words } from "../../../domain/types.ts";
import { inEveryLocale, type Strings, strings } from "../../../strings/index.ts";
import { parseJson } from "../../../util/json.ts";

/**
 * What a tool call's step says beside its title (issue 31): one line by the kind of output, not its first
 * line whatever it is (`[` for JSON), and never a path of the host the bot runs on. Pure.
 */

export interface StepSummary {
  text: string;
  /** Set when the words are ours (a JSON output's shape), so each reader gets their language. */
  words?: Words;
}

/** The summary of what the call did or touches: its output, the file it changes, or where it looks. */
export function summarize(call: ToolCallUpdate): StepSummary | undefined {
  for (const item of call.content ?? []) {
    const summary = contentSummary(item);
    if (summary) return summary;
  }
  const where = call.locations?.map((location) => location.path).join(", ");
  if (where) return { text: where };
  if (typeof call.rawOutput === "string")
    return call.rawOutput.trim() ? textSummary(call.rawOutput) : undefined;
  // An agent's structured output (codex-acp sends objects): its shape, as for JSON text.
  if (call.rawOutput !== undefined && call.rawOutput !== null) return jsonSummary(call.rawOutput);
  return undefined;
}

function contentSummary(item: ToolCallContent): StepSummary | undefined {
  if (item.type === "diff") return { text: `diff ${item.path}` };
  if (item.type === "terminal") return undefined;
  if (item.content.type === "text" && item.content.text.trim() !== "") return textSummary(item.content.text);
  if (item.content.type === "resource_link") return { text: item.content.uri };
  return undefined;
}

/** JSON reads as its shape (its first line is `[` or `{`); any other text as its first line. */
function textSummary(text: string): StepSummary {
  const trimmed = text.trim();
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    // Not JSON after all (a log line starting with "["): read as text.
    const parsed = parseJson(trimmed);
    if (parsed !== undefined) return jsonSummary(parsed);
  }
  return { text: firstLine(trimmed) };
}

const KEYS_SHOWN = 3;

function jsonSummary(value: unknown): StepSummary {
  const say = (word: (s: Strings) => string): StepSummary => ({
    text: word(strings),
    words: inEveryLocale(word),
  });
  if (Array.isArray(value)) return say((s) => s.acp.jsonArray(value.length));
  if (typeof value === "object" && value !== null) {
    const keys = Object.keys(value);
    const shown = keys.slice(0, KEYS_SHOWN).map((key) => (key.length > 24 ? `${key.slice(0, 23)}…` : key));
    const more = keys.length > shown.length ? "…" : "";
    return say((s) => s.acp.jsonObject(keys.length, `${shown.join(s.acp.listSeparator)}${more}`));
  }
  return { text: firstLine(String(value)) };
}

function firstLine(text: string): string {
  const line = text.trim().split("\n")[0] ?? "";
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}

/**
 * An absolute path of two segments or more, not part of a URL (`https://h/a/b`), a relative path (`a/b/c`) or
 * a fraction: whatever follows a letter, digit, `.`, `~`, `:`, `/` or `\` is not one.
 */
const ABSOLUTE_PATH = /(?<![\w.~:/\\-])\/[^\s"'`()<>[\]{},;:|*?/]+(?:\/[^\s"'`()<>[\]{},;:|*?/]*)+/g;

/**
 * Host paths off the card: one inside the chat's workspace is shown relative to it (`.` for the workspace
 * itself; the reader knows which chat this is), any other absolute path is elided (`…`): it names the
 * machine's layout, which is nobody's business on a chat card.
 */
export function hidePaths(text: string, roots: readonly string[]): string {
  const bare = roots.map((root) => root.replace(/\/+$/, "")).filter((root) => root.length > 1);
  return text.replace(ABSOLUTE_PATH, (path) => {
    const trimmed = path.replace(/\/+$/, "");
    for (const root of bare) {
      if (trimmed === root) return ".";
      if (trimmed.startsWith(`${root}/`)) return trimmed.slice(root.length + 1);
    }
    return "…";
  });
}
