import fs from "node:fs";

/**
 * `node --import tsx bench/median.ts run1.txt run2.txt run3.txt`: the same benchmark output saved from several
 * runs, printed once with every figure as its median and the spread (`8,883 ms (8,561–9,120)`), so that a
 * recorded figure is not one run's luck on a shared machine. Tables are matched by title and position, rows
 * by their text columns; each run's `run:` line is listed first. A cell that is not a number is kept when the
 * runs agree and joined with ` / ` when they do not.
 */

interface Table {
  title: string;
  lines: string[];
}

function tablesOf(text: string): { runs: string[]; tables: Table[] } {
  const lines = text.split("\n");
  const runs = lines.filter((line) => line.startsWith("run: "));
  const tables: Table[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    if (!lines[i]?.startsWith("|") || lines[i - 1]?.startsWith("|")) continue;
    let end = i;
    while (lines[end]?.startsWith("|")) end += 1;
    const title = [...lines.slice(0, i)].reverse().find((line) => line.trim() !== "") ?? "";
    tables.push({ title, lines: lines.slice(i, end) });
  }
  return { runs, tables };
}

const cells = (line: string) =>
  line
    .slice(1, -1)
    .split("|")
    .map((cell) => cell.trim());

/** A cell's value for ordering: `1,234` 1234, `8.6 s` 8600, `2.0 KiB` 2048, `14.2×` 14.2; NaN when not one. */
export function cellValue(cell: string): number {
  const match = /^(≥ )?([\d,]+(?:\.\d+)?)\s*(ms|s|B|KiB|MiB|×|\/s)?$/.exec(cell);
  if (!match) return Number.NaN;
  const n = Number(match[2]?.replaceAll(",", ""));
  const scale: Record<string, number> = { s: 1000, KiB: 1024, MiB: 1024 * 1024 };
  return n * (scale[match[3] ?? ""] ?? 1);
}

export function medianCell(values: readonly string[]): string {
  const numbers = values.map(cellValue);
  if (numbers.some(Number.isNaN)) {
    const distinct = [...new Set(values)];
    return distinct.join(" / ");
  }
  const order = values.map((text, i) => ({ text, n: numbers[i] ?? 0 })).sort((a, b) => a.n - b.n);
  const median = order[Math.floor((order.length - 1) / 2)]?.text ?? "";
  const low = order[0]?.text ?? "";
  const high = order[order.length - 1]?.text ?? "";
  return low === high ? median : `${median} (${low}–${high})`;
}

function main(files: string[]): void {
  if (files.length < 2) {
    console.error("usage: node --import tsx bench/median.ts run1.txt run2.txt [run3.txt …]");
    process.exit(2);
  }
  const outputs = files.map((file) => tablesOf(fs.readFileSync(file, "utf8")));
  for (const output of outputs) for (const run of output.runs) console.log(run);
  const first = outputs[0]?.tables ?? [];
  for (const [t, table] of first.entries()) {
    const others = outputs.map((o) => o.tables[t]);
    if (others.some((other) => other?.title !== table.title || other.lines.length !== table.lines.length)) {
      console.log(`\n${table.title}\n\n(runs differ in this table's shape; not merged)`);
      continue;
    }
    console.log(`\n${table.title} — median of ${files.length} runs (spread)\n`);
    for (const [l, line] of table.lines.entries()) {
      if (l === 1) {
        console.log(line);
        continue;
      }
      const rows = others.map((other) => cells(other?.lines[l] ?? ""));
      const merged = cells(line).map((_, c) => medianCell(rows.map((row) => row[c] ?? "")));
      console.log(`| ${merged.join(" | ")} |`);
    }
  }
}

if (process.argv[1]?.endsWith("median.ts")) main(process.argv.slice(2));
