import { plural } from "./en-words.ts";

/**
 * What the agents say: why a run on a real model failed, outside agents' cards and waits, ACP agents.
 * Chinese (zh_cn, the seeds' text) and English (en_us) side by side; `typeof zhAgents` holds the English to
 * the Chinese shape, so a missing or misshapen entry is a type error here.
 */

export const zhAgents = {
  /** Why a run on a real model failed: each names what the operator can check or change. */
  model: {
    unauthorized: "模型服务返回 401：检查 OPENAI_API_KEY",
    forbidden: (model: string) => `模型服务返回 403：检查 OPENAI_API_KEY 是否有权使用模型 ${model}`,
    notFound: (model: string) =>
      `模型服务返回 404：检查 OPENAI_MODEL（当前为 ${model}）是否存在，以及 OPENAI_BASE_URL 是否指向 API 根路径（通常以 /v1 结尾）`,
    rejected: (status: number, detail: string) =>
      `模型服务拒绝了请求（${status}）：${detail}（若提示不支持 tools，请换一个支持工具调用的模型）`,
    rateLimited: (retries: number) =>
      `模型服务限流（429），重试 ${retries} 次后仍失败：稍后再试，或提高该密钥的速率限额`,
    serverError: (status: number, retries: number) =>
      `模型服务出错（${status}），重试 ${retries} 次后仍失败：稍后再试`,
    timedOut: (seconds: number, retries: number) =>
      `模型服务 ${seconds} 秒内没有响应，重试 ${retries} 次后仍失败：检查 OPENAI_BASE_URL 是否可达，或稍后再试`,
    unreachable: (baseUrl: string, reason: string) =>
      `无法连接模型服务 ${baseUrl}（${reason}）：检查 OPENAI_BASE_URL`,
    other: (detail: string) => `调用模型失败：${detail}`,
    tooManySteps: (steps: number) => `模型连续 ${steps} 轮调用工具仍未给出答复，已停止`,
    emptyAnswer: "（模型没有返回文字）",
    askTitle: "等待你的回答",
    delegateTitle: (task: string) => `委派：${task || "子任务"}`,
    requestBudgetSpent: (limit: number) =>
      `本次任务已用完模型请求预算（${limit} 次，含所有子代理），已停止：可拆成更小的任务，或调高 MAX_MODEL_REQUESTS_PER_RUN`,
    subAgentBudgetSpent: (limit: number) =>
      `本次任务已启动 ${limit} 个子代理，达到上限（MAX_SUBAGENTS_PER_RUN），请直接完成剩下的工作`,
    delegateTooDeep: (depth: number) =>
      `子代理最多嵌套 ${depth} 层（MAX_DELEGATE_DEPTH），请直接完成这个子任务`,
  },
  /** Cards and waits of outside agents (agents-api): the card always says which agent asks, and why. */
  agents: {
    working: (agent: string) => `${agent} 正在处理…`,
    ended: (agent: string, elapsed: string) => `${agent} · ${elapsed}`,
    askReason: (reason: string) => `**提问原因：** ${reason}`,
    /** The progress notification of a waiting MCP call: "等待 Alice 在飞书回答 · 3 分钟". */
    waiting: (name: string, minutes: number) =>
      minutes < 1 ? `等待 ${name} 在飞书回答` : `等待 ${name} 在飞书回答 · ${minutes} 分钟`,
    questionCardTitle: (agent: string) => `${agent} 有问题要问你`,
    /** The session page's header for an outside agent's task. */
    sessionTitle: (agent: string) => `${agent} 的任务`,
    answered: "已收到回答，谢谢！",
    notAnswered: "提问已结束。",
  },
  acp: {
    notStarted: (command: string, reason: string) =>
      `无法启动 ACP 智能体 ${command}：${reason}（检查 ACP_COMMAND / ACP_ARGS）`,
    exited: (detail: string) => `ACP 智能体进程意外退出（${detail}），下一条消息会重新启动它`,
    hostGone: "ACP 智能体所在的实例已停止，它的进程和工作区无法迁移到其他实例：请重新发送消息开始",
    hung: (seconds: number) =>
      `ACP 智能体 ${seconds} 秒没有任何进展，已停止它（ACP_IDLE_TIMEOUT_MS）；下一条消息会重新启动它`,
    failed: (detail: string) => `ACP 智能体出错：${detail}`,
    refused: "ACP 智能体拒绝了这个请求",
    emptyAnswer: "（智能体没有返回文字）",
    stoppedAt: (reason: string) => `（智能体已停止：${reason}）`,
    permissionHeader: "权限请求",
    permissionTitle: (title: string) => `请求权限：${title}`,
    permissionQuestion: (title: string, kind: string, where: string) =>
      `智能体想要${kind}：${title}${where ? `（${where}）` : ""}。允许吗？`,
    toolKinds: {
      read: "读取",
      edit: "编辑",
      delete: "删除",
      move: "移动",
      search: "搜索",
      execute: "执行命令",
      think: "思考",
      fetch: "获取网页",
      switch_mode: "切换模式",
      other: "执行操作",
    },
    optionKinds: {
      allow_once: "仅允许这一次",
      allow_always: "以后同类操作都允许",
      reject_once: "这一次不允许",
      reject_always: "以后同类操作都不允许",
    },
    planTitle: "计划",
    /** A tool call whose permission the person refused: its step's note. */
    refusedStep: "已拒绝",
    /** A tool's JSON output on its step: its shape rather than its first line (`[`). */
    jsonArray: (items: number) => `JSON 数组，${items} 项`,
    jsonObject: (total: number, keys: string) =>
      total === 0 ? "JSON 对象（空）" : `JSON 对象，${total} 个键：${keys}`,
    /** Between the keys named in `jsonObject`. */
    listSeparator: "、",
    /** Offered beside a lone permission option (a form needs two), and the label of an unnamed one. */
    rejectLabel: "不允许",
    optionFallback: "选项",
    /** "Always allow" (issue 30): a remembered permission choice, as the card's step lines say it. */
    standingScope: (kind: string, tool: string) => (tool ? `${kind}（${tool}）` : kind),
    standingAllowed: (scope: string) => `以后本会话中的「${scope}」操作都将自动允许`,
    standingRejected: (scope: string) => `以后本会话中的「${scope}」操作都将自动拒绝`,
    autoAllowed: (title: string) => `已按之前的选择自动允许：${title}`,
    autoRejected: (title: string) => `已按之前的选择自动拒绝：${title}`,
    /**
     * An "always" the agent keeps itself too (it offered no one-time option): the session page cannot undo it.
     * These three are step lines: a title shows 60 characters, a note 80 (cards/steps.ts).
     */
    agentKeepsToo: "智能体也会自己记住这个选择，在会话详情中撤销撤不回",
    /** An "always" on a request that names no tool the bot can scope it to: it counts this once only. */
    onceOnlyUnnamed: "请求未说明是哪个工具，无法记住：只按这一次处理，下次会再询问",
    /** The same, when the agent offered no one-time option: the agent alone keeps the choice. */
    agentKeepsOnly: "请求未说明是哪个工具，本会话不记住；智能体会自己记住，无法在此撤销",
    /**
     * An "always" on a tool that is not allowed or refused as a whole (a command tool such as Bash: each
     * command is asked about): it counts this once only, or the agent alone keeps it.
     */
    onceOnlyTool: (tool: string) => `「${tool}」不按整个工具记住：只按这一次处理，下次会再询问`,
    agentKeepsTool: (tool: string) => `本会话不按整个「${tool}」记住；智能体会自己记住，无法在此撤销`,
  },
};

