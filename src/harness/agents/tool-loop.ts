import type { ToolDefinition } from "../../domain/types.ts";
import { ModelError } from "../../errors.ts";
import { bilingual, strings } from "../../strings/index.ts";
import { abortReason } from "../../util/sleep.ts";
import type { ChatMessage, ChatModel, ModelToolCall } from "./chat-model.ts";

/**
 * The agent loop shared by a session's agent and by `delegate`'s sub-agents: ask the model; if it calls
 * tools, run them (one turn, together) and feed the results back; stop when it answers without tool calls
 * or after `maxSteps` requests.
 */
export interface ToolLoopOptions {
  chat: ChatModel;
  /** The conversation so far; the loop appends each turn to it. */
  messages: ChatMessage[];
  tools: readonly ToolDefinition[];
  signal: AbortSignal;
  maxSteps: number;
  onText?: (text: string) => void;
  /** Runs one turn's calls and returns their results in order. `text` is what the model said alongside. */
  callTools(calls: ModelToolCall[], text: string): Promise<string[]>;
  /** A turn the model already made, waiting when the process stopped: finished first, without a request. */
  resume?: { text: string; calls: ModelToolCall[] } | undefined;
}

export async function runToolLoop(options: ToolLoopOptions): Promise<string> {
  const { chat, messages, signal } = options;
  let resume = options.resume;
  for (let step = 0; step < options.maxSteps; step += 1) {
    // The resumed turn counts as the step it was: the model is not asked for it again.
    const reply = resume
      ? { text: resume.text, toolCalls: resume.calls }
      : await chat.complete({
          messages,
          tools: options.tools,
          signal,
          ...(options.onText ? { onText: options.onText } : {}),
        });
    resume = undefined;
    if (reply.toolCalls.length === 0) return reply.text;
    const results = await options.callTools(reply.toolCalls, reply.text);
    if (signal.aborted) throw abortReason(signal);
    messages.push({
      role: "assistant",
      content: reply.text || null,
      tool_calls: reply.toolCalls.map((call) => ({
        id: call.id,
        type: "function",
        function: { name: call.name, arguments: call.arguments },
      })),
    });
    reply.toolCalls.forEach((call, index) => {
      messages.push({ role: "tool", tool_call_id: call.id, content: results[index] ?? "" });
    });
  }
  throw new ModelError(strings.model.tooManySteps(options.maxSteps), {
    words: bilingual.model.tooManySteps(options.maxSteps),
  });
}

/**
 * The model's argument text as a value: parsed JSON when it is JSON (an empty string means no arguments),
 * else the raw text, so the tool's own validation tells the model what is wrong with it.
 */
export function parseArguments(raw: string): unknown {
  if (raw.trim() === "") return {};
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

/**
 * Reports streamed text at most once per `intervalMs` (plus `flush` at the end of a reply): every report
 * fans out to the card publisher and every WebSocket subscriber, and a token-rate stream gains nothing.
 */
export function throttledText(
  report: (text: string) => void,
  intervalMs: number,
  now: () => number = Date.now,
): { push(text: string): void; flush(): void } {
  let last = Number.NEGATIVE_INFINITY;
  let pending: string | undefined;
  return {
    push(text) {
      pending = text;
      if (now() - last < intervalMs) return;
      last = now();
      pending = undefined;
      report(text);
    },
    flush() {
      if (pending === undefined) return;
      last = now();
      report(pending);
      pending = undefined;
    },
  };
}
