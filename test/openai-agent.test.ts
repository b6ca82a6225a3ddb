import { afterEach, describe, expect, it, vi } from "vitest";
import type { Card } from "../src/cards/model.ts";
import type { RunView } from "../src/domain/types.ts";
import { createOpenAIAgent, type OpenAIAgentOptions } from "../src/harness/agents/openai.ts";
import { FEISHU_ASK_INSTRUCTION, SUB_AGENT_PROMPT } from "../src/harness/agents/prompts.ts";
import { currentTimeTool, ToolRegistry } from "../src/harness/agents/tool-registry.ts";
import { createLogger } from "../src/logger.ts";
import { en } from "../src/strings/index.ts";
import { sampleAsk } from "./fixtures.ts";
import { buildCore, privateSession, type TestCore } from "./helpers/core.ts";
import { cardText, type FeishuRig, formsOn, requestIdsOn, startFeishuRig } from "./helpers/feishu.ts";
import { eventually, waitForRun } from "./helpers/harness.ts";
import { type ChatBody, type ScriptedModel, startScriptedModel } from "./helpers/openai-server.ts";
import { until } from "./helpers/wait.ts";

const ALICE = "ou_alice000000000000000000000000000";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function scriptedModel(): Promise<ScriptedModel> {
  const model = await startScriptedModel();
  closers.push(() => model.close());
  return model;
}

/** The real agent against the scripted server, with the registry main.ts would build. */
function openaiAgent(model: ScriptedModel, options: Partial<OpenAIAgentOptions> = {}) {
  const registry = new ToolRegistry().register(currentTimeTool(() => Date.UTC(2025, 0, 2, 3, 4, 5)));
  const agent = createOpenAIAgent({
    baseUrl: model.baseUrl,
    apiKey: "sk-test",
    model: "scripted-model",
    tools: registry,
    logger: createLogger({ level: "silent" }),
    retryBaseMs: 1,
    requestTimeoutMs: 5000,
    ...options,
  });
  return { agent, tools: registry.list() };
}

async function core(model: ScriptedModel, options: Partial<OpenAIAgentOptions> & { dbFile?: string } = {}) {
  const { dbFile, ...agentOptions } = options;
  const built = await buildCore({ ...openaiAgent(model, agentOptions), ...(dbFile ? { dbFile } : {}) });
  closers.push(() => built.close());
  const session = await built.runner.ensureSession(privateSession(ALICE));
  return { core: built, session };
}

async function start(test: TestCore, sessionId: string, text = "go"): Promise<RunView> {
  const submitted = await test.runner.submit({ sessionId, senderId: ALICE, text });
  if (submitted.kind !== "started") throw new Error("expected the run to start");
  return submitted.run;
}

const toolNames = (body: ChatBody) => (body.tools ?? []).map((tool) => tool.function.name).sort();
const lastMessage = (body: ChatBody) => body.messages.at(-1);

