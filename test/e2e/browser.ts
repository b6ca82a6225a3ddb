import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";

/** Debian's chromium, found on PATH; never a browser downloaded by a test tool. */
export function chromiumPath(): string {
  return execFileSync("which", ["chromium"], { encoding: "utf8" }).trim();
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    args: [
      "--no-sandbox",
      "--headless",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
    ],
  });
}

export const ARTIFACTS = path.resolve(import.meta.dirname, "..", "..", "test-artifacts");

/** Saves a screenshot of the page (or one element) under test-artifacts/ and returns its path. */
export async function screenshot(page: Page, name: string, selector?: string): Promise<string> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, `${name}.png`);
  if (selector) await page.locator(selector).first().screenshot({ path: file });
  else await page.screenshot({ path: file, fullPage: true });
  return file;
}
