import { describe, expect, it } from "vitest";
import type { AskQuestion } from "../src/asks/schema.ts";
import { parseActionValue } from "../src/cards/actions.ts";
import { mapFormValue, readDraft } from "../src/cards/form-value.ts";
import type { CardNode } from "../src/cards/model.ts";
import { buildProgressCard } from "../src/cards/progress.ts";
import type { ProgressView } from "../src/cards/progress-view.ts";
import { strings } from "../src/strings/index.ts";

const NEED_ANSWER = "请至少选择一项或填写其他";

const deploy: AskQuestion = {
  question: "新服务要用哪种方式部署?",
  header: "部署",
  multiSelect: false,
  options: [
    { label: "Docker (推荐)", description: "容器化部署", preview: "```\nFROM node:20\n```" },
    { label: "裸机", description: "直接跑在机器上" },
    { label: "Serverless", description: "按调用计费" },
  ],
};
const features: AskQuestion = {
  question: "需要同时开启哪些功能?",
  header: "功能",
  multiSelect: true,
  options: [
    { label: "暗色模式", description: "切换主题" },
    { label: "多语言", description: "i18n" },
    { label: "PDF 导出", description: "生成报表" },
    { label: "审计日志", description: "记录操作" },
  ],
};
const QUESTIONS: readonly AskQuestion[] = [deploy, features];

/** A form_value that answers both questions, to which a test adds or overrides fields. */
const answered = (patch: Record<string, unknown> = {}) => ({ ask0_q0: "0", ask0_q1: ["1"], ...patch });

function answersOf(formValue: unknown, formName?: string) {
  const result = mapFormValue(QUESTIONS, formValue, formName);
  if (!result.ok) throw new Error(`expected ok, got ${JSON.stringify(result)}`);
  return result.answers;
}

