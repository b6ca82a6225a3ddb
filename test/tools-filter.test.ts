import { describe, expect, it } from "vitest";
import { feishuPrivateSessionId } from "../src/domain/session-id.ts";
import type { ToolDefinition } from "../src/domain/types.ts";
import { askToolDefinition, filterToolsForSession } from "../src/harness/tools.ts";

const tool = (name: string, only?: "feishu" | "wechat"): ToolDefinition => ({
  name,
  description: name,
  parameters: {},
  ...(only ? { only } : {}),
});
const ALL = [
  askToolDefinition(),
  tool("read_file"),
  tool("feishu_send_file", "feishu"),
  tool("wechat_send", "wechat"),
];
const names = (tools: ToolDefinition[]) => tools.map((t) => t.name);

describe("filterToolsForSession", () => {
  it("keeps ask_user_questions and Feishu tools in a Feishu private chat, and drops WeChat tools", () => {
    const session = {
      id: feishuPrivateSessionId("cli_bot", "ou_a"),
      channel: "feishu" as const,
      workspace: "/data/ws/private",
    };
    expect(names(filterToolsForSession(ALL, session))).toEqual([
      "ask_user_questions",
      "read_file",
      "feishu_send_file",
    ]);
  });

  it("recognises a Feishu group session by its channel, not by its id or workspace", () => {
    const group = { id: "g-1", channel: "feishu" as const, workspace: "/data/ws/anywhere" };
    expect(names(filterToolsForSession(ALL, group))).toEqual([
      "ask_user_questions",
      "read_file",
      "feishu_send_file",
    ]);
    const web = { id: "g-2", channel: "web" as const, workspace: "/data/workspaces/feishu-chat/oc_1" };
    expect(names(filterToolsForSession(ALL, web))).not.toContain("feishu_send_file");
  });

  it("drops ask_user_questions and Feishu tools on WeChat", () => {
    const session = { id: "wx-1", channel: "wechat" as const, workspace: "/data/ws/wx" };
    expect(names(filterToolsForSession(ALL, session))).toEqual(["read_file", "wechat_send"]);
  });

  it("drops channel-only tools in other sessions but keeps the ask for desktop/web clients", () => {
    const session = { id: "desktop-1", channel: "web" as const, workspace: "/data/ws/d" };
    expect(names(filterToolsForSession(ALL, session))).toEqual(["ask_user_questions", "read_file"]);
  });

  it("never gives ask_user_questions to a sub-agent", () => {
    const session = {
      id: feishuPrivateSessionId("cli_bot", "ou_a"),
      channel: "feishu" as const,
      workspace: "/w",
    };
    expect(names(filterToolsForSession(ALL, session, { subAgent: true }))).not.toContain(
      "ask_user_questions",
    );
  });

  it("does not mistake a look-alike id for a Feishu private session", () => {
    const session = { id: "feishu-private", channel: "web" as const, workspace: "/w/feishu-chatroom/x" };
    expect(names(filterToolsForSession(ALL, session))).not.toContain("feishu_send_file");
  });
});
