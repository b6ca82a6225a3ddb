import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkAnswers } from "../../src/asks/answers.ts";
import { AskRegistry } from "../../src/asks/registry.ts";
import { ASK_TOOL_NAME, type AskInput, parseAskInput } from "../../src/asks/schema.ts";
import { mapFormValue } from "../../src/cards/form-value.ts";
import { ToolDispatcher } from "../../src/harness/dispatcher.ts";
import { createLogger } from "../../src/logger.ts";
import { strings } from "../../src/strings/index.ts";
import { type ErrorCode, parseClientFrame } from "../../src/ws/protocol.ts";
import { privateSession } from "../helpers/core.ts";
import { answersModelArb, answerViolations, expectedAnswers } from "./helpers/answers-model.ts";
import { askInputArb, junk, questionsArb } from "./helpers/arbitraries.ts";
import { startCallbackFuzzTarget } from "./helpers/callback-target.ts";
import { PROPERTY_RUNS, record, timeoutMs, until } from "./helpers/env.ts";
import { expectedFormMapping, formModelArb } from "./helpers/form-model.ts";
import { ALICE, type Stack, startStack } from "./helpers/stack.ts";
import { webhookCaseArb, webhookRequest } from "./helpers/webhook-cases.ts";
import { startWsFuzzTarget, type WsFuzzTarget } from "./helpers/ws-target.ts";

/**
 * Bad input, property-based (fast-check): the answer mapper (card form and WebSocket answers), the
 * tool-argument schema, WebSocket frames, webhook bodies and card-callback payloads. For each: no exception
 * escapes, every rejection says what is wrong, nothing is completed by a malformed input.
 * PROPERTY_RUNS cases per property: a few hundred in CI, 10,000 with RELIABILITY_LONG=1.
 */

const runs = { numRuns: PROPERTY_RUNS };
/** Live targets keep state between cases, so a failure is reported as found, not shrunk against a moved target. */
const liveRuns = { numRuns: PROPERTY_RUNS, endOnFailure: true };
const LONG_TEST_MS = timeoutMs(60_000, 600_000);

describe("the answer mapper (card form_value → answers)", () => {
  it("maps every generated form value exactly as its model says, and never throws", () => {
    const outcomes = { answered: 0, unanswered: 0 };
    fc.assert(
      fc.property(formModelArb, (model) => {
        const result = mapFormValue(
          model.questions,
          model.formValue,
          model.name?.match(/^(ask\d+)_submit$/)?.[1],
        );
        const expected = expectedFormMapping(model);
        if (expected.ok) {
          outcomes.answered += 1;
          expect(result).toEqual({ ok: true, answers: expected.answers });
        } else {
          outcomes.unanswered += 1;
          // The rejection names the question and says what to do (DESIGN §6: the toast 请至少选择一项或填写其他).
          expect(result).toEqual({
            ok: false,
            reason: strings.needAnswer,
            questionIndex: expected.questionIndex,
          });
        }
      }),
      runs,
    );
    // A generator that only ever produced one outcome would prove little.
    expect(outcomes.answered).toBeGreaterThan(PROPERTY_RUNS / 20);
    expect(outcomes.unanswered).toBeGreaterThan(PROPERTY_RUNS / 20);
    record("bad-input: form_value model", { runs: PROPERTY_RUNS, ...outcomes });
  });

  it("never throws on anything at all, and whatever it accepts is a well-formed answer set", () => {
    fc.assert(
      fc.property(
        questionsArb,
        junk,
        fc.option(fc.string({ maxLength: 12 }), { nil: undefined }),
        (questions, value, name) => {
          const result = mapFormValue(questions, value, name);
          if (result.ok) expect(answerViolations(questions, result.answers)).toEqual([]);
          else {
            expect(result.reason).toBe(strings.needAnswer);
            expect(result.questionIndex).toBeGreaterThanOrEqual(0);
            expect(result.questionIndex).toBeLessThan(questions.length);
          }
        },
      ),
      runs,
    );
  });
});