describe("mapFormValue", () => {
  describe("single-select", () => {
    it('maps an index string ("1") back to that label, with no custom text', () => {
      expect(answersOf(answered({ ask0_q0: "1" }))[0]).toEqual({
        question: deploy.question,
        selectedLabels: ["裸机"],
        customInput: null,
      });
    });

    it("lets non-blank custom text win and clear the choice", () => {
      expect(answersOf(answered({ ask0_q0: "1", ask0_c0: "先用 k8s 试试" }))[0]).toEqual({
        question: deploy.question,
        selectedLabels: [],
        customInput: "先用 k8s 试试",
      });
    });

    it("accepts custom text alone", () => {
      expect(answersOf({ ask0_c0: "都不要", ask0_q1: ["0"] })[0]).toEqual({
        question: deploy.question,
        selectedLabels: [],
        customInput: "都不要",
      });
    });

    it("ignores whitespace-only custom text and keeps the choice", () => {
      expect(answersOf(answered({ ask0_q0: "2", ask0_c0: "  \n\t \u3000 " }))[0]).toEqual({
        question: deploy.question,
        selectedLabels: ["Serverless"],
        customInput: null,
      });
    });

    it("keeps one label when a forged single-select sends several", () => {
      expect(answersOf(answered({ ask0_q0: ["2", "1"] }))[0]?.selectedLabels).toHaveLength(1);
    });
  });

  describe("multi-select", () => {
    it("maps index strings back to labels in option order, not in the order received", () => {
      expect(answersOf(answered({ ask0_q1: ["2", "0"] }))[1]).toEqual({
        question: features.question,
        selectedLabels: ["暗色模式", "PDF 导出"],
        customInput: null,
      });
    });

    it("keeps custom text alongside the choices", () => {
      expect(answersOf(answered({ ask0_q1: ["3"], ask0_c1: "还有 SSO" }))[1]).toEqual({
        question: features.question,
        selectedLabels: ["审计日志"],
        customInput: "还有 SSO",
      });
    });

    it("accepts custom text alone", () => {
      expect(answersOf(answered({ ask0_q1: [], ask0_c1: "都不要" }))[1]).toEqual({
        question: features.question,
        selectedLabels: [],
        customInput: "都不要",
      });
    });

    it("collapses duplicate choices", () => {
      expect(answersOf(answered({ ask0_q1: ["1", "1", "0", "1", "0"] }))[1]?.selectedLabels).toEqual([
        "暗色模式",
        "多语言",
      ]);
    });

    it("accepts a single string where an array was expected", () => {
      expect(answersOf(answered({ ask0_q1: "3" }))[1]?.selectedLabels).toEqual(["审计日志"]);
    });
  });

  it("copies each question's text from the original ask, one answer per question in order", () => {
    const answers = answersOf(answered());
    expect(answers.map((a) => a.question)).toEqual(QUESTIONS.map((q) => q.question));
  });

  describe("a question with neither a choice nor text", () => {
    const EMPTY: [string, unknown][] = [
      ["absent", undefined],
      ['""', ""],
      ["[]", []],
      ["null", null],
    ];

    it.each(EMPTY)("fails on the first question when its choice is %s", (_what, empty) => {
      const formValue: Record<string, unknown> = { ask0_q1: ["0"] };
      if (empty !== undefined) {
        formValue.ask0_q0 = empty;
        formValue.ask0_c0 = empty;
      }
      expect(mapFormValue(QUESTIONS, formValue, "ask0")).toEqual({
        ok: false,
        reason: NEED_ANSWER,
        questionIndex: 0,
      });
    });

    it.each(EMPTY)("fails on the second question when its choice is %s", (_what, empty) => {
      const formValue: Record<string, unknown> = { ask0_q0: "0" };
      if (empty !== undefined) {
        formValue.ask0_q1 = empty;
        formValue.ask0_c1 = empty;
      }
      expect(mapFormValue(QUESTIONS, formValue)).toEqual({
        ok: false,
        reason: NEED_ANSWER,
        questionIndex: 1,
      });
    });

    it("uses the reason from strings, which is the one DESIGN §6 names", () => {
      expect(strings.needAnswer).toBe(NEED_ANSWER);
    });
  });

  describe("bad input never throws and counts as empty", () => {
    it.each([
      ["an unknown index", "9"],
      ["an index one past the last option", "3"],
      ["a negative index", "-1"],
      ["a decimal", "1.0"],
      ["a padded index", " 1"],
      ["a non-numeric string", "Docker (推荐)"],
      ["a huge index", "99999999999999999999"],
      ["a number", 1],
      ["NaN", Number.NaN],
      ["a boolean", true],
      ["an object", { value: "1" }],
      ["a nested array", [["1"]]],
      ["an array of numbers", [0, 1]],
      ["an array of objects", [{ value: "0" }]],
    ])("a single-select choice that is %s", (_what, bad) => {
      const formValue = { ask0_q0: bad, ask0_q1: ["0"] };
      expect(() => mapFormValue(QUESTIONS, formValue, "ask0")).not.toThrow();
      expect(mapFormValue(QUESTIONS, formValue, "ask0")).toEqual({
        ok: false,
        reason: NEED_ANSWER,
        questionIndex: 0,
      });
    });

    it.each([
      ["an unknown index", ["7"]],
      ["negative and decimal indices", ["-0", "0.5", "1e0"]],
      ["numbers", [0, 2]],
      ["objects and nested arrays", [{}, ["0"], null]],
    ])("a multi-select choice that is %s", (_what, bad) => {
      const formValue = { ask0_q0: "0", ask0_q1: bad };
      expect(mapFormValue(QUESTIONS, formValue)).toEqual({
        ok: false,
        reason: NEED_ANSWER,
        questionIndex: 1,
      });
    });

    it("keeps the valid indices of a multi-select and drops the bad ones", () => {
      expect(answersOf(answered({ ask0_q1: ["x", "3", 1, "9", ["0"], "1"] }))[1]?.selectedLabels).toEqual([
        "多语言",
        "审计日志",
      ]);
    });

    it.each([
      ["a number", 42],
      ["an array", ["先用 k8s"]],
      ["an object", { text: "先用 k8s" }],
      ["a boolean", true],
    ])("custom text that is %s", (_what, bad) => {
      const result = mapFormValue(QUESTIONS, { ask0_c0: bad, ask0_q1: ["0"] });
      expect(result).toEqual({ ok: false, reason: NEED_ANSWER, questionIndex: 0 });
    });

    it.each([
      ["null", null],
      ["undefined", undefined],
      ["a string", '{"ask0_q0":"0","ask0_q1":["0"]}'],
      ["an array", [{ ask0_q0: "0" }]],
      ["a number", 7],
      ["a boolean", false],
    ])("a form_value that is %s", (_what, formValue) => {
      expect(() => mapFormValue(QUESTIONS, formValue)).not.toThrow();
      expect(mapFormValue(QUESTIONS, formValue, "ask0")).toEqual({
        ok: false,
        reason: NEED_ANSWER,
        questionIndex: 0,
      });
    });

    it("ignores extra unrelated fields and fields for questions that do not exist", () => {
      const formValue = answered({
        foo: "1",
        ask0_x0: "2",
        ask0_q0_extra: "2",
        Ask0_q0: "2",
        ask0_q7: ["3"],
        ask0_c7: "不相干",
        ask0_submit: "2",
        action: { value: "x" },
      });
      expect(answersOf(formValue, "ask0")).toEqual([
        { question: deploy.question, selectedLabels: ["Docker (推荐)"], customInput: null },
        { question: features.question, selectedLabels: ["多语言"], customInput: null },
      ]);
    });

    it("treats prototype-ish keys as plain unrelated fields and pollutes nothing", () => {
      const forged: unknown = JSON.parse(
        '{"__proto__":{"ask0_q0":"1","ask0_q1":["0"],"ask0_c0":"x"},"constructor":{"prototype":{"ask0_q0":"1"}},' +
          '"toString":"1","hasOwnProperty":"1","valueOf":["0"]}',
      );
      expect(Object.hasOwn(forged as object, "__proto__")).toBe(true);
      expect(() => mapFormValue(QUESTIONS, forged)).not.toThrow();
      expect(mapFormValue(QUESTIONS, forged)).toEqual({ ok: false, reason: NEED_ANSWER, questionIndex: 0 });
      const withAnswers: unknown = JSON.parse(
        '{"__proto__":{"ask0_q0":"2"},"constructor":"x","ask0_q0":"1","ask0_q1":["0"]}',
      );
      expect(answersOf(withAnswers)[0]?.selectedLabels).toEqual(["裸机"]);
      expect(({} as Record<string, unknown>).ask0_q0).toBeUndefined();
    });

    it("treats a form_value without a prototype like any other object", () => {
      const bare = Object.assign(Object.create(null) as Record<string, unknown>, answered());
      expect(answersOf(bare)[0]?.selectedLabels).toEqual(["Docker (推荐)"]);
    });
  });

  describe("which form's fields count", () => {
    it("ignores another form's fields when formName is given (ask1_q0 does not answer ask0)", () => {
      const otherForm = { ask1_q0: "1", ask1_q1: ["0"], ask1_c0: "x" };
      expect(mapFormValue(QUESTIONS, otherForm, "ask0")).toEqual({
        ok: false,
        reason: NEED_ANSWER,
        questionIndex: 0,
      });
    });

    it("takes the named form's fields when a forged value mixes two forms", () => {
      const mixed = { ask0_q0: "0", ask0_q1: ["0"], ask1_q0: "2", ask1_q1: ["3"] };
      expect(answersOf(mixed, "ask1").map((a) => a.selectedLabels)).toEqual([["Serverless"], ["审计日志"]]);
      expect(answersOf(mixed, "ask0").map((a) => a.selectedLabels)).toEqual([
        ["Docker (推荐)"],
        ["暗色模式"],
      ]);
    });

    it("accepts any form's fields when formName is absent (a re-rendered card shifted the indices)", () => {
      expect(answersOf({ ask1_q0: "1", ask1_q1: ["0", "2"], ask1_c1: "补充" })).toEqual([
        { question: deploy.question, selectedLabels: ["裸机"], customInput: null },
        { question: features.question, selectedLabels: ["暗色模式", "PDF 导出"], customInput: "补充" },
      ]);
    });
  });

  it("cuts custom text longer than 1000 characters to 1000", () => {
    const long = "字".repeat(1500);
    const custom = answersOf(answered({ ask0_c0: long }))[0]?.customInput ?? "";
    expect(custom).toBe("字".repeat(1000));
  });

  it("cuts long custom text by characters, never leaving half of a surrogate pair", () => {
    const custom = answersOf(answered({ ask0_c1: "😀".repeat(1500) }))[1]?.customInput ?? "";
    expect([...custom]).toHaveLength(1000);
    expect(custom).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
  });

  it("maps the field names of a card built by buildProgressCard back to answers", () => {
    const view: ProgressView = {
      sessionId: "s1",
      runId: "r1",
      senderId: "ou_a",
      title: "任务",
      status: "running",
      steps: [],
      startedAt: 0,
    };
    const card = buildProgressCard(view, [
      { requestId: "req-0", questions: [deploy] },
      { requestId: "req-1", questions: QUESTIONS },
    ]);
    // Both asks share one form (ask-form.ts askForms); the second ask's fields are the ask1_… ones.
    const form = card.body.elements.find((node) => node.tag === "form");
    if (form?.tag !== "form") throw new Error("expected the stacked form");
    const fields = form.elements.filter(
      (node): node is Extract<CardNode, { name: string; required: boolean }> =>
        (node.tag === "select_static" || node.tag === "multi_select_static" || node.tag === "input") &&
        node.name.startsWith("ask1_"),
    );
    // What Feishu sends for that form: the third option of the select, every option of the multi-select,
    // empty inputs.
    const formValue: Record<string, unknown> = {};
    for (const field of fields) {
      if (field.tag === "select_static") formValue[field.name] = field.options[2]?.value;
      if (field.tag === "multi_select_static") formValue[field.name] = field.options.map((o) => o.value);
      if (field.tag === "input") formValue[field.name] = "";
    }
    expect(mapFormValue(QUESTIONS, formValue, "ask1")).toEqual({
      ok: true,
      answers: [
        { question: deploy.question, selectedLabels: ["Serverless"], customInput: null },
        {
          question: features.question,
          selectedLabels: features.options.map((o) => o.label),
          customInput: null,
        },
      ],
    });
  });
});

