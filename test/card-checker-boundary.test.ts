import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The emulator's card checker must not share rules with the builder it checks (issue 12): nothing under
 * card-checker/, nor the emulator modules that judge card content, may import from src/cards/.
 */

const root = path.resolve(import.meta.dirname, "..");
const CHECKER = path.join(root, "src/local/emulator/card-checker");
const JUDGES = ["content.ts", "callback-card.ts", "card-routes.ts", "message-routes.ts"].map((file) =>
  path.join(root, "src/local/emulator", file),
);
const CARDS = path.join(root, "src/cards");

function importsOf(file: string): string[] {
  const source = fs.readFileSync(file, "utf8");
  return [...source.matchAll(/\bfrom\s+["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g)].map(
    (match) => match[1] ?? match[2] ?? "",
  );
}

/** Relative imports, resolved to absolute paths; package imports are left out. */
function localImports(file: string): string[] {
  return importsOf(file)
    .filter((spec) => spec.startsWith("."))
    .map((spec) => path.resolve(path.dirname(file), spec));
}

describe("card checker boundary", () => {
  const checkerFiles = fs
    .readdirSync(CHECKER)
    .filter((file) => file.endsWith(".ts"))
    .map((file) => path.join(CHECKER, file));

  it("has the checker's files to look at", () => {
    expect(checkerFiles.length).toBeGreaterThanOrEqual(5);
  });

  it.each([...checkerFiles, ...JUDGES].map((file) => path.relative(root, file)))(
    "%s imports nothing from src/cards",
    (file) => {
      const offending = localImports(path.join(root, file)).filter((target) => target.startsWith(CARDS));
      expect(offending).toEqual([]);
    },
  );

  it("keeps the checker self-contained: its relative imports stay inside card-checker/", () => {
    const outside = checkerFiles.flatMap((file) =>
      localImports(file).filter((target) => !target.startsWith(CHECKER + path.sep)),
    );
    expect(outside).toEqual([]);
  });
});