describe("OpenAI agent on Feishu, end to end (scripted model over HTTP, emulator, SDK)", () => {
  it("asks through a form on the card, hands the answer to the model, and streams the final answer onto the card", async () => {
    const model = await scriptedModel();
    const deltas = Array.from({ length: 50 }, (_, index) => `第${index + 1}段。`);
    model.script(
      {
        text: ["我先确认", "两件事。"],
        toolCalls: [{ id: "call_ask", name: "ask_user_questions", arguments: sampleAsk() }],
      },
      { text: deltas, delayMs: 20 },
    );
    const r: FeishuRig = await startFeishuRig(openaiAgent(model));
    closers.push(() => r.stop());
    const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "帮我搭一个新模块" });
    const cardId = await r.progressCard(userMessageId);
    const card = await r.until(() => {
      const c = r.cardOf(cardId);
      return formsOn(c).length > 0 && c;
    }, "a form on the card");

    const first = (await model.request(1)).body;
    expect(first).toMatchObject({ model: "scripted-model", stream: true });
    expect(toolNames(first)).toEqual(["ask_user_questions", "current_time", "delegate"]);
    expect(first.messages[0]?.content).toContain(FEISHU_ASK_INSTRUCTION);
    expect(first.messages.slice(1)).toEqual([{ role: "user", content: "帮我搭一个新模块" }]);
    expect(model.requests[0]?.headers.authorization).toBe("Bearer sk-test");

    const patched: Card[] = [];
    r.emulator.on("message_patched", ({ message, via }) => {
      if (message.messageId === cardId && via !== "callback") patched.push(JSON.parse(message.content));
    });
    const requestId = requestIdsOn(card)[0] ?? "";
    const response = await r.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: {
        kind: "feishu_ask",
        act: "submit",
        sessionId: r.core.registry.get(requestId)?.sessionId ?? "",
        requestId,
        sender: ALICE,
      },
      name: "ask0_submit",
      formValue: { ask0_q0: "1", ask0_c0: "", ask0_q1: ["0", "2"], ask0_c1: "" },
    });
    expect(response.toast?.content).toBe("已提交");

    const final = await r.until(
      () => {
        const c = r.cardOf(cardId);
        return c.header?.template === "green" && c;
      },
      "the completed card",
      15_000,
    );
    expect(cardText(final)).toContain("第50段。");

    // The model got the person's answer as the result of its own call.
    const second = (await model.request(2)).body;
    expect(second.messages.slice(-2)).toEqual([
      {
        role: "assistant",
        content: "我先确认两件事。",
        tool_calls: [
          {
            id: "call_ask",
            type: "function",
            function: { name: "ask_user_questions", arguments: JSON.stringify(sampleAsk()) },
          },
        ],
      },
      {
        role: "tool",
        tool_call_id: "call_ask",
        content: JSON.stringify({
          answers: [
            { question: sampleAsk().questions[0]?.question, selectedLabels: ["React"], customInput: null },
            {
              question: sampleAsk().questions[1]?.question,
              selectedLabels: ["Dark mode", "PDF export"],
              customInput: null,
            },
          ],
        }),
      },
    ]);

    // The stream reached the card while it ran, coalesced: far fewer PATCHes than deltas.
    const partial = patched.filter(
      (c) => cardText(c).includes("第1段。") && !cardText(c).includes("第50段。"),
    );
    expect(partial.length).toBeGreaterThan(0);
    expect(patched.length).toBeLessThan(deltas.length / 3);
    expect(cardText(final)).toContain("等待你的回答");
    expect(cardText(final)).toContain("回答了 2 个问题");
  });
});