// ---------------------------------------------------------------------------------------------------------
// A light fuzz: random form values, from a small seeded PRNG so a failure reproduces.
// ---------------------------------------------------------------------------------------------------------

/** mulberry32: a tiny deterministic PRNG returning floats in [0, 1). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function fuzzer(seed: number) {
  const random = prng(seed);
  const int = (n: number) => Math.floor(random() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)] as T;
  const KEYS = [
    "ask0_q0",
    "ask0_q1",
    "ask0_c0",
    "ask0_c1",
    "ask1_q0",
    "ask1_q1",
    "ask1_c0",
    "ask1_c1",
    "ask0_q2",
    "ask0_q10",
    "ask0_submit",
    "q0",
    "",
    "__proto__",
    "constructor",
    "toString",
  ];
  const scalar = (): unknown =>
    pick<() => unknown>([
      () => String(int(6)),
      () => String(int(200) - 100),
      () => `${int(4)}.${int(10)}`,
      () => " ".repeat(int(3)) + String(int(4)),
      () => "",
      () => "   \n ",
      () => "字".repeat(int(1500)),
      () => "<at id=all></at>",
      () => int(5),
      () => Number.NaN,
      () => random() < 0.5,
      () => null,
      () => undefined,
      () => ({ value: String(int(4)) }),
    ])();
  const value = (depth = 0): unknown =>
    depth < 2 && random() < 0.35 ? Array.from({ length: int(5) }, () => value(depth + 1)) : scalar();
  return (): { formValue: unknown; formName: string | undefined } => {
    const formName = pick([undefined, "ask0", "ask1", "ask9"]);
    if (random() < 0.05) return { formValue: value(), formName };
    const formValue: Record<string, unknown> = {};
    if (random() < 0.6) {
      // A plausible submit of one form, which the random keys below then disturb.
      const form = pick(["ask0", "ask1"]);
      formValue[`${form}_q0`] = String(int(4));
      formValue[`${form}_q1`] = Array.from({ length: int(5) }, () => String(int(5)));
      formValue[`${form}_c0`] = pick(["", " ", "先用 k8s", "字".repeat(1200)]);
      formValue[`${form}_c1`] = pick(["", "\n", "还有 SSO"]);
    }
    const count = int(6);
    for (let i = 0; i < count; i += 1) {
      // defineProperty so that "__proto__" becomes an own key, as JSON.parse would make it.
      Object.defineProperty(formValue, pick(KEYS), {
        value: value(),
        enumerable: true,
        configurable: true,
        writable: true,
      });
    }
    return { formValue, formName };
  };
}

/** What is wrong with a mapping result, as sentences; empty when it is well formed. */
function violations(result: ReturnType<typeof mapFormValue>): string[] {
  const out: string[] = [];
  if (!result.ok) {
    if (result.reason !== NEED_ANSWER) out.push(`reason ${result.reason}`);
    if (result.questionIndex !== 0 && result.questionIndex !== 1) out.push(`index ${result.questionIndex}`);
    return out;
  }
  if (result.answers.length !== QUESTIONS.length) out.push(`${result.answers.length} answers`);
  result.answers.forEach((answer, j) => {
    const question = QUESTIONS[j]!;
    const labels = question.options.map((o) => o.label);
    const order = answer.selectedLabels.map((label) => labels.indexOf(label));
    if (answer.question !== question.question) out.push(`answer ${j}: wrong question text`);
    if (answer.selectedLabels.length === 0 && answer.customInput === null) out.push(`answer ${j}: empty`);
    if (order.includes(-1)) out.push(`answer ${j}: a label that is not an option`);
    if (new Set(order).size !== order.length) out.push(`answer ${j}: a label twice`);
    if (order.some((index, k) => k > 0 && index < (order[k - 1] ?? -1)))
      out.push(`answer ${j}: out of order`);
    if (answer.customInput !== null && answer.customInput.trim() === "") out.push(`answer ${j}: blank text`);
    if (answer.customInput !== null && [...answer.customInput].length > 1000)
      out.push(`answer ${j}: text over 1000`);
    if (!question.multiSelect && answer.selectedLabels.length > 1) out.push(`answer ${j}: several labels`);
    if (!question.multiSelect && answer.customInput !== null && answer.selectedLabels.length > 0)
      out.push(`answer ${j}: text did not clear the choice`);
  });
  return out;
}

