import { ASK_TOOL_DESCRIPTION, ASK_TOOL_NAME, askToolJsonSchema } from "../asks/schema.ts";
import { isFeishuSession, isWechatSession } from "../domain/session-id.ts";
import type { SessionInfo, ToolDefinition } from "../domain/types.ts";

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

/**
 * Which tools a session's agent may see.
 * - Feishu sessions (by their `channel`) keep `ask_user_questions` and drop WeChat tools.
 * - WeChat sessions drop `ask_user_questions` (no surface there can show a form) and Feishu-only tools.
 * - Other sessions (desktop/web) drop Feishu-only and WeChat-only tools.
 * - A sub-agent never asks the user: only the top-level agent owns the conversation.
 */
export function filterToolsForSession(
  tools: readonly ToolDefinition[],
  session: Pick<SessionInfo, "channel">,
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
