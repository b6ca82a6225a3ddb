import { DEMO_QUESTIONS_EN } from "../asks/demo-questions.ts";
import { bilingual, type Locale } from "../strings/index.ts";
import type { Card } from "./model.ts";
import { buildProgressCard, type CardAsk } from "./progress.ts";
import type { ProgressView } from "./progress-view.ts";
import { buildQueuedCard } from "./queued.ts";

/**
 * The golden cards of an English-speaking tenant (issue 19: FEISHU_DOMAIN=lark or BOT_LOCALE=en_us): English
 * first (`content`), Chinese beside it. Fixed data, written the way such a tenant's people and the demo's
 * English questions read; `npm run cards` writes them to cards/en-*.json next to the Chinese-first ones. Pure.
 */

const LARK: readonly Locale[] = ["en_us", "zh_cn"];
const T0 = Date.UTC(2026, 10, 30, 2, 0, 0);

const base: ProgressView = {
  sessionId: "feishu-cli_demo-private-ou_alice",
  runId: "run_0001",
  senderId: "ou_alice",
  title: "Pick a deployment plan for the new service",
  status: "running",
  steps: [{ title: "Scan the workspace", status: "done", summary: "Scanned 42 files" }],
  startedAt: T0,
  detailsUrl: "http://localhost:3000/sessions/feishu-cli_demo-private-ou_alice/runs/run_0001",

  replyToAnswer: true,
};
// The ask's step is the bot's own words: both languages ride along (issue 19).
const askStep = { title: "Waiting for your answer", words: { title: bilingual.model.askTitle } };
const asking: ProgressView = {
  ...base,
  steps: [...base.steps, { ...askStep, status: "running" }],
};
const bothQuestions: CardAsk = {
  requestId: "req_0001",
  questions: [DEMO_QUESTIONS_EN.deploy, DEMO_QUESTIONS_EN.features],
};

export function englishExampleCards(): Record<string, Card> {
  const on = { locales: LARK };
  return {
    "en-progress-running": buildProgressCard(base, [], on),
    "en-progress-one-form": buildProgressCard(asking, [bothQuestions], on),
    "en-progress-form-deadline": buildProgressCard(
      {
        ...asking,
        // Tomorrow in the zone: the date is written in each reader's language (Dec 1, 12月1日).
        deadline: { at: T0 + 24 * 3_600_000 + 15 * 60_000, timeZone: "Asia/Shanghai", now: T0 },
        extendMinutes: 15,
        queuedBehind: 2,
      },
      [bothQuestions],
      on,
    ),
    "en-progress-group-form": buildProgressCard(
      {
        ...asking,
        sessionId: "feishu-cli_demo-group-oc_team",
        detailsUrl: "http://localhost:3000/sessions/feishu-cli_demo-group-oc_team/runs/run_0001",
        chatType: "group",
      },
      [bothQuestions],
      on,
    ),
    "en-progress-completed": buildProgressCard(
      {
        ...base,
        status: "completed",
        steps: [
          ...base.steps,
          {
            ...askStep,
            status: "done",
            summary: "Answered 2 questions",
            words: { ...askStep.words, summary: bilingual.answeredSummary(2) },
          },
          { title: "Deployment: Docker (recommended)", status: "done", summary: "Generated Dockerfile" },
        ],
        text: "**Done** — carried out as you chose:\n\n- **How should the new service be deployed?** Docker (recommended)",
        endedAt: T0 + 74_000,
      },
      [],
      on,
    ),
    "en-progress-failed": buildProgressCard(
      {
        ...base,
        status: "failed",
        error:
          "The demo task failed after its first step: could not reach the build service (an error simulated by the /fail command)",
        endedAt: T0 + 3_000,
      },
      [],
      on,
    ),
    "en-queued-waiting": buildQueuedCard(
      {
        sessionId: base.sessionId,
        queueId: "q_0001",
        senderId: "ou_alice",
        text: "Update the README while you are at it",
        position: 2,
        state: "queued",
      },
      on,
    ),
  };
}
