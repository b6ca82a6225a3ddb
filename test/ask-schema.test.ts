import { describe, expect, it } from "vitest";
import { checkAnswers } from "../src/asks/answers.ts";
import { ASK_TOOL_DESCRIPTION, askToolJsonSchema, parseAskInput } from "../src/asks/schema.ts";
import { askInvalid, askRefused, askResult, toolResultOf } from "../src/asks/summary.ts";
import { en } from "../src/strings/index.ts";
import { sampleAsk } from "./fixtures.ts";

function withQuestion(patch: Record<string, unknown>) {
  const input = sampleAsk();
  return { ...input, questions: [{ ...input.questions[0], ...patch }] };
}

describe("ask_user_questions input", () => {
  it("accepts a valid ask, as an object or as the JSON string a model sends", () => {
    expect(parseAskInput(sampleAsk())).toEqual({ ok: true, value: sampleAsk() });
    expect(parseAskInput(JSON.stringify(sampleAsk())).ok).toBe(true);
  });

  it.each([
    ["no questions", { questions: [] }, "questions: questions must have at least 1 item"],
    [
      "five questions",
      {
        questions: Array.from({ length: 5 }, (_, i) => ({ ...sampleAsk().questions[0], question: `q${i}?` })),
      },
      "at most 4",
    ],
    [
      "a 13-character header",
      withQuestion({ header: "1234567890123" }),
      "questions.0.header: header must be at most 12 characters",
    ],
    ["one option", withQuestion({ options: [{ label: "a", description: "b" }] }), "at least 2"],
    [
      "five options",
      withQuestion({ options: ["a", "b", "c", "d", "e"].map((label) => ({ label, description: label })) }),
      "at most 4",
    ],
    [
      "no multiSelect",
      withQuestion({ multiSelect: undefined }),
      "questions.0.multiSelect: multiSelect is required",
    ],
    [
      "a string multiSelect",
      withQuestion({ multiSelect: "yes" }),
      "multiSelect is required and must be true or false",
    ],
    [
      "a duplicate label",
      withQuestion({
        options: [
          { label: "a", description: "1" },
          { label: "a", description: "2" },
        ],
      }),
      "option labels must be unique",
    ],
    [
      "an option without description",
      withQuestion({ options: [{ label: "a" }, { label: "b", description: "2" }] }),
      "questions.0.options.0.description",
    ],
    ["an unknown field", { ...sampleAsk(), extra: true }, "unknown field(s) extra"],
    ["metadata that is not an object", { ...sampleAsk(), metadata: "x" }, "metadata must be an object"],
    ["not an object", 42, "expected object"],
  ])("rejects %s and names what to fix", (_name, input, message) => {
    const result = parseAskInput(input);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toContain(message);
  });

  it("rejects two questions with the same text", () => {
    const input = sampleAsk();
    const first = input.questions[0]!;
    const result = parseAskInput({ questions: [first, { ...first, header: "Again" }] });
    expect(result).toEqual({
      ok: false,
      error: "Invalid arguments: questions.1.question: question texts must be unique within one call",
      problem: "questions.1.question: question texts must be unique within one call",
    });
  });

  it("refuses look-alike labels: a variation selector outside an emoji, Cyrillic and Greek homoglyphs, 0 for O", () => {
    const options = (a: string, b: string) =>
      withQuestion({
        options: [
          { label: a, description: "x" },
          { label: b, description: "y" },
        ],
      });
    const refused = (input: unknown) => {
      const parsed = parseAskInput(input);
      return parsed.ok ? "accepted" : parsed.error;
    };
    expect(refused(options("prod", "prod\uFE0F"))).toBe(
      "Invalid arguments: questions.0.options.1.label: label contains a variation selector outside an emoji (U+FE0F); remove it",
    );
    expect(refused(options("prod", "\u0440rod"))).toBe(
      'Invalid arguments: questions.0.options.1.label: option labels must not look alike within a question ("\u0440rod" looks like "prod")',
    );
    expect(refused(options("Alpha", "\u0391lpha"))).toMatch(/must not look alike/);
    expect(refused(options("BOOT", "B00T"))).toMatch(/must not look alike/);
    expect(refused(options("prod", "\uFF50\uFF52\uFF4F\uFF44"))).toMatch(/must not look alike/); // fullwidth, by NFKC
    expect(refused(options("a\uFE00", "b"))).toMatch(/variation selector/);
    expect(refused(withQuestion({ question: "Deploy\uFE0E now?" }))).toMatch(
      /questions.0.question: question contains a variation selector/,
    );
    // Emoji keep their selectors; distinct words in any script stay distinct.
    expect(refused(options("\u2764\uFE0F ship it", "1\uFE0F\u20E3 first"))).toBe("accepted");
    expect(refused(options("prod", "Prod"))).toBe("accepted");
    expect(refused(options("\u043F\u0440\u043E\u0434", "prod"))).toBe("accepted"); // "прод" does not look like "prod"
    const two = sampleAsk();
    const first = two.questions[0];
    if (!first) throw new Error("fixture");
    expect(
      refused({ questions: [first, { ...first, question: first.question.replace("o", "\u043E") }] }),
    ).toMatch(/questions.1.question: question texts must not look alike within one call/);
  });

  it("says so when the arguments are not JSON", () => {
    expect(parseAskInput("{not json")).toEqual({
      ok: false,
      error: "Invalid arguments: not valid JSON",
      problem: "not valid JSON",
    });
  });

  it("describes the tool with the seed's usage notes and a JSON schema with the limits", () => {
    expect(ASK_TOOL_DESCRIPTION).toContain('Users will always be able to select "Other"');
    expect(ASK_TOOL_DESCRIPTION).toContain("(Recommended)");
    const schema = JSON.stringify(askToolJsonSchema());
    expect(schema).toContain('"maxItems":4');
    expect(schema).toContain('"maxLength":12');
    expect(schema).toContain('"required":["question","header","options","multiSelect"]');
  });
});