describe("mapFormValue under a light fuzz", () => {
  it("never throws on 2,000 random form values, and every success is a well-formed answer set", () => {
    const next = fuzzer(20261130);
    let successes = 0;
    let failures = 0;
    for (let round = 0; round < 2000; round += 1) {
      const { formValue, formName } = next();
      const context = () => JSON.stringify({ round, formName, formValue }).slice(0, 2000);
      let result: ReturnType<typeof mapFormValue>;
      try {
        result = mapFormValue(QUESTIONS, formValue, formName);
      } catch (error) {
        throw new Error(`threw on ${context()}: ${String(error)}`);
      }
      if (result.ok) successes += 1;
      else failures += 1;
      const wrong = violations(result);
      if (wrong.length > 0) expect(wrong, context()).toEqual([]);
    }
    // The generator must exercise both outcomes, or the checks above prove little.
    expect(successes).toBeGreaterThan(50);
    expect(failures).toBeGreaterThan(50);
  });

  it("has checks that catch a malformed answer set", () => {
    expect(violations({ ok: true, answers: [] })).toEqual(["0 answers"]);
    expect(
      violations({
        ok: true,
        answers: [
          { question: deploy.question, selectedLabels: ["裸机", "Docker (推荐)"], customInput: " " },
          { question: "?", selectedLabels: ["多语言", "多语言", "x"], customInput: null },
        ],
      }),
    ).toEqual([
      "answer 0: out of order",
      "answer 0: blank text",
      "answer 0: several labels",
      "answer 0: text did not clear the choice",
      "answer 1: wrong question text",
      "answer 1: a label that is not an option",
      "answer 1: a label twice",
      "answer 1: out of order",
    ]);
  });
});

