import { describe, expect, it } from "vitest";
import type { HistoryMessage } from "../src/domain/types.ts";
import { toChatMessages } from "../src/harness/agents/chat-history.ts";

const call = (id: string, name = "current_time") => ({ id, name, arguments: "{}" });

describe("toChatMessages", () => {
  it("maps a session's history to chat messages, each tool result right after its call", () => {
    const history: HistoryMessage[] = [
      { role: "user", content: "几点了" },
      { role: "assistant", content: "我查一下", toolCalls: [call("a"), call("b")] },
      { role: "tool", content: '{"iso":"x"}', toolCallId: "a" },
      { role: "tool", content: '{"iso":"y"}', toolCallId: "b" },
      { role: "assistant", content: "现在是 x" },
    ];
    expect(toChatMessages(history, "SYS")).toEqual([
      { role: "system", content: "SYS" },
      { role: "user", content: "几点了" },
      {
        role: "assistant",
        content: "我查一下",
        tool_calls: [
          { id: "a", type: "function", function: { name: "current_time", arguments: "{}" } },
          { id: "b", type: "function", function: { name: "current_time", arguments: "{}" } },
        ],
      },
      { role: "tool", tool_call_id: "a", content: '{"iso":"x"}' },
      { role: "tool", tool_call_id: "b", content: '{"iso":"y"}' },
      { role: "assistant", content: "现在是 x" },
    ]);
  });

  it("leaves out results whose call fell outside the window and calls that have no result", () => {
    const history: HistoryMessage[] = [
      { role: "tool", content: "orphan", toolCallId: "gone" },
      { role: "user", content: "go" },
      { role: "assistant", content: "", toolCalls: [call("a"), call("never")] },
      { role: "tool", content: "ok", toolCallId: "a" },
      { role: "assistant", content: "", toolCalls: [call("dangling")] },
      { role: "user", content: "again" },
    ];
    expect(toChatMessages(history, "SYS")).toEqual([
      { role: "system", content: "SYS" },
      { role: "user", content: "go" },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "a", type: "function", function: { name: "current_time", arguments: "{}" } }],
      },
      { role: "tool", tool_call_id: "a", content: "ok" },
      { role: "user", content: "again" },
    ]);
  });
});