describe("checkAnswers", () => {
  const questions = sampleAsk().questions;

  it("normalises answers: question copied, blank custom text dropped, order of the ask kept", () => {
    const result = checkAnswers(questions, [
      { question: questions[1]!.question, selectedLabels: ["i18n", "Dark mode"], customInput: "  " },
      { question: questions[0]!.question, selectedLabels: ["React"] },
    ]);
    expect(result).toEqual({
      ok: true,
      answers: [
        { question: questions[0]!.question, selectedLabels: ["React"], customInput: null },
        { question: questions[1]!.question, selectedLabels: ["i18n", "Dark mode"], customInput: null },
      ],
    });
  });

  it("lets custom text win over a choice in a single-select question, and keeps both in a multi-select", () => {
    const result = checkAnswers(questions, [
      { question: questions[0]!.question, selectedLabels: ["React"], customInput: "Svelte" },
      { question: questions[1]!.question, selectedLabels: ["i18n"], customInput: "RTL" },
    ]);
    expect(result.ok && result.answers.map((a) => [a.selectedLabels, a.customInput])).toEqual([
      [[], "Svelte"],
      [["i18n"], "RTL"],
    ]);
  });

  it.each([
    ["not an array", {}, "answers must be an array"],
    ["too few answers", [], "answers must have 2 item(s)"],
    [
      "an unknown label",
      [{ selectedLabels: ["Angular"] }, { selectedLabels: ["i18n"] }],
      '"Angular" is not an option',
    ],
    [
      "two labels for a single-select",
      [{ selectedLabels: ["React", "Vue 3 (Recommended)"] }, { selectedLabels: ["i18n"] }],
      "allows one choice",
    ],
    [
      "an empty answer",
      [{ selectedLabels: ["React"] }, { selectedLabels: [], customInput: "" }],
      "第 2 题「Features」：请至少选择一项或填写其他",
    ],
    [
      "labels of the wrong type",
      [{ selectedLabels: [1] }, { selectedLabels: ["i18n"] }],
      "must be an array of strings",
    ],
    [
      "custom input of the wrong type",
      [{ selectedLabels: ["React"], customInput: 5 }, { selectedLabels: ["i18n"] }],
      "customInput must be a string or null",
    ],
    [
      "an answer that is not an object",
      ["React", { selectedLabels: ["i18n"] }],
      "answers.0 must be an object",
    ],
  ])("rejects %s", (_name, raw, message) => {
    const result = checkAnswers(questions, raw);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toContain(message);
  });
});

describe("tool results and their summaries", () => {
  const asked = { surface: "feishu", userId: "ou_a" } as const;

  it("summarises answers as 回答了 N 个问题", () => {
    const answers = [0, 1].map((i) => ({ question: `q${i}`, selectedLabels: ["A"], customInput: null }));
    expect(askResult({ kind: "answered", answers, ...asked })).toEqual({
      content: JSON.stringify({ answers }),
      isError: false,
      summary: "回答了 2 个问题",
      // The same line in every language, for a shared card's readers.
      summaryWords: { zh_cn: "回答了 2 个问题", en_us: en.answeredSummary(2) },
    });
  });

  it.each([
    [askResult({ kind: "timeout" }), "User did not respond within timeout", "用户未在规定时间内回答"],
    [askResult({ kind: "cancelled", reason: "Session cancelled" }), "Session cancelled", "提问已取消"],
    [askRefused("当前通道无法向用户提问"), "当前通道无法向用户提问", "当前通道无法向用户提问"],
    [
      askInvalid(parseInvalid({ questions: [{ question: "?", header: "x".repeat(13), options: [] }] })),
      expect.stringMatching(/^Invalid arguments: questions\.0\./),
      expect.stringMatching(/^提问参数无效：questions\.0\./),
    ],
  ])("makes a readable line of an ask that ended without answers (%#)", (result, error, summary) => {
    expect(result.isError).toBe(true);
    expect(JSON.parse(result.content)).toEqual({ error });
    expect(result.summary).toEqual(summary);
    expect(result.summaryWords?.zh_cn).toEqual(summary);
    expect(result.summaryWords?.en_us).not.toMatch(/\p{Script=Han}/u);
  });

  it("reads other tools' output once: their summary, their error, or their first words", () => {
    expect(toolResultOf(JSON.stringify({ summary: "42 files" }))).toMatchObject({
      isError: false,
      summary: "42 files",
    });
    expect(toolResultOf(JSON.stringify({ error: "disk\nfull" }))).toMatchObject({
      isError: true,
      summary: "失败：disk full",
    });
    expect(toolResultOf("x".repeat(500))).toMatchObject({ isError: false, summary: expect.any(String) });
    expect(toolResultOf("x".repeat(500)).summary).toHaveLength(120);
    // A prefix is not a verdict: only an `error` field makes a failure.
    expect(toolResultOf('{"note":"Invalid arguments: none"}').isError).toBe(false);
  });
});

function parseInvalid(raw: unknown): { error: string; problem: string } {
  const parsed = parseAskInput(raw);
  if (parsed.ok) throw new Error("expected the ask to be refused");
  return parsed;
}
