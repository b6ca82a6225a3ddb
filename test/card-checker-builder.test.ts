import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { buildProgressCard, type CardAsk } from "../src/cards/progress.ts";
import type { ProgressView } from "../src/cards/progress-view.ts";
import { buildQueuedCard } from "../src/cards/queued.ts";
import { checkCard } from "../src/local/emulator/card-checker/index.ts";
import { cleanText, questionsArb } from "./reliability/helpers/arbitraries.ts";

/**
 * The builder's cards, for generated tasks, questions and queued messages, pass the emulator's
 * independent checker: the goldens are a handful of states, this is the space between them.
 * Stays within what the builder promises today: up to three pending asks (six are issue 12's
 * "many parallel asks"), and agent text from realistic markdown with at most 4 tables (hostile markdown
 * and table limits are the sanitiser's).
 */

const STATUSES = ["running", "recovering", "completed", "failed", "cancelled"] as const;

/** Markdown an agent writes: lists, code, tables, https links, emphasis. */
const agentMarkdown = fc
  .array(
    fc.constantFrom(
      "## 结果\n",
      "- 第一项\n- 第二项\n",
      "1. 构建\n2. 部署\n",
      "```ts\nconst url = 'https://a.com/中文';\n```\n",
      "| 环境 | 状态 |\n| --- | --- |\n| prod | ok |\n",
      "详情见 [文档](https://open.feishu.cn/document) 。\n",
      "**加粗** _斜体_ `code`\n",
      "> 引用\n",
    ),
    { maxLength: 6 },
  )
  // More than 4 tables is refused (11310): limiting tables in agent text is the sanitiser's job, not this test's.
  .filter((parts) => parts.filter((part) => part.startsWith("|")).length <= 4)
  .map((parts) => parts.join("\n"));

const viewArb: fc.Arbitrary<ProgressView> = fc.record({
  sessionId: fc.constant("feishu-cli_demo-private-ou_alice"),
  runId: fc.constant("run_1"),
  senderId: fc.constant("ou_alice"),
  title: cleanText(200, 30),
  status: fc.constantFrom(...STATUSES),
  steps: fc.array(
    fc.record(
      {
        title: cleanText(80, 20),
        status: fc.constantFrom("running", "done", "failed"),
        summary: cleanText(200, 30),
      },
      { requiredKeys: ["title", "status"] },
    ),
    { maxLength: 12 },
  ),
  text: agentMarkdown,
  error: cleanText(300, 30),
  startedAt: fc.constant(1_000),
  endedAt: fc.constant(61_000),
  detailsUrl: fc.constant("http://127.0.0.1:3000/s/feishu-cli_demo-private-ou_alice"),
});

const asksArb: fc.Arbitrary<CardAsk[]> = fc
  .array(questionsArb, { maxLength: 3 })
  .map((sets) => sets.map((questions, i) => ({ requestId: `req_${i}`, questions })));

function verdictOf(card: unknown): string {
  const verdict = checkCard(card);
  return verdict.ok ? "ok" : verdict.summary;
}

describe("builder cards and the independent checker", () => {
  it("every progress card passes, with up to three pending asks", () => {
    fc.assert(
      fc.property(viewArb, asksArb, (view, asks) => {
        expect(verdictOf(buildProgressCard(view, asks))).toBe("ok");
      }),
      { numRuns: 150 },
    );
  });

  it("every queued card passes, whatever the quoted message says", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "grapheme", minLength: 1, maxLength: 400 }),
        fc.integer({ min: 1, max: 99 }),
        fc.constantFrom("queued", "started", "withdrawn"),
        (text, position, state) => {
          const card = buildQueuedCard({
            sessionId: "s",
            queueId: "q1",
            senderId: "ou_alice",
            text,
            position,
            state,
          });
          expect(verdictOf(card)).toBe("ok");
        },
      ),
      { numRuns: 150 },
    );
  });
});