describe("the answer mapper (WebSocket answers → answers)", () => {
  it("checks every generated answer list exactly as its model says, naming the bad answer", () => {
    const outcomes = { accepted: 0, rejected: 0 };
    fc.assert(
      fc.property(answersModelArb, (model) => {
        const result = checkAnswers(model.questions, model.raw);
        const expected = expectedAnswers(model);
        if (expected.ok) {
          outcomes.accepted += 1;
          expect(result).toEqual({ ok: true, answers: expected.answers });
          return;
        }
        outcomes.rejected += 1;
        expect(result.ok).toBe(false);
        if (result.ok) return;
        // A clear message: which answer (or the list itself) and what is wrong with it.
        expect(result.error.length).toBeGreaterThan(15);
        expect(result.error).toMatch(
          expected.index === "list"
            ? /^answers must /
            : expected.empty
              ? new RegExp(`^第 ${expected.index + 1} 题「.*」：${strings.needAnswer}$`, "s")
              : new RegExp(`^answers\\.${expected.index}`),
        );
      }),
      runs,
    );
    expect(outcomes.accepted).toBeGreaterThan(PROPERTY_RUNS / 20);
    expect(outcomes.rejected).toBeGreaterThan(PROPERTY_RUNS / 20);
    record("bad-input: websocket answers model", { runs: PROPERTY_RUNS, ...outcomes });
  });

  it("never throws on anything at all, and whatever it accepts is a well-formed answer set", () => {
    fc.assert(
      fc.property(questionsArb, fc.oneof(junk, fc.array(junk, { maxLength: 5 })), (questions, raw) => {
        const result = checkAnswers(questions, raw);
        if (result.ok) expect(answerViolations(questions, result.answers)).toEqual([]);
        else expect(result.error).toMatch(/^answers|^第 \d 题「/);
      }),
      runs,
    );
  });
});

// ---------------------------------------------------------------------------------------------------------

/** Ways to break a valid ask, each with the field the error must name (so the model knows what to fix). */
const MUTATIONS: { name: string; names: RegExp; apply: (input: AskInput) => unknown }[] = [
  { name: "no questions", names: /questions/, apply: (i) => ({ ...i, questions: [] }) },
  {
    name: "five questions",
    names: /questions/,
    apply: (i) => ({
      ...i,
      questions: [0, 1, 2, 3, 4].map((n) => ({ ...i.questions[0], question: `q${n}?` })),
    }),
  },
  {
    name: "questions not a list",
    names: /questions/,
    apply: (i) => ({ ...i, questions: { 0: i.questions[0] } }),
  },
  {
    name: "a 13-character header",
    names: /questions\.0\.header/,
    apply: (i) => withQuestion(i, { header: "x".repeat(13) }),
  },
  { name: "a blank header", names: /questions\.0\.header/, apply: (i) => withQuestion(i, { header: "   " }) },
  {
    name: "one option",
    names: /questions\.0\.options/,
    apply: (i) => withQuestion(i, { options: i.questions[0]?.options.slice(0, 1) }),
  },
  {
    name: "five options",
    names: /questions\.0\.options/,
    apply: (i) =>
      withQuestion(i, { options: [0, 1, 2, 3, 4].map((n) => ({ label: `o${n}`, description: "d" })) }),
  },
  {
    name: "a label twice",
    names: /questions\.0\.options\.1\.label/,
    apply: (i) => {
      const [first] = i.questions[0]?.options ?? [];
      return withQuestion(i, { options: [first, { ...first }] });
    },
  },
  {
    name: "a question twice",
    names: /questions\.1\.question/,
    apply: (i) => ({ ...i, questions: [i.questions[0], i.questions[0]] }),
  },
  {
    name: "multiSelect missing",
    names: /multiSelect/,
    apply: (i) => withQuestion(i, { multiSelect: undefined }),
  },
  {
    name: "multiSelect a string",
    names: /multiSelect/,
    apply: (i) => withQuestion(i, { multiSelect: "yes" }),
  },
  {
    name: "an unknown question field",
    names: /questions\.0: unknown field/,
    apply: (i) => withQuestion(i, { allowOther: true }),
  },
  {
    name: "an unknown top-level field",
    names: /unknown field\(s\) extra/,
    apply: (i) => ({ ...i, extra: 1 }),
  },
  {
    name: "a blank question",
    names: /questions\.0\.question/,
    apply: (i) => withQuestion(i, { question: " \n " }),
  },
  {
    name: "a 501-character question",
    names: /questions\.0\.question/,
    apply: (i) => withQuestion(i, { question: "?".repeat(501) }),
  },
  {
    name: "a numeric label",
    names: /questions\.0\.options\.0\.label/,
    apply: (i) => withOption(i, { label: 7 }),
  },
  {
    name: "an empty description",
    names: /questions\.0\.options\.0\.description/,
    apply: (i) => withOption(i, { description: "" }),
  },
  {
    name: "a 4001-character preview",
    names: /questions\.0\.options\.0\.preview/,
    apply: (i) => withOption(i, { preview: "x".repeat(4001) }),
  },
  { name: "metadata a list", names: /metadata/, apply: (i) => ({ ...i, metadata: [1, 2] }) },
  { name: "metadata a string", names: /metadata/, apply: (i) => ({ ...i, metadata: "{}" }) },
];

function withQuestion(input: AskInput, patch: Record<string, unknown>): unknown {
  const [first, ...rest] = input.questions;
  return { ...input, questions: [{ ...first, ...patch }, ...rest] };
}

