import { describe, expect, it } from "vitest";
import { buildProgressCard, type ProgressStepView } from "../src/cards/progress.ts";
import type { ProgressView } from "../src/cards/progress-view.ts";
import { PLAN_STEP_TOOL } from "../src/domain/types.ts";

const view = (steps: ProgressStepView[]): ProgressView => ({
  sessionId: "s",
  runId: "r",
  senderId: "ou_a",
  title: "任务",
  status: "running",
  steps,
  startedAt: 0,
});

const stepsText = (steps: ProgressStepView[]) => {
  const node = buildProgressCard(view(steps), []).body.elements[0];
  return node?.tag === "markdown" ? node.content.split("\n") : [];
};

describe("the progress card with an agent's plan", () => {
  it("keeps every plan entry in view, in order, while older tool steps give way", () => {
    const plan: ProgressStepView[] = ["读取配置", "修改代码", "运行测试"].map((title, i) => ({
      tool: PLAN_STEP_TOOL,
      title,
      status: i === 0 ? "done" : i === 1 ? "running" : "pending",
    }));
    const tools: ProgressStepView[] = Array.from({ length: 12 }, (_, i) => ({
      tool: "acp_read",
      title: `读取 · file${i + 1}`,
      status: "done",
    }));
    expect(stepsText([...plan, ...tools])).toEqual([
      "**步骤**",
      "✅ 读取配置",
      "⏳ 修改代码",
      "⬜ 运行测试",
      "…前面还有 4 步",
      ...tools.slice(-8).map((step) => `✅ ${step.title}`),
    ]);
  });

  it("reads as before without a plan", () => {
    const tools: ProgressStepView[] = Array.from({ length: 10 }, (_, i) => ({
      title: `t${i}`,
      status: "done",
    }));
    expect(stepsText(tools).slice(0, 3)).toEqual(["**步骤**", "…前面还有 2 步", "✅ t2"]);
  });
});
