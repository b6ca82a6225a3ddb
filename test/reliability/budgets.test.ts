import { afterEach, describe, expect, it } from "vitest";
import type { RunBudgetLimits } from "../../src/harness/agents/budget.ts";
import { createOpenAIAgent } from "../../src/harness/agents/openai.ts";
import { SUB_AGENT_PROMPT } from "../../src/harness/agents/prompts.ts";
import { ToolRegistry } from "../../src/harness/agents/tool-registry.ts";
import { createLogger } from "../../src/logger.ts";
import { cardText } from "../helpers/feishu.ts";
import { type RecordedRequest, type ScriptedModel, startScriptedModel } from "../helpers/openai-server.ts";
import { record, until } from "./helpers/env.ts";
import { ALICE, stacksForEachTest } from "./helpers/stack.ts";

/**
 * A model that delegates without end: every reply, the session agent's and every sub-agent's, asks for
 * three more sub-agents at once. One run has one budget for all of them (model requests, sub-agents, depth);
 * the run stops at it and its card says why. Before the budget this one message made thousands of requests.
 */

const { stack } = stacksForEachTest({ askPing: false });
const models: ScriptedModel[] = [];
afterEach(async () => {
  for (const model of models.splice(0)) await model.close();
});

const isSubAgent = (request: RecordedRequest) => request.body.messages[0]?.content === SUB_AGENT_PROMPT;

async function delegatingStack(budget: Partial<RunBudgetLimits>, replies: number) {
  const model = await startScriptedModel();
  models.push(model);
  const fanOut = (request: RecordedRequest) => ({
    toolCalls: [1, 2, 3].map((n) => ({
      id: `call_${model.requests.indexOf(request)}_${n}`,
      name: "delegate",
      arguments: { task: `子任务 ${n}` },
    })),
  });
  // Bounded script: past it the server answers 500, so even an unbudgeted run ends eventually.
  model.script(...Array.from({ length: replies }, () => fanOut));
  const registry = new ToolRegistry();
  const agent = createOpenAIAgent({
    baseUrl: model.baseUrl,
    model: "scripted-model",
    tools: registry,
    budget,
    maxRetries: 0,
    retryBaseMs: 1,
    logger: createLogger({ level: "silent" }),
  });
  const s = await stack({ agent, tools: registry.list() });
  return { s, model };
}

describe("run budget across delegate fan-out", () => {
  it("stops the run at its model-request budget, counting every sub-agent's requests, and the card says why", async () => {
    const budget = { modelRequests: 30, subAgents: 1_000, depth: 3 };
    const { s, model } = await delegatingStack(budget, 5_000);
    const { messageId } = await s.say({ chatType: "p2p", senderOpenId: ALICE, text: "把这件事拆开做" });
    const card = await s.progressCard(messageId);
    const text = await until(
      () => {
        const shown = cardText(s.cardOf(card));
        return shown.includes("模型请求预算") ? shown : undefined;
      },
      "the card naming the spent budget",
      15_000,
    );
    await s.core.runner.idle();
    expect(text).toContain("失败");
    expect(text).toContain("30 次");
    expect(model.requests.length).toBe(budget.modelRequests);
    const sub = model.requests.filter(isSubAgent).length;
    expect(sub).toBeGreaterThan(0); // the budget is shared: sub-agents spent part of it
    record("delegate request budget", {
      budget: budget.modelRequests,
      requests: model.requests.length,
      subAgentRequests: sub,
    });
  });

  it("refuses sub-agents past the run's count and depth, and the model is told why", async () => {
    const budget = { modelRequests: 1_000, subAgents: 4, depth: 2 };
    const { s, model } = await delegatingStack(budget, 60);
    const { messageId } = await s.say({ chatType: "p2p", senderOpenId: ALICE, text: "把这件事拆开做" });
    await s.progressCard(messageId);
    await until(() => model.requests.length >= 8, "the fan-out to meet the limits", 15_000);
    const told = (phrase: string) =>
      model.requests.some((request) =>
        request.body.messages.some((m) => m.role === "tool" && (m.content ?? "").includes(phrase)),
      );
    await until(() => told("达到上限"), "a refusal for the sub-agent count", 15_000);
    // Sub-agents started: the first request of each sub-agent conversation (its system prompt + task only).
    const started = model.requests.filter((r) => isSubAgent(r) && r.body.messages.length === 2).length;
    expect(started).toBeLessThanOrEqual(budget.subAgents);
    // At depth 2 the sub-agent no longer sees delegate; naming it anyway is refused by the budget.
    const deepest = model.requests.filter((r) => isSubAgent(r) && r.body.messages.length === 2);
    expect(deepest.some((r) => !(r.body.tools ?? []).some((t) => t.function.name === "delegate"))).toBe(true);
    record("delegate sub-agent budget", {
      budget: budget.subAgents,
      started,
      requests: model.requests.length,
    });
  });
});
