import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { browserBundle } from "../src/web/bundle.ts";

/** The pages' bundler (src/web/bundle.ts) on throwaway entries: what it builds, and what a bad build does. */
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function entry(files: Record<string, string>): URL {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-bundle-"));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
  return pathToFileURL(path.join(dir, "main.ts"));
}

describe("browserBundle", () => {
  it("turns a TypeScript entry and what it imports into one module with no imports and no types", async () => {
    const main = entry({
      "main.ts":
        'import { twice } from "./util.ts";\nconst n: number = twice(21);\ndocument.title = "答案 " + n;\n',
      "util.ts": "export function twice(value: number): number {\n  return value * 2;\n}\n",
    });
    const code = (await browserBundle(main)).toString("utf8");
    expect(code).toContain("function twice(value)");
    expect(code).toContain("答案"); // kept as UTF-8, not \\u escapes
    expect(code).not.toMatch(/\bimport\b|: number/);
  });

  it("rejects a source that does not compile, naming the problem, and builds it once it is fixed", async () => {
    const main = entry({ "main.ts": "const broken: number = ;\n" });
    await expect(browserBundle(main)).rejects.toThrow(/Unexpected ";"/);
    // A failed build is not kept: the next request builds again.
    fs.writeFileSync(new URL(main), "export const fixed = 1;\n");
    expect((await browserBundle(main)).toString("utf8")).toContain("fixed");
  });

  it("builds an entry once and serves every later request from that build", async () => {
    const main = entry({ "main.ts": "export const first = 1;\n" });
    const built = await browserBundle(main);
    fs.writeFileSync(new URL(main), "export const second = 2;\n");
    expect(await browserBundle(main)).toBe(built);
  });
});