function withOption(input: AskInput, patch: Record<string, unknown>): unknown {
  const [first, ...rest] = input.questions;
  const [option, ...others] = first?.options ?? [];
  return { ...input, questions: [{ ...first, options: [{ ...option, ...patch }, ...others] }, ...rest] };
}

describe("the tool-argument schema (ask_user_questions)", () => {
  it("accepts every valid generated ask, as a value and as the model's JSON text, unchanged", () => {
    fc.assert(
      fc.property(askInputArb, (input) => {
        expect(parseAskInput(input)).toEqual({ ok: true, value: input });
        // Through JSON, as a model sends it (JSON has no -0 or undefined: compare with what JSON keeps).
        expect(parseAskInput(JSON.stringify(input))).toEqual({
          ok: true,
          value: JSON.parse(JSON.stringify(input)),
        });
      }),
      runs,
    );
  });

  it("refuses every broken ask with an error that names the field to fix", () => {
    const seen = new Map<string, number>();
    fc.assert(
      fc.property(askInputArb, fc.constantFrom(...MUTATIONS), fc.boolean(), (input, mutation, asText) => {
        const broken = mutation.apply(input);
        const result = parseAskInput(asText ? JSON.stringify(broken) : broken);
        seen.set(mutation.name, (seen.get(mutation.name) ?? 0) + 1);
        expect(result.ok, `${mutation.name} was accepted`).toBe(false);
        if (!result.ok) {
          expect(result.error).toMatch(/^Invalid arguments: /);
          expect(result.error, mutation.name).toMatch(mutation.names);
        }
      }),
      runs,
    );
    expect(seen.size).toBe(MUTATIONS.length);
  });

  it("never throws on anything, including text that is not JSON, and always says why", () => {
    fc.assert(
      fc.property(fc.oneof(junk, fc.string(), fc.json(), fc.string({ unit: "binary" })), (raw) => {
        const result = parseAskInput(raw);
        if (!result.ok) expect(result.error).toMatch(/^Invalid arguments: .{4,}/s);
      }),
      runs,
    );
  });

  it("answers every malformed call through the dispatcher with a tool result, and registers nothing", async () => {
    const registry = new AskRegistry({
      timeoutMs: 60_000,
      now: Date.now,
      newId: randomUUID,
      onListenerError: (error) => {
        throw error;
      },
    });
    const dispatcher = new ToolDispatcher({
      registry,
      tools: [],
      surfaces: [{ name: "always", canReach: () => true }],
      logger: createLogger({ level: "silent" }),
    });
    const ctx = {
      session: privateSession(),
      runId: "run-1",
      senderId: "ou_a",
      signal: new AbortController().signal,
    };
    const malformed = fc.oneof(
      junk,
      fc.string(),
      fc.tuple(askInputArb, fc.constantFrom(...MUTATIONS)).map(([input, mutation]) => mutation.apply(input)),
    );
    await fc.assert(
      fc.asyncProperty(malformed, async (args) => {
        fc.pre(!parseAskInput(args).ok);
        // A valid call would wait for an answer; a malformed one must come back at once.
        const result = await Promise.race([
          dispatcher.dispatch(ASK_TOOL_NAME, args, ctx).then((done) => done.content),
          new Promise<string>((resolve) => setImmediate(() => resolve("still waiting"))),
        ]);
        expect(JSON.parse(result)).toEqual({ error: expect.stringMatching(/^Invalid arguments: /) });
        expect(registry.size).toBe(0);
      }),
      runs,
    );
  });
});

// ---------------------------------------------------------------------------------------------------------

const ERROR_CODES: ErrorCode[] = [
  "bad_frame",
  "frame_too_large",
  "unknown_type",
  "forbidden",
  "not_found",
  "invalid_answers",
  "stale_request",
  "not_running",
];

describe("WebSocket frames", () => {
  it("parses any text into a frame or an error with a known code and a message, never throwing", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string({ unit: "binary" }),
          fc.json(),
          fc.jsonValue().map((v) => JSON.stringify({ type: "subscribe", sessionId: v })),
        ),
        (text) => {
          const parsed = parseClientFrame(text);
          if (!parsed.ok) {
            expect(ERROR_CODES).toContain(parsed.code);
            expect(parsed.message.length).toBeGreaterThan(5);
          }
        },
      ),
      runs,
    );
  });

  describe("on a live hub with a question waiting", () => {
    let target: WsFuzzTarget;
    beforeAll(async () => {
      target = await startWsFuzzTarget();
    });
    afterAll(async () => {
      await target?.stop();
    });

    it(
      "answers every frame, refuses every malformed one with a clear error, and completes the ask only with valid answers",
      async () => {
        const started = performance.now();
        const outcomes = { frames: 0, errors: 0, completed: 0 };
        await fc.assert(
          fc.asyncProperty(target.frameArb, async (frame) => {
            const verdict = await target.send(frame);
            outcomes.frames += 1;
            outcomes.errors += verdict.errors;
            if (verdict.completed) outcomes.completed += 1;
          }),
          liveRuns,
        );
        expect(outcomes.completed).toBeGreaterThan(0);
        record("bad-input: websocket frames on a live hub", {
          runs: PROPERTY_RUNS,
          ...outcomes,
          durationMs: Math.round(performance.now() - started),
        });
      },
      LONG_TEST_MS,
    );
  });
});

