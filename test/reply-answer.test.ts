import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkAnswers } from "../src/asks/answers.ts";
import { DEMO_QUESTIONS } from "../src/asks/demo-questions.ts";
import { parseReplyAnswer } from "../src/asks/reply-answer.ts";
import type { AskQuestion } from "../src/asks/schema.ts";

/**
 * A text reply to a card as an answer (issue 30): numbers, labels, lists, `N:` keys, lines, and 其他 text.
 * The properties check that whatever the parser makes is an answer the server's own check accepts.
 */

const deploy: AskQuestion = { ...DEMO_QUESTIONS.deploy, options: [...DEMO_QUESTIONS.deploy.options] };
const features: AskQuestion = { ...DEMO_QUESTIONS.features, options: [...DEMO_QUESTIONS.features.options] };
const single: AskQuestion = {
  question: "Where to?",
  header: "Target",
  multiSelect: false,
  options: [
    { label: "staging", description: "s" },
    { label: "prod", description: "p" },
  ],
};

const picked = (questions: AskQuestion[], text: string) => {
  const result = parseReplyAnswer(questions, text);
  return result.ok
    ? result.answers.map((a) => ({ labels: a.selectedLabels, custom: a.customInput }))
    : result;
};

describe("parseReplyAnswer", () => {
  it("picks an option by its number, in either width", () => {
    expect(picked([single], "2")).toEqual([{ labels: ["prod"], custom: null }]);
    expect(picked([single], " ２ ")).toEqual([{ labels: ["prod"], custom: null }]);
  });

  it("picks an option by its label in any case and width", () => {
    expect(picked([single], "PROD")).toEqual([{ labels: ["prod"], custom: null }]);
    expect(picked([single], "ｐｒｏｄ")).toEqual([{ labels: ["prod"], custom: null }]);
    expect(picked([deploy], "docker(推荐)")).toEqual([{ labels: ["Docker（推荐）"], custom: null }]);
  });

  it("takes several choices of a multi-select, separated by commas, 、 or spaces", () => {
    expect(picked([features], "1、3")).toEqual([{ labels: ["暗色模式", "导出 PDF"], custom: null }]);
    expect(picked([features], "1, 2")).toEqual([{ labels: ["暗色模式", "多语言"], custom: null }]);
    expect(picked([features], "暗色模式，导出 pdf")).toEqual([
      { labels: ["暗色模式", "导出 PDF"], custom: null },
    ]);
    expect(picked([features], "3 1")).toEqual([{ labels: ["导出 PDF", "暗色模式"], custom: null }]);
  });

  it("puts anything else into 其他, as typed", () => {
    expect(picked([single], "部署到香港节点")).toEqual([{ labels: [], custom: "部署到香港节点" }]);
    expect(picked([single], "1, 2")).toEqual([{ labels: [], custom: "1, 2" }]);
    expect(picked([single], "7")).toEqual([{ labels: [], custom: "7" }]);
    expect(picked([features], "1 和 RTL")).toEqual([{ labels: [], custom: "1 和 RTL" }]);
  });

  it("answers several questions by number (either colon) or by line", () => {
    const both = [
      { labels: ["Kubernetes"], custom: null },
      { labels: ["暗色模式"], custom: null },
    ];
    expect(picked([deploy, features], "1:2 2:暗色模式")).toEqual(both);
    expect(picked([deploy, features], "1：2，2：1")).toEqual(both);
    expect(picked([deploy, features], "2:1\n1:kubernetes")).toEqual(both);
    expect(picked([deploy, features], "2\n暗色模式")).toEqual(both);
    expect(picked([deploy, features], "1:先放着 2:1、3")).toEqual([
      { labels: [], custom: "先放着" },
      { labels: ["暗色模式", "导出 PDF"], custom: null },
    ]);
  });

  it("names the first question a reply leaves unanswered", () => {
    expect(parseReplyAnswer([deploy, features], "2")).toEqual({ ok: false, questionIndex: 1 });
    expect(parseReplyAnswer([deploy, features], "2:1")).toEqual({ ok: false, questionIndex: 0 });
    expect(parseReplyAnswer([deploy, features], "1:")).toEqual({ ok: false, questionIndex: 0 });
    expect(parseReplyAnswer([single], "   ")).toEqual({ ok: false, questionIndex: 0 });
  });

  it("reads a key out of range or given twice as text for the first question", () => {
    expect(picked([deploy, features], "3:1")).toEqual({ ok: false, questionIndex: 1 });
    const twice = parseReplyAnswer([deploy, features], "1:1 1:2");
    expect(twice).toEqual({ ok: false, questionIndex: 1 });
  });
});

const label = fc.stringMatching(/^[A-Za-z\u4e00-\u4e20][A-Za-z0-9 \u4e00-\u4e20]{0,8}$/);
const questionArb = fc
  .record({
    multiSelect: fc.boolean(),
    labels: fc.uniqueArray(label, {
      minLength: 2,
      maxLength: 4,
      selector: (l) => l.normalize("NFKC").toLowerCase().replace(/\s+/g, " ").trim(),
    }),
  })
  .map(
    ({ multiSelect, labels }): AskQuestion => ({
      question: "Q?",
      header: "H",
      multiSelect,
      options: labels.map((l) => ({ label: l.trim(), description: "d" })),
    }),
  );

describe("parseReplyAnswer, for any question", () => {
  it("selects option k by its number (half or full width) and by its label in upper case", () => {
    fc.assert(
      fc.property(questionArb, fc.nat(3), fc.boolean(), (question, k, fullWidth) => {
        const index = k % question.options.length;
        const option = question.options[index]!;
        // A label that reads as a number names that option instead; the number form is the unambiguous one.
        const digits = String(index + 1);
        const typed = fullWidth ? String.fromCharCode(0xff10 + index + 1) : digits;
        const byNumber = parseReplyAnswer([question], typed);
        expect(byNumber.ok && byNumber.answers[0]?.selectedLabels).toEqual([option.label]);
        if (!/^[0-9]+$/.test(option.label.trim())) {
          const byLabel = parseReplyAnswer([question], option.label.toUpperCase());
          expect(byLabel.ok && byLabel.answers[0]?.selectedLabels).toEqual([option.label]);
        }
      }),
    );
  });

  it("makes only answers the server's own check accepts, and never throws", () => {
    fc.assert(
      fc.property(
        fc.array(questionArb, { minLength: 1, maxLength: 3 }),
        fc.oneof(fc.string(), fc.stringMatching(/^([1-4][:：][^\n]{0,6}[ ,、\n]){0,3}$/)),
        (raw, text) => {
          const questions = raw.map((q, i) => ({ ...q, question: `Q${i}?` }));
          const result = parseReplyAnswer(questions, text);
          if (!result.ok) {
            expect(result.questionIndex).toBeGreaterThanOrEqual(0);
            expect(result.questionIndex).toBeLessThan(questions.length);
            return;
          }
          expect(checkAnswers(questions, result.answers)).toEqual({ ok: true, answers: result.answers });
        },
      ),
    );
  });
});
