import { DEMO_QUESTIONS } from "../asks/demo-questions.ts";
import { PLAN_STEP_TOOL } from "../domain/types.ts";
import { bilingual, inEveryLocale, zh } from "../strings/index.ts";
import { englishExampleCards } from "./examples-en.ts";
import type { Card } from "./model.ts";
import { buildProgressCard, type CardAsk } from "./progress.ts";
import type { ProgressView } from "./progress-view.ts";
import { buildQueuedCard } from "./queued.ts";

/**
 * One example per card state, with fixed data: `npm run cards` writes them to `cards/` as golden files,
 * and a test fails when the builder's output and the files differ. Pure.
 */

const T0 = Date.UTC(2026, 10, 30, 2, 0, 0);

const base: ProgressView = {
  sessionId: "feishu-cli_demo-private-ou_alice",
  runId: "run_0001",
  senderId: "ou_alice",
  title: "帮我给新服务选一个部署方案",
  status: "running",
  steps: [{ title: "扫描工作区", status: "done", summary: "扫描了 42 个文件" }],
  startedAt: T0,
  // Each card links to its own run (a later run in the chat does not change what an old card opens).
  detailsUrl: "http://localhost:3000/sessions/feishu-cli_demo-private-ou_alice/runs/run_0001",
  replyToAnswer: true,
};

// The ask's step: the bot's own words, so the card carries them in every language (issue 19).
const askStep = { title: "等待你的回答", words: { title: bilingual.model.askTitle } };
const asking = { ...base, steps: [...base.steps, { ...askStep, status: "running" as const }] };
const bothQuestions: CardAsk = {
  requestId: "req_0001",
  questions: [DEMO_QUESTIONS.deploy, DEMO_QUESTIONS.features],
};
const finished = [
  ...base.steps,
  {
    title: askStep.title,
    status: "done" as const,
    summary: "回答了 2 个问题",
    words: { ...askStep.words, summary: bilingual.answeredSummary(2) },
  },
  { title: "部署方式：Docker（推荐）", status: "done" as const, summary: "已生成 Dockerfile" },
  { title: "开启功能：暗色模式", status: "done" as const, summary: "改动了 3 个文件" },
];

/** An ACP agent's steps as harness/agents/acp/updates.ts reports them: our frame, the agent's text. */
const planStep = (n: number, entry: string, status: "done" | "running" | "pending") => ({
  tool: PLAN_STEP_TOOL,
  title: `${zh.acp.planTitle} ${n}. ${entry}`,
  words: { title: inEveryLocale((s) => `${s.acp.planTitle} ${n}. ${entry}`) },
  status,
});
const acpStep = (kind: "read" | "edit", title: string) => ({
  tool: `acp_${kind}`,
  title: `${zh.acp.toolKinds[kind]} · ${title}`,
  words: { title: inEveryLocale((s) => `${s.acp.toolKinds[kind]} · ${title}`) },
});

