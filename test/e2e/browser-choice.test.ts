import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";
import { afterEach, describe, expect, it } from "vitest";
import { chooseBrowser } from "./browser.ts";

/**
 * The e2e tests' browser on a bare machine: Debian's chromium when PATH has one, otherwise the Chromium
 * inside the `@sparticuz/chromium` devDependency — never a download, never a `which` that throws.
 */

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-browser-choice-"));
  dirs.push(dir);
  return dir;
}

describe("chooseBrowser", () => {
  it("prefers an executable chromium on PATH", async () => {
    const bin = tempDir();
    const fake = path.join(bin, "chromium");
    fs.writeFileSync(fake, "#!/bin/sh\n", { mode: 0o755 });
    const choice = await chooseBrowser({ PATH: [tempDir(), bin].join(path.delimiter) });
    expect(choice).toMatchObject({ source: "system", executablePath: fake });
  });

  it("skips a chromium on PATH that cannot be executed", async () => {
    const bin = tempDir();
    fs.writeFileSync(path.join(bin, "chromium"), "not a program", { mode: 0o644 });
    const choice = await chooseBrowser({ PATH: bin });
    expect(choice.source).toBe("npm");
  });

  it("falls back to the npm package's Chromium, which launches, survives a closed context and renders", async () => {
    const choice = await chooseBrowser({ PATH: tempDir() });
    expect(choice.source).toBe("npm");
    expect(choice.args).not.toContain("--single-process");
    expect(choice.args).toContain("--disable-background-networking");
    const browser = await chromium.launch({ executablePath: choice.executablePath, args: choice.args });
    try {
      for (const text of ["first", "second"]) {
        const context = await browser.newContext();
        const page = await context.newPage();
        await page.setContent(`<p>${text}</p>`);
        expect(await page.textContent("p")).toBe(text);
        await context.close();
      }
    } finally {
      await browser.close();
    }
  });
});
