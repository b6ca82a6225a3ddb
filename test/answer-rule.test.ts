import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkAnswers } from "../src/asks/answers.ts";
import type { AskQuestion } from "../src/asks/schema.ts";
import {
  canSubmit,
  collectAnswers,
  type PanelQuestion,
  type QuestionState,
  selectOption,
  typeOther,
} from "../src/web/public/question-panel.ts";

/**
 * The session page's panel and the server agree on what an answer is, because both run asks/answer-rule.ts
 * (the page through its esbuild bundle). Driven like a person would: random clicks and typing on the panel's
 * state, then the answers it would send go to the server's checkAnswers. fast-check prints the seed and the
 * shrunk path when this fails; `TEST_SEED=<seed>` replays that run (test/setup.ts).
 */

const question = (multiSelect: boolean, n: number): AskQuestion & PanelQuestion => ({
  question: `Q${n}${multiSelect ? " (multi)" : ""}?`,
  header: `H${n}`,
  multiSelect,
  options: ["甲", "乙", "丙"].map((label) => ({ label: `${label}${n}`, description: `${label} 的说明` })),
});

const step = fc.oneof(
  fc.record({
    kind: fc.constant("pick" as const),
    q: fc.nat(2),
    o: fc.nat(2),
    checked: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant("type" as const),
    q: fc.nat(2),
    text: fc.oneof(
      fc.constant(""),
      fc.constant("   "),
      fc.constant(" 自己的 "),
      fc.string({ maxLength: 1200 }),
    ),
  }),
);

describe("one answer rule for the session page and the server", () => {
  it("whatever a person clicks and types: Submit is enabled exactly when the server accepts what it sends, unchanged", () => {
    fc.assert(
      fc.property(
        fc.array(fc.boolean(), { minLength: 1, maxLength: 3 }),
        fc.array(step, { maxLength: 12 }),
        (kinds, steps) => {
          const questions = kinds.map((multi, n) => question(multi, n));
          let states: QuestionState[] = questions.map(() => ({ selected: [], other: "" }));
          for (const s of steps) {
            const q = questions[s.q];
            const state = states[s.q];
            if (!q || !state) continue;
            const next =
              s.kind === "pick"
                ? selectOption(q, state, q.options[s.o]?.label ?? "", s.checked)
                : typeOther(q, state, s.text);
            states = states.map((old, i) => (i === s.q ? next : old));
          }
          const sent = collectAnswers(questions, states);
          const checked = checkAnswers(questions, sent);
          expect(checked.ok).toBe(canSubmit(questions, states));
          // What the page sends is already in the rule's normal form: the server keeps it as it is.
          if (checked.ok) expect(checked.answers).toEqual(sent);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("single-select: 其他 text clears the choice on the page as on the server; blank text is none", () => {
    const [single] = [question(false, 0)];
    const picked = selectOption(single, { selected: [], other: "" }, "甲0");
    const typed = typeOther(single, picked, "  先灰度  ");
    expect(typed).toEqual({ selected: [], other: "  先灰度  " });
    expect(collectAnswers([single], [typed])).toEqual([
      { question: "Q0?", selectedLabels: [], customInput: "先灰度" },
    ]);
    expect(canSubmit([single], [{ selected: [], other: " \n " }])).toBe(false);
    expect(checkAnswers([single], [{ question: "Q0?", selectedLabels: [], customInput: " \n " }]).ok).toBe(
      false,
    );
  });
});