export const enAgents: typeof zhAgents = {
  model: {
    unauthorized: "The model service returned 401: check OPENAI_API_KEY",
    forbidden: (model: string) =>
      `The model service returned 403: check that OPENAI_API_KEY may use the model ${model}`,
    notFound: (model: string) =>
      `The model service returned 404: check that OPENAI_MODEL (now ${model}) exists and that OPENAI_BASE_URL points at the API root (usually ending in /v1)`,
    rejected: (status: number, detail: string) =>
      `The model service rejected the request (${status}): ${detail} (if it says tools are not supported, switch to a model that supports tool calls)`,
    rateLimited: (retries: number) =>
      `The model service is rate limiting (429) and still failed after ${retries} ${plural(retries, "retry", "retries")}: try again later, or raise this key's rate limit`,
    serverError: (status: number, retries: number) =>
      `The model service failed (${status}) and still failed after ${retries} ${plural(retries, "retry", "retries")}: try again later`,
    timedOut: (seconds: number, retries: number) =>
      `The model service did not respond within ${seconds} s, even after ${retries} ${plural(retries, "retry", "retries")}: check that OPENAI_BASE_URL is reachable, or try again later`,
    unreachable: (baseUrl: string, reason: string) =>
      `Could not connect to the model service at ${baseUrl} (${reason}): check OPENAI_BASE_URL`,
    other: (detail: string) => `The model call failed: ${detail}`,
    tooManySteps: (steps: number) =>
      `The model called tools for ${steps} rounds in a row without answering, so it was stopped`,
    emptyAnswer: "(The model returned no text)",
    askTitle: "Waiting for your answer",
    delegateTitle: (task: string) => `Delegated: ${task || "subtask"}`,
    requestBudgetSpent: (limit: number) =>
      `This task used up its model request budget (${limit} requests, sub-agents included) and was stopped: split it into smaller tasks, or raise MAX_MODEL_REQUESTS_PER_RUN`,
    subAgentBudgetSpent: (limit: number) =>
      `This task has started ${limit} sub-agents, the limit (MAX_SUBAGENTS_PER_RUN). Finish the remaining work yourself`,
    delegateTooDeep: (depth: number) =>
      `Sub-agents may nest at most ${depth} ${plural(depth, "level")} deep (MAX_DELEGATE_DEPTH). Finish this subtask yourself`,
  },
  agents: {
    working: (agent: string) => `${agent} is working…`,
    ended: (agent: string, elapsed: string) => `${agent} · ${elapsed}`,
    askReason: (reason: string) => `**Why it asks:** ${reason}`,
    // English serves Lark tenants and English-speaking Feishu ones alike: no product name here.
    waiting: (name: string, minutes: number) =>
      minutes < 1
        ? `Waiting for ${name} to answer in chat`
        : `Waiting for ${name} to answer in chat · ${minutes} min`,
    questionCardTitle: (agent: string) => `${agent} has a question for you`,
    sessionTitle: (agent: string) => `${agent}'s task`,
    answered: "Got your answer, thank you!",
    notAnswered: "The question has closed.",
  },
  acp: {
    notStarted: (command: string, reason: string) =>
      `Could not start the ACP agent ${command}: ${reason} (check ACP_COMMAND / ACP_ARGS)`,
    exited: (detail: string) =>
      `The ACP agent process exited unexpectedly (${detail}); the next message will start it again`,
    hostGone:
      "The instance running this ACP agent stopped, and its process and workspace cannot move to another instance: send the message again to start over",
    hung: (seconds: number) =>
      `The ACP agent made no progress for ${seconds} s, so it was stopped (ACP_IDLE_TIMEOUT_MS); the next message will start it again`,
    failed: (detail: string) => `The ACP agent failed: ${detail}`,
    refused: "The ACP agent refused this request",
    emptyAnswer: "(The agent returned no text)",
    stoppedAt: (reason: string) => `(The agent stopped: ${reason})`,
    permissionHeader: "Permission",
    permissionTitle: (title: string) => `Permission requested: ${title}`,
    permissionQuestion: (title: string, kind: string, where: string) =>
      `The agent wants to ${kind}: ${title}${where ? ` (${where})` : ""}. Allow it?`,
    toolKinds: {
      read: "read",
      edit: "edit",
      delete: "delete",
      move: "move",
      search: "search",
      execute: "run a command",
      think: "think",
      fetch: "fetch a web page",
      switch_mode: "switch modes",
      other: "take an action",
    },
    optionKinds: {
      allow_once: "Allow this time only",
      allow_always: "Always allow this kind of action",
      reject_once: "Not this time",
      reject_always: "Never allow this kind of action",
    },
    planTitle: "Plan",
    refusedStep: "Declined",
    jsonArray: (items: number) => `JSON array, ${items} ${items === 1 ? "item" : "items"}`,
    jsonObject: (total: number, keys: string) =>
      total === 0 ? "JSON object (empty)" : `JSON object, ${total} ${total === 1 ? "key" : "keys"}: ${keys}`,
    listSeparator: ", ",
    rejectLabel: "Don't allow",
    optionFallback: "Option",
    standingScope: (kind: string, tool: string) => (tool ? `${kind} (${tool})` : kind),
    standingAllowed: (scope: string) => `From now on allowed in this session: ${scope}`,
    standingRejected: (scope: string) => `From now on refused in this session: ${scope}`,
    autoAllowed: (title: string) => `Allowed automatically, as chosen before: ${title}`,
    autoRejected: (title: string) => `Refused automatically, as chosen before: ${title}`,
    agentKeepsToo: "The agent keeps it too: revoking here cannot undo that",
    onceOnlyUnnamed: "Names no tool: applies this once; you'll be asked again",
    agentKeepsOnly: "Names no tool: the agent keeps it itself, not revocable here",
    onceOnlyTool: (tool: string) => `Not kept for all of ${tool}: this once; you'll be asked again`,
    agentKeepsTool: (tool: string) => `Not kept for all of ${tool}; the agent keeps it, can't revoke`,
  },
};