export function exampleCards(): Record<string, Card> {
  // An outside agent's task (agents-api): the header names the agent, the form says why it asks; no 取消任务,
  // but the answerer's 拒绝回答 and 延长 (issue 25).
  const agentTask: ProgressView = {
    sessionId: "agent:Claude Code:ou_alice",
    runId: "task_0001",
    senderId: "ou_alice",
    title: "Migrate the billing service",
    status: "running",
    steps: [{ title: "Read the schema", status: "done", summary: "12 tables" }],
    startedAt: T0,
    agent: "Claude Code",
    replyToAnswer: true,
    deadline: { at: T0 + 15 * 60_000, timeZone: "Asia/Shanghai", now: T0 },
    extendMinutes: 15,
  };
  return {
    "agent-task-asking": buildProgressCard(agentTask, [
      { ...bothQuestions, reason: "两种部署方式都可行，需要你来定", declinable: true },
    ]),
    "agent-task-completed": buildProgressCard(
      { ...agentTask, status: "completed", text: "Done: migrated 12 tables", endedAt: T0 + 95_000 },
      [],
    ),
    "progress-running": buildProgressCard(base, []),
    "progress-one-form": buildProgressCard(asking, [bothQuestions]),
    // Issue 16: the deadline as an absolute time, 延长, and a message waiting behind the question.
    "progress-form-deadline": buildProgressCard(
      {
        ...asking,
        deadline: { at: T0 + 15 * 60_000, timeZone: "Asia/Shanghai", now: T0 },
        extendMinutes: 15,
        queuedBehind: 1,
      },
      [bothQuestions],
    ),
    // Issue 16: the question timed out; the card says so in one line and the run goes on without it.
    "progress-ask-timed-out": buildProgressCard(
      {
        ...base,
        steps: [
          ...base.steps,
          {
            title: askStep.title,
            status: "failed",
            summary: "用户未在规定时间内回答",
            words: { ...askStep.words, summary: bilingual.askTimedOutSummary },
          },
        ],
        notice: { kind: "timeout" },
      },
      [],
    ),
    "progress-stacked-forms": buildProgressCard(
      {
        ...asking,
        steps: [...base.steps, { ...askStep, status: "running" }, { ...askStep, status: "running" }],
      },
      [
        { requestId: "req_0002", questions: [DEMO_QUESTIONS.deploy] },
        { requestId: "req_0003", questions: [DEMO_QUESTIONS.features] },
      ],
    ),
    // A group card: everyone reads it, only the sender may answer, so it names them.
    "progress-group-form": buildProgressCard(
      {
        ...asking,
        sessionId: "feishu-cli_demo-group-oc_team",
        detailsUrl: "http://localhost:3000/sessions/feishu-cli_demo-group-oc_team/runs/run_0001",
        chatType: "group",
      },
      [bothQuestions],
    ),
    "progress-recovering": buildProgressCard({ ...asking, status: "recovering" }, [bothQuestions]),
    "progress-completed": buildProgressCard(
      {
        ...base,
        status: "completed",
        steps: finished,
        text: "**完成** 已按你的选择执行：\n\n- **新服务要用哪种方式部署？** Docker（推荐）\n- **需要同时开启哪些功能？** 暗色模式",
        endedAt: T0 + 74_000,
      },
      [bothQuestions],
    ),
    // AGENT=openai reported its tokens (issue 30): the footer says time, tokens and model; the header not the time.
    "progress-completed-usage": buildProgressCard(
      {
        ...base,
        status: "completed",
        steps: finished,
        text: "**完成** 已按你的选择执行。",
        endedAt: T0 + 74_000,
        usage: { inputTokens: 12_345, outputTokens: 678, cachedTokens: 8_192, model: "gpt-4o-2024-08-06" },
      },
      [],
    ),
    "progress-failed": buildProgressCard(
      {
        ...base,
        status: "failed",
        steps: [{ title: "扫描工作区", status: "done", summary: "扫描了 42 个文件" }],
        error: "演示任务在第一步之后失败：无法连接到构建服务（这是 /fail 命令模拟的错误）",
        endedAt: T0 + 3_000,
      },
      [],
    ),
    "progress-cancelled": buildProgressCard({ ...asking, status: "cancelled", endedAt: T0 + 20_000 }, [
      bothQuestions,
    ]),
    // A submit that left 附加功能 unanswered: the answer's card shows the form as it was filled in.
    "progress-prefilled-form": buildProgressCard(asking, [
      {
        ...bothQuestions,
        draft: [
          { choices: [1], custom: "先在预发环境试一周" },
          { choices: [], custom: "" },
        ],
      },
    ]),
    // Ten questions sets at once: as many forms as stay within 200 components, the rest in one block.
    "progress-many-asks": buildProgressCard(
      asking,
      Array.from({ length: 10 }, (_, i) => ({
        ...bothQuestions,
        requestId: `req_${String(i + 10).padStart(4, "0")}`,
      })),
    ),
    // An ACP agent (AGENT=acp): its plan as the checklist, its tool calls as steps, a permission request as
    // the form (the shape harness/agents/acp/permission.ts makes).
    "progress-acp-permission": buildProgressCard(
      {
        ...base,
        title: "把配置里的端口改成 8080",
        steps: [
          planStep(1, "读取配置", "done"),
          planStep(2, "修改端口", "running"),
          planStep(3, "运行测试", "pending"),
          { ...acpStep("read", "Read config.json"), status: "done", summary: "found 3 keys" },
          { ...acpStep("edit", "Edit config.json"), status: "pending", summary: "diff config.json" },
          {
            tool: "ask_user_questions",
            title: "请求权限：Edit config.json",
            words: { title: bilingual.acp.permissionTitle("Edit config.json") },
            status: "running",
          },
        ],
      },
      [
        {
          requestId: "req_0100",
          questions: [
            {
              question: "智能体想要编辑：Edit config.json。允许吗？",
              header: "权限请求",
              multiSelect: false,
              options: [
                { label: "Allow", description: "仅允许这一次" },
                { label: "Always Allow", description: "以后同类操作都允许" },
                { label: "Reject", description: "这一次不允许" },
              ],
            },
          ],
        },
      ],
    ),
    // The same task after the person picked Reject and the agent stopped: 已拒绝, grey, no 重试 (issue 31).
    "progress-acp-rejected": buildProgressCard(
      {
        ...base,
        title: "把配置里的端口改成 8080",
        status: "rejected",
        steps: [
          planStep(1, "读取配置", "done"),
          planStep(2, "修改端口", "running"),
          planStep(3, "运行测试", "pending"),
          { ...acpStep("read", "Read config.json"), status: "done", summary: "found 3 keys" },
          {
            tool: "ask_user_questions",
            title: "请求权限：Edit config.json",
            words: {
              title: bilingual.acp.permissionTitle("Edit config.json"),
              summary: bilingual.answeredSummary(1),
            },
            status: "done",
            summary: zh.answeredSummary(1),
          },
          {
            ...acpStep("edit", "Edit config.json"),
            words: {
              ...acpStep("edit", "Edit config.json").words,
              summary: inEveryLocale((s) => s.acp.refusedStep),
            },
            status: "stopped",
            summary: zh.acp.refusedStep,
          },
        ],
        endedAt: T0 + 12_000,
      },
      [],
    ),
    "queued-waiting": buildQueuedCard({
      sessionId: base.sessionId,
      queueId: "q_0001",
      senderId: "ou_alice",
      text: "顺便把 README 也更新一下",
      position: 2,
      state: "queued",
    }),
    "queued-next": buildQueuedCard({
      sessionId: base.sessionId,
      queueId: "q_0002",
      senderId: "ou_alice",
      text: "再跑一遍测试",
      position: 1,
      state: "queued",
    }),
    "queued-started": buildQueuedCard({
      sessionId: base.sessionId,
      queueId: "q_0002",
      senderId: "ou_alice",
      text: "再跑一遍测试",
      position: 1,
      state: "started",
    }),
    // An English-speaking tenant's cards (issue 19): English first, Chinese beside it.
    ...englishExampleCards(),
  };
}