// ---------------------------------------------------------------------------------------------------------

describe("webhook bodies", () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ askPing: false });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it(
    "answers every generated body with 200, 400 or 401 and a reason, never 5xx, and starts or completes nothing",
    async () => {
      const { messageId } = await stack.say({ chatType: "p2p", senderOpenId: ALICE, text: "帮我部署" });
      await stack.progressCard(messageId);
      const sessionId = stack.privateSessionId(ALICE);
      const ask = await until(() => stack.core.registry.getPendingForSession(sessionId)[0], "the question");
      const runsBefore = countRuns(stack);
      const statuses = new Map<number, number>();
      const started = performance.now();
      await fc.assert(
        fc.asyncProperty(webhookCaseArb, async (testCase) => {
          const { body, headers } = webhookRequest(testCase, stack.emulator.clock.now());
          const response = await fetch(stack.hookUrl, { method: "POST", headers, body });
          const text = await response.text();
          const context = `${testCase.kind} → ${response.status} ${text.slice(0, 300)}`;
          statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
          expect([200, 400, 401], context).toContain(response.status);
          const parsed: unknown = JSON.parse(text);
          if (response.status === 200) {
            expect(typeof parsed === "object" && parsed !== null && !Array.isArray(parsed), context).toBe(
              true,
            );
          } else {
            expect(parsed, context).toEqual({
              error: { code: expect.any(String), message: expect.any(String) },
            });
            expect((parsed as { error: { message: string } }).error.message.length, context).toBeGreaterThan(
              10,
            );
          }
          // What must hold whatever the body was: an unsigned or unreadable request is 401/400, not handled.
          if (testCase.kind === "unsigned") expect(response.status, context).toBe(401);
          if (testCase.kind === "signed-raw" || testCase.kind === "bad-encrypt")
            expect(response.status, context).toBe(400);
          if (testCase.kind === "envelope") expect(response.status, context).toBe(200);
          expect(stack.core.registry.get(ask.requestId), context).toBeDefined();
        }),
        liveRuns,
      );
      await stack.channel.idle();
      expect(countRuns(stack)).toBe(runsBefore);
      expect(stack.core.registry.get(ask.requestId)).toBeDefined();
      expect(stack.errors()).toEqual([]);
      record("bad-input: webhook bodies", {
        runs: PROPERTY_RUNS,
        statuses: Object.fromEntries(statuses),
        durationMs: Math.round(performance.now() - started),
      });
    },
    LONG_TEST_MS,
  );

  it("refuses a body over 1 MiB with 413 and a reason, and still serves the next request", async () => {
    const { body, headers } = webhookRequest(
      { kind: "signed-raw", body: "x".repeat(1024 * 1024 + 1), contentType: "application/json" },
      stack.emulator.clock.now(),
    );
    const response = await fetch(stack.hookUrl, { method: "POST", headers, body });
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({
      error: { code: "INVALID_INPUT", message: "Request body is over 1 MiB" },
    });
    const challenge = await stack.deliver(stack.emulator.urlVerification("still-here"));
    expect(challenge).toMatchObject({ status: 200, body: { challenge: "still-here" } });
  });
});

function countRuns(stack: Stack): number {
  return (stack.db.prepare("SELECT count(*) AS n FROM runs").get() as { n: number }).n;
}

describe("card-callback payloads", () => {
  it(
    "answers every generated callback with a known toast and completes the question only for its sender's full answer",
    async () => {
      const target = await startCallbackFuzzTarget();
      try {
        const toasts = new Map<string, number>();
        let completed = 0;
        const started = performance.now();
        await fc.assert(
          fc.asyncProperty(target.caseArb, async (testCase) => {
            const outcome = await target.send(testCase);
            toasts.set(outcome.toast, (toasts.get(outcome.toast) ?? 0) + 1);
            if (outcome.completed) completed += 1;
          }),
          liveRuns,
        );
        expect(completed).toBeGreaterThan(0);
        expect(toasts.get(strings.feishu.onlyAnswererUnnamed)).toBeGreaterThan(0);
        await target.stack.channel.idle();
        expect(target.stack.errors()).toEqual([]);
        record("bad-input: card callbacks", {
          runs: PROPERTY_RUNS,
          completed,
          toasts: Object.fromEntries(toasts),
          durationMs: Math.round(performance.now() - started),
        });
      } finally {
        await target.stop();
      }
    },
    LONG_TEST_MS,
  );
});
