import { DEMO_QUESTIONS } from "../harness/agents/demo-questions.ts";
import type { Card } from "./model.ts";
import { buildProgressCard, type CardAsk, type ProgressView } from "./progress.ts";
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
};

const asking = { ...base, steps: [...base.steps, { title: "等待你的回答", status: "running" as const }] };
const bothQuestions: CardAsk = {
  requestId: "req_0001",
  questions: [DEMO_QUESTIONS.deploy, DEMO_QUESTIONS.features],
};
const finished = [
  ...base.steps,
  { title: "等待你的回答", status: "done" as const, summary: "回答了 2 个问题" },
  { title: "应用: Docker (推荐)", status: "done" as const, summary: "已应用: Docker (推荐)" },
  { title: "应用: 暗色模式", status: "done" as const, summary: "已应用: 暗色模式" },
];

export function exampleCards(): Record<string, Card> {
  return {
    "progress-running": buildProgressCard(base, []),
    "progress-one-form": buildProgressCard(asking, [bothQuestions]),
    // Issue 16: the deadline as an absolute time, 延长, and a message waiting behind the question.
    "progress-form-deadline": buildProgressCard(
      { ...asking, deadline: "10:15", extendMinutes: 15, queuedBehind: 1 },
      [bothQuestions],
    ),
    // Issue 16: the question timed out; the card says so in one line and the run goes on without it.
    "progress-ask-timed-out": buildProgressCard(
      {
        ...base,
        steps: [
          ...base.steps,
          { title: "等待你的回答", status: "failed", summary: "用户未在规定时间内回答" },
        ],
        notice: "问题已失效:已超时。未在期限内收到回答,任务已不等回答继续执行",
      },
      [],
    ),
    "progress-stacked-forms": buildProgressCard(
      {
        ...asking,
        steps: [
          ...base.steps,
          { title: "等待你的回答", status: "running" },
          { title: "等待你的回答", status: "running" },
        ],
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
        text: "**完成** 已按你的选择执行:\n\n- **新服务要用哪种方式部署?** Docker (推荐)\n- **需要同时开启哪些功能?** 暗色模式",
        endedAt: T0 + 74_000,
      },
      [bothQuestions],
    ),
    "progress-failed": buildProgressCard(
      {
        ...base,
        status: "failed",
        steps: [{ title: "扫描工作区", status: "done", summary: "扫描了 42 个文件" }],
        error: "演示任务在第一步之后失败:无法连接到构建服务(这是 /fail 命令模拟的错误)",
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
  };
}