describe("OpenAI agent", () => {
  it("sums every request's tokens (a sub-agent's too), and saves them and the model with the run (issue 30)", async () => {
    const model = await scriptedModel();
    const usage = (input: number, output: number, cached: number) => ({
      prompt_tokens: input,
      completion_tokens: output,
      prompt_tokens_details: { cached_tokens: cached },
    });
    model.script(
      {
        toolCalls: [{ id: "call_d", name: "delegate", arguments: { task: "查一下现在几点" } }],
        usage: usage(1000, 20, 0),
        model: "gpt-4o-2024-08-06",
      },
      { text: ["11:04"], usage: usage(200, 5, 100), model: "gpt-4o-2024-08-06" },
      { text: ["现在是 11:04。"], usage: usage(1300, 34, 1000), model: "gpt-4o-2024-08-06" },
    );
    const { core: test, session } = await core(model, { maxDelegateDepth: 1 });
    const run = await waitForRun(test, (await start(test, session.id, "几点了")).id);
    expect((await model.request(1)).body.stream_options).toEqual({ include_usage: true });
    const expected = { inputTokens: 2500, outputTokens: 59, cachedTokens: 1100, model: "gpt-4o-2024-08-06" };
    expect(run.usage).toEqual(expected);
    // Saved with the run: what the card and the session page read after the run ended.
    expect((await test.store.getRun(run.id))?.usage).toEqual(expected);
  });

  it("leaves a count unknown when one request did not report it, and names the model it asked for", async () => {
    const model = await scriptedModel();
    model.script(
      { toolCalls: [{ id: "call_time", name: "current_time", arguments: {} }], usage: { prompt_tokens: 50 } },
      // No usage chunk at all: this request's tokens are unknown, so the run's output total is too.
      { text: ["现在是 11:04。"] },
    );
    const { core: test, session } = await core(model);
    const run = await waitForRun(test, (await start(test, session.id, "几点了")).id);
    // The server named its model `scripted` in every chunk; the sums are unknown, never a partial number.
    expect(run.usage).toEqual({ model: "scripted" });
  });

  it("gives a sub-agent its task without ask_user_questions and returns its answer to the parent", async () => {
    const model = await scriptedModel();
    model.script(
      { toolCalls: [{ id: "call_d", name: "delegate", arguments: { task: "查一下现在几点" } }] },
      // The sub-agent tries to ask anyway; the dispatcher refuses.
      { toolCalls: [{ id: "call_sub_ask", name: "ask_user_questions", arguments: sampleAsk() }] },
      { toolCalls: [{ id: "call_time", name: "current_time", arguments: {} }] },
      { text: ["现在是 2025-01-02 11:04:05"] },
      { text: ["子代理说:现在是 11:04。"] },
    );
    const { core: test, session } = await core(model, { maxDelegateDepth: 1 });
    const run = await waitForRun(test, (await start(test, session.id, "几点了")).id);

    expect(run).toMatchObject({ status: "completed", text: "子代理说:现在是 11:04。" });
    const sub = (await model.request(2)).body;
    expect(sub.messages).toEqual([
      { role: "system", content: SUB_AGENT_PROMPT },
      { role: "user", content: "查一下现在几点" },
    ]);
    expect(toolNames(sub)).toEqual(["current_time"]);
    expect(toolNames((await model.request(1)).body)).toContain("ask_user_questions");
    for (const request of model.requests.slice(1, 4)) {
      expect(toolNames(request.body)).not.toContain("ask_user_questions");
    }
    expect(lastMessage((await model.request(3)).body)).toMatchObject({
      role: "tool",
      tool_call_id: "call_sub_ask",
      content: JSON.stringify({ error: "ask_user_questions is not available to sub-agents" }),
    });
    expect(lastMessage((await model.request(5)).body)).toMatchObject({
      role: "tool",
      tool_call_id: "call_d",
      content: expect.stringContaining("现在是 2025-01-02 11:04:05"),
    });
    expect(run.steps.map((step) => step.tool)).toEqual(["delegate"]);
    expect(test.registry.size).toBe(0);
  });

  it("hands invalid tool arguments back as the error, and the model's corrected call goes through", async () => {
    const model = await scriptedModel();
    const tooLong = sampleAsk();
    const bad = { ...tooLong, questions: [{ ...tooLong.questions[0]!, header: "A header far too long" }] };
    model.script(
      { toolCalls: [{ id: "call_1", name: "ask_user_questions", arguments: '{"questions": [' }] },
      { toolCalls: [{ id: "call_2", name: "ask_user_questions", arguments: bad }] },
      { toolCalls: [{ id: "call_3", name: "ask_user_questions", arguments: sampleAsk() }] },
      { text: ["好的,用 React。"] },
    );
    const { core: test, session } = await core(model);
    const run = await start(test, session.id);
    const [ask] = await until(() => {
      const asks = test.registry.getPendingForSession(session.id);
      return asks.length > 0 && asks;
    }, "the model's question");
    await test.registry.complete(
      session.id,
      ask!.requestId,
      ask!.questions.map((q) => ({
        question: q.question,
        selectedLabels: [q.options[1]!.label],
        customInput: null,
      })),
      { surface: "fake", userId: ALICE },
    );
    expect(await waitForRun(test, run.id)).toMatchObject({ status: "completed", text: "好的,用 React。" });

    const second = (await model.request(2)).body;
    // The model sees its own broken call as it wrote it, and what is wrong with it.
    expect(second.messages.at(-2)?.tool_calls?.[0]?.function.arguments).toBe('{"questions": [');
    expect(lastMessage(second)?.content).toBe(JSON.stringify({ error: "Invalid arguments: not valid JSON" }));
    const third = (await model.request(3)).body;
    expect(lastMessage(third)?.content).toContain("questions.0.header: header must be at most 12 characters");
    expect(lastMessage((await model.request(4)).body)?.content).toContain('"selectedLabels":["React"]');
    const steps = (await waitForRun(test, run.id)).steps;
    expect(steps.map((step) => [step.status, step.summary])).toEqual([
      ["failed", "提问参数无效：not valid JSON"],
      ["failed", "提问参数无效：questions.0.header: header must be at most 12 characters"],
      ["done", "回答了 2 个问题"],
    ]);
  });

  it("aborts the in-flight request at once on cancel, and the run is cancelled", async () => {
    const model = await scriptedModel();
    model.script({ text: ["正在思考"], hang: true });
    const { core: test, session } = await core(model);
    const run = await start(test, session.id);
    await model.request(1);
    await eventually(() => expect(test.runner.activeRun(session.id)?.text).toBe("正在思考"));
    expect(test.runner.cancel(session.id, ALICE)).toEqual({ ok: true });
    await model.clientClosed(1);
    expect(await waitForRun(test, run.id)).toMatchObject({ status: "cancelled" });
    expect(model.requests).toHaveLength(1); // not retried
  });

  it("resumes a run waiting on a question at that call: same request id, no repeated model request", async () => {
    const model = await scriptedModel();
    model.script(
      { toolCalls: [{ id: "call_time", name: "current_time", arguments: {} }] },
      {
        text: ["请选一下:"],
        toolCalls: [{ id: "call_ask", name: "ask_user_questions", arguments: sampleAsk() }],
      },
    );
    const first = await buildCore(openaiAgent(model));
    const session = await first.runner.ensureSession(privateSession(ALICE));
    const run = await start(first, session.id, "帮我选框架");
    const [asked] = await until(() => {
      const asks = first.registry.getPendingForSession(session.id);
      return asks.length > 0 && asks;
    }, "the model's question");
    await first.close(); // shutdown while the question waits: the ask stays pending, the turn beside history

    model.script({ text: ["继续完成了。"] });
    const { core: second } = await core(model, { dbFile: first.dbFile });
    // The waiting turn is not in history: a model is never sent a call without its result.
    expect(
      (await second.store.history(session.id)).filter((m) => m.toolName === "ask_user_questions"),
    ).toEqual([]);
    expect((await second.runner.recover()).map((view) => view.id)).toEqual([run.id]);
    await vi.waitFor(() => expect(second.registry.get(asked!.requestId)).toBeDefined());
    const answers = [
      { question: sampleAsk().questions[0]!.question, selectedLabels: ["React"], customInput: null },
    ];
    expect(
      await second.registry.complete(session.id, asked!.requestId, answers, {
        surface: "websocket",
        userId: ALICE,
      }),
    ).toEqual({ ok: true });
    expect(await waitForRun(second, run.id)).toMatchObject({ status: "completed", text: "继续完成了。" });

    // Request 3 is the one after the answer: the ask turn was not requested again.
    expect(model.requests).toHaveLength(3);
    const resumed = (await model.request(3)).body;
    expect(resumed.messages.map((message) => message.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
      "assistant",
      "tool",
    ]);
    const [, , , time, call, result] = resumed.messages;
    expect(JSON.parse(time?.content ?? "{}")).toMatchObject({ iso: "2025-01-02T03:04:05.000Z" });
    expect(call?.tool_calls?.map((c) => c.function.name)).toEqual(["ask_user_questions"]);
    expect(result?.tool_call_id).toBe(call?.tool_calls?.[0]?.id);
    expect(JSON.parse(result?.content ?? "{}")).toEqual({ answers });
    expect((await second.registry.state(asked!.requestId))?.status).toBe("answered");
  });

  it("sends the model its own tool-call ids after a restart, and makes OpenAI-shaped ones only when it gave none", async () => {
    const model = await scriptedModel();
    model.script(
      // No id: the bot makes one, in OpenAI's shape, and keeps it too.
      { toolCalls: [{ id: "", name: "current_time", arguments: {} }] },
      { toolCalls: [{ id: "call_ask_1", name: "ask_user_questions", arguments: sampleAsk() }] },
    );
    const first = await buildCore(openaiAgent(model));
    const session = await first.runner.ensureSession(privateSession(ALICE));
    const run = await start(first, session.id, "帮我选框架");
    const [asked] = await until(() => {
      const asks = first.registry.getPendingForSession(session.id);
      return asks.length > 0 && asks;
    }, "the model's question");
    await first.close();

    model.script({ text: ["好了。"] });
    const { core: second } = await core(model, { dbFile: first.dbFile });
    await second.runner.recover();
    await vi.waitFor(() => expect(second.registry.get(asked!.requestId)).toBeDefined());
    const answers = [
      { question: sampleAsk().questions[0]!.question, selectedLabels: ["React"], customInput: null },
    ];
    await second.registry.complete(session.id, asked!.requestId, answers, {
      surface: "websocket",
      userId: ALICE,
    });
    expect(await waitForRun(second, run.id)).toMatchObject({ status: "completed" });

    const before = (await model.request(2)).body.messages;
    const resumed = (await model.request(3)).body.messages;
    const [, , timeCall, timeResult, askCall, askResult] = resumed;
    expect(askCall?.tool_calls?.map((call) => call.id)).toEqual(["call_ask_1"]);
    expect(askResult?.tool_call_id).toBe("call_ask_1");
    const made = timeCall?.tool_calls?.[0]?.id ?? "";
    expect(made).toMatch(/^call_[A-Za-z0-9]{24}$/);
    expect(timeResult?.tool_call_id).toBe(made);
    // The id made for it is the one the model was sent before the restart, too.
    expect(before[2]?.tool_calls?.[0]?.id).toBe(made);
  });

  it("fails with an actionable reason on 401, without retrying", async () => {
    const model = await scriptedModel();
    model.script({ status: 401, body: { error: { message: "Incorrect API key", code: "invalid_api_key" } } });
    const { core: test, session } = await core(model);
    const run = await waitForRun(test, (await start(test, session.id)).id);
    expect(run).toMatchObject({ status: "failed", error: "模型服务返回 401：检查 OPENAI_API_KEY" });
    expect(model.requests).toHaveLength(1);
  });

  it("retries 429 (honouring Retry-After) and succeeds; gives up after the bound with 限流", async () => {
    const model = await scriptedModel();
    const limited = { status: 429, headers: { "retry-after": "0" } };
    model.script(limited, { text: ["好了"] });
    const { core: test, session } = await core(model, { maxRetries: 2 });
    expect(await waitForRun(test, (await start(test, session.id)).id)).toMatchObject({
      status: "completed",
      text: "好了",
    });
    expect(model.requests).toHaveLength(2);

    model.script(limited, limited, limited);
    const failed = await waitForRun(test, (await start(test, session.id)).id);
    expect(failed.status).toBe("failed");
    expect(failed.error).toContain("模型服务限流（429），重试 2 次后仍失败");
    // The same failure in every language, for the readers of a shared card.
    expect(failed.errorWords).toEqual({ zh_cn: failed.error, en_us: en.model.rateLimited(2) });
    expect(model.requests).toHaveLength(5);
  });

  it("gives up on a stream that goes silent, closing it, and says the service did not answer", async () => {
    const model = await scriptedModel();
    model.script({ text: ["开始"], hang: true }, { text: ["又开始"], hang: true });
    const { core: test, session } = await core(model, { maxRetries: 1, requestTimeoutMs: 300 });
    const run = await waitForRun(test, (await start(test, session.id)).id);
    expect(run.status).toBe("failed");
    expect(run.error).toContain("模型服务 1 秒内没有响应，重试 1 次后仍失败：检查 OPENAI_BASE_URL");
    await model.clientClosed(1);
    await model.clientClosed(2);
  });

  it("names OPENAI_BASE_URL when nothing listens there", async () => {
    const model = await scriptedModel();
    const baseUrl = model.baseUrl;
    await model.close();
    const { core: test, session } = await core({ ...model, baseUrl }, { maxRetries: 1 });
    const run = await waitForRun(test, (await start(test, session.id)).id);
    expect(run.status).toBe("failed");
    expect(run.error).toBe(`无法连接模型服务 ${baseUrl}（ECONNREFUSED）：检查 OPENAI_BASE_URL`);
  });
});