// ---------------------------------------------------------------------------------------------------------
// parseActionValue: the value a card button carries, as it comes back in a callback.
// ---------------------------------------------------------------------------------------------------------

describe("parseActionValue", () => {
  const submitValue = {
    kind: "feishu_ask",
    act: "submit",
    sessionId: "s1",
    requestId: "req-1",
    sender: "ou_a",
  };

  it.each([
    ["feishu_ask submit", submitValue],
    ["progress cancel", { kind: "progress", act: "cancel", sessionId: "s1", runId: "run1", sender: "ou_a" }],
    ["progress retry", { kind: "progress", act: "retry", sessionId: "s1", runId: "run1", sender: "ou_a" }],
    ["queue promote", { kind: "queue", act: "promote", sessionId: "s1", queueId: "q1", sender: "ou_a" }],
    ["queue unqueue", { kind: "queue", act: "unqueue", sessionId: "s1", queueId: "q1", sender: "ou_a" }],
  ])("parses a %s value", (_what, value) => {
    expect(parseActionValue(value)).toEqual({ ok: true, value });
  });

  it("parses the values the progress card's own buttons carry", () => {
    const view: ProgressView = {
      sessionId: "s1",
      runId: "run1",
      senderId: "ou_a",
      title: "任务",
      status: "running",
      steps: [],
      startedAt: 0,
    };
    const card = buildProgressCard(view, [{ requestId: "req-1", questions: QUESTIONS }]);
    const values = JSON.stringify(card)
      .match(/"value":\{[^{}]*\}/g)
      ?.map((match) => JSON.parse(match.slice('"value":'.length)) as unknown);
    expect(values).toHaveLength(2);
    for (const value of values ?? []) expect(parseActionValue(value).ok).toBe(true);
  });

  it.each([
    ["an unknown kind", { ...submitValue, kind: "answer" }, /kind/],
    ["an unknown act", { ...submitValue, act: "approve" }, /act/],
    ["the value as a JSON string", JSON.stringify(submitValue), /unsupported action value/],
    ["an extra field", { ...submitValue, form: "ask0" }, /form/],
    ["a missing sender", { ...submitValue, sender: undefined }, /sender/],
    ["an empty sender", { ...submitValue, sender: "" }, /sender/],
    ["a numeric sessionId", { ...submitValue, sessionId: 1 }, /sessionId/],
    ["null", null, /unsupported action value/],
    ["undefined", undefined, /unsupported action value/],
    ["an array", [submitValue], /unsupported action value/],
    ["a number", 42, /unsupported action value/],
  ])("rejects %s with an error message, without throwing", (_what, value, pattern) => {
    expect(() => parseActionValue(value)).not.toThrow();
    const result = parseActionValue(value);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error).toMatch(/^unsupported action value/);
    expect(result.error).toMatch(pattern);
  });

  it("rejects a prototype-polluting value built by JSON.parse", () => {
    const forged: unknown = JSON.parse(
      '{"kind":"feishu_ask","act":"submit","sessionId":"s1","requestId":"r","sender":"ou_a","__proto__":{"x":1}}',
    );
    expect(() => parseActionValue(forged)).not.toThrow();
    expect(parseActionValue(forged).ok).toBe(false);
  });
});

