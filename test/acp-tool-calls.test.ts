import { describe, expect, it } from "vitest";
import { agentToolName, ToolCallMemory } from "../src/harness/agents/acp/tool-calls.ts";

/**
 * What a session's earlier tool_call said fills in a permission request that names the call by id alone
 * (issue 30): the tool's name reaches the standing-permission scope and the form.
 */
describe("ToolCallMemory", () => {
  it("fills the fields a request leaves out from the session's earlier updates of the same call", () => {
    const calls = new ToolCallMemory();
    calls.apply({
      sessionUpdate: "tool_call",
      toolCallId: "t1",
      title: "`ls -la`",
      kind: "execute",
      name: "Bash",
      rawInput: { command: "ls -la" },
      locations: [{ path: "src" }],
    });
    calls.apply({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "in_progress" });
    expect(calls.merged({ toolCallId: "t1" })).toEqual({
      toolCallId: "t1",
      title: "`ls -la`",
      kind: "execute",
      name: "Bash",
      rawInput: { command: "ls -la" },
    });
  });

  it("lets the request's own fields win, reads null as 'unchanged', and keeps another call's apart", () => {
    const calls = new ToolCallMemory();
    calls.apply({
      sessionUpdate: "tool_call",
      toolCallId: "t1",
      title: "Edit a.md",
      kind: "edit",
      name: "Edit",
    });
    calls.apply({
      sessionUpdate: "tool_call",
      toolCallId: "t2",
      title: "Read b.md",
      kind: "read",
      name: "Read",
    });
    expect(calls.merged({ toolCallId: "t1", title: "Edit a.md (3 lines)", name: null })).toEqual({
      toolCallId: "t1",
      title: "Edit a.md (3 lines)",
      kind: "edit",
      name: "Edit",
    });
    expect(calls.merged({ toolCallId: "t3" })).toEqual({ toolCallId: "t3" });
  });

  it("forgets the oldest calls past its bound, not the ones just seen", () => {
    const calls = new ToolCallMemory(2);
    for (const id of ["a", "b", "c"])
      calls.apply({ sessionUpdate: "tool_call", toolCallId: id, title: id, name: id });
    expect(calls.merged({ toolCallId: "a" }).name).toBeUndefined();
    expect(calls.merged({ toolCallId: "c" }).name).toBe("c");
  });

  it("keeps Claude Code's `_meta.claudeCode.toolName` of a call, the request's own winning", () => {
    const calls = new ToolCallMemory();
    calls.apply({
      sessionUpdate: "tool_call",
      toolCallId: "t1",
      title: "Edit a.md",
      kind: "edit",
      _meta: { claudeCode: { toolName: "Edit" } },
    });
    calls.merged({ toolCallId: "t1" });
    expect(calls.agentTool("t1")).toBe("Edit");
    calls.merged({ toolCallId: "t1", _meta: { claudeCode: { toolName: "MultiEdit" } } });
    expect(calls.agentTool("t1")).toBe("MultiEdit");
    // A later update with a hostile _meta forgets nothing.
    calls.apply({ sessionUpdate: "tool_call_update", toolCallId: "t1", _meta: { claudeCode: 7 } });
    expect(calls.agentTool("t1")).toBe("MultiEdit");
    expect(calls.agentTool("nope")).toBeUndefined();
  });

  it("reads only a short name of safe characters from _meta", () => {
    expect(agentToolName({ claudeCode: { toolName: "mcp__acp__Write" } })).toBe("mcp__acp__Write");
    expect(agentToolName({ claudeCode: { toolName: "Edit", toolResponse: {} } })).toBe("Edit");
    for (const meta of [
      undefined,
      null,
      "Edit",
      [],
      { claudeCode: null },
      { claudeCode: "Edit" },
      { claudeCode: { toolName: 3 } },
      { claudeCode: { toolName: ["Edit"] } },
      { claudeCode: { toolName: "" } },
      { claudeCode: { toolName: "E".repeat(81) } },
      { claudeCode: { toolName: "Edit all" } },
      { claudeCode: { toolName: "Edit\n" } },
      { claudeCode: { toolName: "编辑" } },
      { claudeCode: { toolName: "_Edit" } },
      { toolName: "Edit" },
    ])
      expect(agentToolName(meta)).toBeUndefined();
  });
});
