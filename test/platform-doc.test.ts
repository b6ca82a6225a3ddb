import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { CARD_RULE_IDS, CARD_RULES } from "../src/local/emulator/card-checker/index.ts";

/**
 * docs/feishu-platform.md is what `feishu-platform §N` comments point at: every cited section must exist,
 * and its card rules table (§1.5) must list exactly the checker's rules, with the same basis.
 */

const root = path.resolve(import.meta.dirname, "..");
const doc = fs.readFileSync(path.join(root, "docs/feishu-platform.md"), "utf8");

/** Section numbers from headings like `## 2. Card callbacks` and `### 2.3 The answer`. */
const sections = new Set(
  [...doc.matchAll(/^#{2,3} (\d+(?:\.\d+)?)\.? /gm)].map((match) => match[1] ?? "").filter(Boolean),
);

function sourceFiles(dir: string): string[] {
  return fs
    .readdirSync(path.join(root, dir), { recursive: true, encoding: "utf8" })
    .filter((file) => /\.(ts|js)$/.test(file))
    .map((file) => path.join(dir, file));
}
const files = ["src", "test", "scripts", "bench"]
  .filter((dir) => fs.existsSync(path.join(root, dir)))
  .flatMap(sourceFiles);

/** Other documents cited with `§` (DESIGN.md, the seeds): their sections are not ours to check. */
const OTHER_DOC = /(DESIGN|seed|ask-user-questions[\w-]*|feishu-card-ask|README)[^§()]*$/;

/** Section numbers a file cites for this doc: explicit `feishu-platform §…`, and bare `§…` in files citing it. */
function citations(file: string): { file: string; section: string }[] {
  const source = fs.readFileSync(path.join(root, file), "utf8");
  if (!/feishu-platform/.test(source)) return [];
  const found: { file: string; section: string }[] = [];
  for (const match of source.matchAll(/§\s?(\d+(?:\.\d+)?)(?:\s*[–-]\s*§?(\d+(?:\.\d+)?))?/g)) {
    const before =
      source
        .slice(Math.max(0, (match.index ?? 0) - 60), match.index)
        .split("\n")
        .pop() ?? "";
    if (OTHER_DOC.test(before)) continue;
    for (const section of [match[1], match[2]]) if (section) found.push({ file, section });
  }
  return found;
}

describe("docs/feishu-platform.md", () => {
  const cited = files.flatMap(citations);

  it("is cited from the code (the check below would otherwise prove nothing)", () => {
    expect(cited.length).toBeGreaterThan(20);
  });

  it("has a section for every § the code cites", () => {
    const missing = cited
      .filter(({ section }) => !sections.has(section))
      .map(({ file, section }) => `${file}: §${section}`);
    expect(missing).toEqual([]);
  });

  it("points each rule at files and functions that exist (the table's last column)", () => {
    const table = doc.slice(doc.indexOf("### 1.5"), doc.indexOf("### 1.6"));
    const checker = path.join(root, "src/local/emulator/card-checker");
    const wrong: string[] = [];
    for (const row of table.matchAll(/^\| `[a-z0-9-]+`.*\|([^|]+)\|\s*$/gm)) {
      const cell = row[1] ?? "";
      const files = [...cell.matchAll(/([\w-]+\.ts)/g)].map((m) => m[1] ?? "");
      const sources = files.map((file) => {
        const inChecker = path.join(checker, file);
        const where = fs.existsSync(inChecker) ? inChecker : path.join(root, "src/local/emulator", file);
        if (!fs.existsSync(where)) wrong.push(`${file} does not exist`);
        return fs.existsSync(where) ? fs.readFileSync(where, "utf8") : "";
      });
      for (const name of [...cell.matchAll(/`(\w+)`/g)].map((m) => m[1] ?? ""))
        if (!sources.some((source) => source.includes(name)))
          wrong.push(`${name} is in none of ${files.join(", ")}`);
    }
    expect(wrong).toEqual([]);
  });

  it("keeps a titled Long connection section for the long-connection notes", () => {
    expect(doc).toMatch(/^## 8\. Long connection$/m);
  });

  it("lists every checker rule in the §1.5 table with its basis, and no rule the checker lacks", () => {
    const table = doc.slice(doc.indexOf("### 1.5"), doc.indexOf("### 1.6"));
    const rows = [...table.matchAll(/^\| `([a-z0-9-]+)`[^|]*\| [^|]+\| (\w+)\s+\|/gm)].map((m) => [
      m[1],
      m[2],
    ]);
    expect(Object.fromEntries(rows)).toEqual(
      Object.fromEntries(CARD_RULE_IDS.map((rule) => [rule, CARD_RULES[rule].basis])),
    );
  });
});