describe("readDraft (what a submit that did not complete the ask carried)", () => {
  it("keeps the chosen indices and the 其他 texts of the submitted form, per question", () => {
    expect(
      readDraft(QUESTIONS, { ask0_q0: "2", ask0_c0: "先灰度", ask0_q1: ["3", "0"], ask0_c1: "" }, "ask0"),
    ).toEqual([
      { choices: [2], custom: "先灰度" },
      { choices: [0, 3], custom: "" },
    ]);
  });

  it("reads junk as empty: unknown indices, odd types, other forms' fields, over-long text cut to 1000", () => {
    const draft = readDraft(
      QUESTIONS,
      {
        ask0_q0: ["1", "2"],
        ask0_c0: 42,
        ask0_q1: ["9", 1, null, "01"],
        ask0_c1: "长".repeat(1200),
        ask1_q0: "0",
      },
      "ask0",
    );
    // A single-select keeps one choice even when a forged value sends two.
    expect(draft).toEqual([
      { choices: [1], custom: "" },
      // Read the way mapFormValue reads it: "01" is option 1, "9", 1 and null are nothing.
      { choices: [1], custom: "长".repeat(1000) },
    ]);
    expect(readDraft(QUESTIONS, "junk")).toEqual([
      { choices: [], custom: "" },
      { choices: [], custom: "" },
    ]);
  });
});
