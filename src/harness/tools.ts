import { ASK_TOOL_DESCRIPTION, ASK_TOOL_NAME, askToolJsonSchema } from "../asks/schema.ts";
import type { SessionInfo, ToolDefinition } from "./types.ts";

let askDefinition: ToolDefinition | undefined;

/** The tool as a model sees it (built once: the JSON Schema never changes at run time). */
export function askToolDefinition(): ToolDefinition {
  askDefinition ??= {
    name: ASK_TOOL_NAME,
    description: ASK_TOOL_DESCRIPTION,
    parameters: askToolJsonSchema(),
  };
  return askDefinition;
}

/** `feishu-{botId}-private-{userId}` */
const FEISHU_PRIVATE_ID = /^feishu-[^-]+-private-.+$/;

export function feishuPrivateSessionId(botId: string, userId: string): string {
  return `feishu-${botId}-private-${userId}`;
}

export function isFeishuSession(session: Pick<SessionInfo, "id" | "workspace">): boolean {
  return (
    FEISHU_PRIVATE_ID.test(session.id) || session.workspace.replaceAll("\\", "/").includes("/feishu-chat/")
  );
}

export function isWechatSession(session: Pick<SessionInfo, "channel">): boolean {
  return session.channel === "wechat";
}

/**
 * Which tools a session's agent may see.
 * - Feishu sessions (private by id, group by workspace) keep `ask_user_questions` and drop WeChat tools.
 * - WeChat sessions drop `ask_user_questions` (no surface there can show a form) and Feishu-only tools.
 * - Other sessions (desktop/web) drop Feishu-only and WeChat-only tools.
 * - A sub-agent never asks the user: only the top-level agent owns the conversation.
 */
export function filterToolsForSession(
  tools: readonly ToolDefinition[],
  session: Pick<SessionInfo, "id" | "workspace" | "channel">,
  options: { subAgent?: boolean } = {},
): ToolDefinition[] {
  const feishu = isFeishuSession(session);
  const wechat = !feishu && isWechatSession(session);
  return tools.filter((tool) => {
    if (tool.name === ASK_TOOL_NAME) return !options.subAgent && !wechat;
    if (tool.only === "feishu") return feishu;
    if (tool.only === "wechat") return wechat;
    return true;
  });
}
