import type { Card, CardNode } from "./model.ts";

/**
 * One table budget per card, counted across all of its markdown in reading order. Pure.
 *
 * The docs allow 4 tables per markdown component (富文本 §表格) and 5 per card (FAQ 发送卡片 Q2), but the
 * vendor's own plugin measured that a card with 4 or more already fails with 11310 and keeps 3
 * (larksuite/openclaw-lark `card-error.ts`; docs/feishu-platform.md §1.7). Counting per component let a
 * preview panel, where several previews share one block, carry 6. Tables past the budget are shown as code
 * blocks, their rows intact, as the vendor does: the reader still sees the data, the card still sends.
 */

export const MAX_CARD_TABLES = 3;

/** A table's delimiter row under its header: `| --- | :-: |`, with at least one pipe. */
const TABLE_DELIMITER = /^ {0,3}\|?(?: *:?-+:? *\|)+ *(?::?-+:? *)?$|^ {0,3}\| *:?-+:? *$/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;
/** Quote markers (`> `) before a line's text. */
const PREFIX = /^ {0,3}(?:> ?)+/;

/** The card with every markdown table past the first `max` turned into a code block. */
export function budgetTables(card: Card, max = MAX_CARD_TABLES): Card {
  const budget = { left: max };
  return { ...card, body: { ...card.body, elements: card.body.elements.map((node) => visit(node, budget)) } };
}

function visit(node: CardNode, budget: { left: number }): CardNode {
  switch (node.tag) {
    case "markdown":
      return { ...node, content: defuseTables(node.content, budget) };
    case "form":
    case "collapsible_panel":
      return { ...node, elements: node.elements.map((child) => visit(child, budget)) } as CardNode;
    case "column_set":
      return {
        ...node,
        columns: node.columns.map((column) => ({
          ...column,
          elements: column.elements.map((child) => visit(child, budget)),
        })),
      };
    default:
      return node;
  }
}

/** Keeps tables while `budget.left` lasts; wraps each later one (header, delimiter, rows) in a fence. */
export function defuseTables(markdown: string, budget: { left: number }): string {
  const lines = markdown.split("\n");
  const out: string[] = [];
  let fence: string | undefined;
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i] ?? "";
    const marker = FENCE.exec(line)?.[1];
    if (fence) {
      if (marker && marker[0] === fence[0] && marker.length >= fence.length && line.trim() === marker)
        fence = undefined;
      out.push(line);
      continue;
    }
    if (marker) {
      fence = marker;
      out.push(line);
      continue;
    }
    // A table may sit in a quote: its rows share the quote markers, and so must its fence.
    const prefix = PREFIX.exec(line)?.[0] ?? "";
    const next = lines[i + 1];
    const rowOf = (row: string | undefined) =>
      row?.startsWith(prefix) ? row.slice(prefix.length) : undefined;
    const delimiter = rowOf(next);
    if (delimiter === undefined || !line.includes("|") || !TABLE_DELIMITER.test(delimiter)) {
      out.push(line);
      continue;
    }
    let end = i + 2;
    for (let row = rowOf(lines[end]); row?.includes("|") && row.trim() !== ""; row = rowOf(lines[end]))
      end += 1;
    const table = lines.slice(i, end);
    if (budget.left > 0) {
      budget.left -= 1;
      out.push(...table);
    } else {
      const longest = Math.max(
        2,
        ...table.map((row) => Math.max(0, ...(row.match(/`+/g) ?? []).map((run) => run.length))),
      );
      const ticks = `${prefix}${"`".repeat(longest + 1)}`;
      out.push(ticks, ...table, ticks);
    }
    i = end - 1;
  }
  return out.join("\n");
}
