import MarkdownIt from "markdown-it";
import { describe, expect, it } from "vitest";
import type { Card } from "../src/cards/model.ts";
import { buildProgressCard, type CardAsk } from "../src/cards/progress.ts";
import type { ProgressView } from "../src/cards/progress-view.ts";
import { checkCard } from "../src/local/emulator/card-checker/index.ts";

/**
 * One table budget per card (issue 23): the vendor measured that 4 or more markdown tables in one card fail
 * with 11310, so a card carries 3, counted across all of its markdown, and shows the rest as code blocks.
 * Tables are counted by a CommonMark reader (markdown-it, GFM tables), not by the builder's own rule.
 */

const reader = new MarkdownIt();

function markdownTexts(card: Card, locale?: string): string[] {
  const texts: string[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === "object") {
      const record = node as Record<string, unknown>;
      if (record.tag === "markdown" && typeof record.content === "string") {
        const i18n = record.i18n_content as Record<string, string> | undefined;
        texts.push((locale && i18n?.[locale]) || record.content);
      }
      Object.values(record).forEach(walk);
    }
  };
  walk(card.body);
  return texts;
}

const tablesIn = (card: Card, locale?: string) =>
  markdownTexts(card, locale)
    .flatMap((text) => reader.parse(text, {}))
    .filter((token) => token.type === "table_open").length;

const table = (i: number) => `| 指标${i} | 值 |\n|---|---:|\n| p${i} | ${i}00 |`;

const view: ProgressView = {
  sessionId: "feishu-cli_demo-private-ou_alice",
  runId: "run_0001",
  senderId: "ou_alice",
  title: "对比方案",
  status: "completed",
  steps: [],
  text: [1, 2, 3, 4, 5].map(table).join("\n\n"),
  startedAt: 0,
  endedAt: 60_000,
};

describe("the card's table budget", () => {
  it("keeps three tables of a long answer and shows the rest as code, rows intact", () => {
    const card = buildProgressCard(view, []);
    expect(tablesIn(card)).toBe(3);
    expect(tablesIn(card, "en_us")).toBe(3);
    const text = markdownTexts(card).join("\n");
    expect(text).toContain("```\n| 指标4 | 值 |\n|---|---:|\n| p4 | 400 |\n```");
    expect(text).toContain("| p5 | 500 |");
    expect(checkCard(card)).toMatchObject({ ok: true });
  });

  it("finds tables inside quotes too, and fences them inside the same quote", () => {
    const quoted = (i: number) => table(i).replace(/^/gm, "> ");
    const card = buildProgressCard({ ...view, text: [1, 2, 3, 4].map(quoted).join("\n\n") }, []);
    expect(tablesIn(card)).toBe(3);
    expect(markdownTexts(card).join("\n")).toContain(`> \`\`\`\n${quoted(4)}\n> \`\`\``);
  });

  it("counts the preview panel's previews together, and after the text above them", () => {
    const ask: CardAsk = {
      requestId: "req_1",
      questions: [
        {
          question: "选哪个方案？",
          header: "方案",
          multiSelect: false,
          options: ["甲", "乙", "丙"].map((label, i) => ({
            label,
            description: `方案${label}`,
            preview: `${table(i * 2)}\n\n${table(i * 2 + 1)}\n\n\`\`\`sh\nnpm start\n\`\`\``,
          })),
        },
      ],
    };
    const running = { ...view, status: "running" as const, text: table(9), endedAt: undefined };
    const card = buildProgressCard(running, [ask]);
    expect(tablesIn(card)).toBe(3);
    // The text above the form keeps its table; the panel gets what is left.
    expect(markdownTexts(card).find((text) => text.includes("p9"))).toBe(table(9));
    expect(checkCard(card)).toMatchObject({ ok: true });
  });
});
