import type { HistoryMessage } from "../../domain/types.ts";
import type { ChatMessage } from "./chat-model.ts";

/**
 * Saved history → what the model sees. Chat APIs answer 400 to a tool call without its result, or a result
 * without its call, so only complete pairs go through: the runner saves a turn only once its calls have
 * returned, but the history window (the latest N rows) can still begin in the middle of a turn.
 */
export function toChatMessages(history: readonly HistoryMessage[], systemPrompt: string): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: "system", content: systemPrompt }];
  for (let index = 0; index < history.length; index += 1) {
    const message = history[index];
    if (!message) continue;
    if (message.role === "user") {
      messages.push({ role: "user", content: message.content });
    } else if (message.role === "assistant" && !message.toolCalls?.length) {
      if (message.content) messages.push({ role: "assistant", content: message.content });
    } else if (message.role === "assistant") {
      // The results that follow this assistant message, matched to its calls by id.
      const results = new Map<string, HistoryMessage>();
      while (history[index + 1]?.role === "tool") {
        const result = history[index + 1];
        index += 1;
        if (result?.toolCallId) results.set(result.toolCallId, result);
      }
      const calls = (message.toolCalls ?? []).filter((call) => results.has(call.id));
      if (calls.length === 0) {
        if (message.content) messages.push({ role: "assistant", content: message.content });
        continue;
      }
      messages.push({
        role: "assistant",
        content: message.content || null,
        tool_calls: calls.map((call) => ({
          id: call.id,
          type: "function",
          function: { name: call.name, arguments: call.arguments },
        })),
      });
      for (const call of calls) {
        messages.push({ role: "tool", tool_call_id: call.id, content: results.get(call.id)?.content ?? "" });
      }
    }
    // A tool message not claimed by the assistant message before it has lost its call: leave it out.
  }
  return messages;
}
