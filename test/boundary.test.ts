import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The pure core imports no I/O (DESIGN §2): the ask schema, the answer checks, and (when present)
 * the card builders. They must run anywhere — a test, a benchmark, a browser.
 */
const PURE = ["src/asks/schema.ts", "src/asks/answers.ts", "src/asks/answer-rule.ts", "src/strings.ts"];
const PURE_DIRS = ["src/cards"];
const FORBIDDEN = [
  /@larksuiteoapi/,
  /^express/,
  /^ws$/,
  /^pino/,
  /^node:/,
  /^fs$/,
  /^better-sqlite3/,
  /^http$/,
  /^net$/,
];

function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts"))
    .map((file) => path.join(dir, file));
}

function imports(file: string): string[] {
  const source = fs.readFileSync(file, "utf8");
  return [...source.matchAll(/\bfrom\s+["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g)].map(
    (m) => m[1] ?? m[2] ?? "",
  );
}

describe("pure core boundary", () => {
  const files = [...PURE, ...PURE_DIRS.flatMap(filesUnder)];

  it.each(files)("%s imports no SDK, server, socket, logger or file system", (file) => {
    const bad = imports(file).filter((spec) => FORBIDDEN.some((pattern) => pattern.test(spec)));
    expect(bad).toEqual([]);
  });

  it("the answer rule, bundled into the session page, imports nothing at all", () => {
    expect(imports("src/asks/answer-rule.ts")).toEqual([]);
  });

  it("only src/feishu imports the Lark SDK", () => {
    const offenders = filesUnder("src")
      .filter((file) => !file.startsWith(path.join("src", "feishu")))
      .filter((file) => imports(file).some((spec) => spec.startsWith("@larksuiteoapi")));
    expect(offenders).toEqual([]);
  });

  it("only main.ts and CLI entry points read process.env", () => {
    const offenders = filesUnder("src")
      .filter((file) => !["src/main.ts"].includes(file) && !file.startsWith(path.join("src", "cli")))
      .filter((file) => fs.readFileSync(file, "utf8").includes("process.env"));
    expect(offenders).toEqual([]);
  });
});
