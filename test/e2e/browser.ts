import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import sparticuz from "@sparticuz/chromium";
import { type Browser, chromium, type Page } from "playwright-core";
import { until } from "../helpers/wait.ts";

/**
 * Which browser the e2e tests drive. Never one downloaded by a test tool: Debian's chromium when the
 * machine has it (CI installs it), otherwise the headless Chromium that ships inside the
 * `@sparticuz/chromium` devDependency, so `npm install && npm test` works on a machine with only Node and npm.
 */
export interface BrowserChoice {
  source: "system" | "npm";
  executablePath: string;
  args: string[];
}

/** Flags both browsers get: nothing may reach the network on its own or wait for a first-run dialog. */
const QUIET = ["--disable-background-networking", "--disable-component-update", "--no-first-run"];

/** Where distributions put chromium; looked up without a shell so a missing one is just "not found". */
function systemChromium(env: NodeJS.ProcessEnv): string | undefined {
  const dirs = (env.PATH ?? "").split(path.delimiter).filter((dir) => dir !== "");
  for (const dir of dirs) {
    const candidate = path.join(dir, "chromium");
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch (error) {
      if (!(error instanceof Error && "code" in error)) throw error;
      // Not here (ENOENT) or not executable (EACCES): look in the next PATH entry.
    }
  }
  return undefined;
}

/**
 * Flags `@sparticuz/chromium` recommends for serverless hosts that the tests must not get:
 * `--single-process` makes the browser exit when a context closes (the next test's `newContext` then fails
 * with "Target page, context or browser has been closed"), and the two security switches would let pages
 * do what the session page's own defences must be seen to stop.
 */
const UNWANTED_NPM_FLAGS = new Set([
  "--single-process",
  "--disable-web-security",
  "--allow-running-insecure-content",
]);

export async function chooseBrowser(env: NodeJS.ProcessEnv = process.env): Promise<BrowserChoice> {
  const system = systemChromium(env);
  if (system) {
    return {
      source: "system",
      executablePath: system,
      args: ["--no-sandbox", "--headless", "--disable-gpu", ...QUIET],
    };
  }
  const executablePath = await unpackNpmChromium();
  const args = sparticuz.args.filter((flag) => !UNWANTED_NPM_FLAGS.has(flag));
  return { source: "npm", executablePath, args: [...args, ...QUIET] };
}

/**
 * The package unpacks its brotli archives into the temp dir once (about 5 s here) and afterwards returns the
 * binary as soon as the file exists — also while another test file's worker is still writing it. So test
 * workers take turns through a lock directory; a lock older than two minutes was left by a killed worker.
 */
async function unpackNpmChromium(): Promise<string> {
  const lock = path.join(os.tmpdir(), "fpb-chromium-unpack.lock");
  const take = (): boolean => {
    try {
      fs.mkdirSync(lock);
      return true;
    } catch (error) {
      if (!(error instanceof Error && "code" in error && error.code === "EEXIST")) throw error;
      // Gone meanwhile (released): the next attempt takes it.
      const heldSince = fs.statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now();
      if (Date.now() - heldSince > 120_000) fs.rmSync(lock, { recursive: true, force: true });
      return false;
    }
  };
  await until(take, `${lock}, which another worker holds (over two minutes is a leftover)`, 120_000, 100);
  try {
    return await sparticuz.executablePath();
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}

export async function launchBrowser(): Promise<Browser> {
  const choice = await chooseBrowser();
  return chromium.launch({ executablePath: choice.executablePath, args: choice.args });
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
