import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type MainProcess, startMain } from "../helpers/main-process.ts";
import { launchBrowser, screenshot } from "./browser.ts";

/**
 * A Lark tenant's session page (issue 19), in a real browser against `npm start`'s entry point in local mode
 * with BOT_LOCALE=en_us: the page a card links to speaks English — headings, buttons, the question panel,
 * its notices — and a question answered there is accepted. Only the words the bot's catalogue owns are
 * checked for Chinese; what people typed is theirs.
 */

const ALICE = "ou_local_alice";
const p2p = (openId: string) => `oc_p2p_${openId}`;
const WAIT_MS = 10_000;
const TEST_MS = 45_000;

let bot: { baseUrl: string; dataDir: string; output: () => string; stop: MainProcess["stop"] };
let browser: Browser;
let context: BrowserContext | undefined;
const problems: string[] = [];

beforeAll(async () => {
  const [started, launched] = await Promise.allSettled([startBot(), launchBrowser()]);
  if (started.status === "fulfilled") bot = started.value;
  if (launched.status === "fulfilled") browser = launched.value;
  for (const outcome of [started, launched]) if (outcome.status === "rejected") throw outcome.reason;
}, 30_000);

afterAll(async () => {
  await browser?.close();
  if (!bot) return;
  await bot.stop();
  fs.rmSync(bot.dataDir, { recursive: true, force: true });
});

afterEach(async ({ task }) => {
  if (task.result?.state === "fail") {
    for (const [index, page] of (context?.pages() ?? []).entries())
      await screenshot(page, `failed-session-page-en-${index}`).catch(() => undefined);
    process.stderr.write(`--- bot output (tail) ---\n${bot.output().slice(-3000)}\n`);
  }
  await context?.close();
  context = undefined;
  const found = problems.splice(0);
  if (found.length > 0) throw new Error(`the pages reported errors:\n${found.join("\n")}`);
});

/** `npm start`'s entry point on PORT=0 (helpers/main-process.ts): card links name the port it bound. */
async function startBot(): Promise<typeof bot> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-session-en-e2e-"));
  const started = await startMain({ env: { DATA_DIR: dataDir, DEMO_STEP_MS: "50", BOT_LOCALE: "en_us" } });
  return { baseUrl: started.url, dataDir, output: started.output, stop: started.stop };
}

function watch(page: Page): void {
  page.on("pageerror", (error) => problems.push(`${page.url()}: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() !== "error") return;
    // A signed-out session page asks /auth/me first; its 401 is the expected answer, logged by chromium.
    const signedOut = message.text().includes("status of 401") && message.location().url.endsWith("/auth/me");
    if (!signedOut) problems.push(`${page.url()}: console.error ${message.text()}`);
  });
}

/** The console as Alice, opened on 127.0.0.1 while the cards link to localhost: cookies are per host. */
async function openConsole(): Promise<Page> {
  context ??= await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: "en-US" });
  const page = await context.newPage();
  watch(page);
  await page.goto(
    `${bot.baseUrl.replace("localhost", "127.0.0.1")}/console#user=${ALICE}&chat=${p2p(ALICE)}`,
  );
  await page.locator('[data-testid="connection-status"][data-state="open"]').waitFor({ timeout: WAIT_MS });
  return page;
}

async function send(page: Page, text: string): Promise<string> {
  const input = page.getByTestId("composer-input");
  await input.fill(text);
  // The POST's answer: opening a chat also GETs /console/api/messages, which may come back meanwhile.
  const posted = page.waitForResponse(
    (r) => r.url().endsWith("/console/api/messages") && r.request().method() === "POST",
    { timeout: WAIT_MS },
  );
  await input.press("Enter");
  const body = (await (await posted).json()) as { messageId: string; delivered: boolean };
  expect(body.delivered).toBe(true);
  return body.messageId;
}

/** The bot's progress card replying to `parentId`. */
async function cardFor(page: Page, parentId: string): Promise<Locator> {
  const row = page
    .locator('[data-testid="message"][data-sender-type="app"]')
    .filter({ has: page.locator(`[data-testid="message-reply-ref"][data-parent-id="${parentId}"]`) })
    .filter({ has: page.getByTestId("card") });
  await row.waitFor({ timeout: WAIT_MS });
  return page.locator(
    `[data-testid="message"][data-message-id="${await row.getAttribute("data-message-id")}"]`,
  );
}

/** The card's details button (in whichever language the console shows cards) opens the run's page. */
async function openDetails(card: Locator): Promise<Page> {
  if (!context) throw new Error("no browser context");
  const opened = context.waitForEvent("page", { timeout: WAIT_MS });
  await card
    .getByTestId("card-button")
    .filter({ hasText: /Session details|会话详情/ })
    .click();
  const page = await opened;
  watch(page);
  await page.waitForURL(/\/sessions\/[^/]+\/runs\/[^/]+$/, { timeout: WAIT_MS });
  return page;
}

/**
 * Every text node of the page and every title / aria-label / placeholder, read in the browser, that holds
 * Chinese: the page's own words only (its data-owned parts, what the viewer typed, are left out).
 */
const CHINESE_ON_PAGE = `(() => {
  const cjk = /[\\u3000-\\u303f\\u3400-\\u9fff\\uff00-\\uffef]/;
  const found = [];
  const walker = document.createTreeWalker(document.documentElement, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement && node.parentElement.closest("script, style")) continue;
    if (cjk.test(node.data)) found.push(node.data.trim());
  }
  for (const element of document.querySelectorAll("[title], [aria-label], [placeholder]"))
    for (const name of ["title", "aria-label", "placeholder"]) {
      const value = element.getAttribute(name);
      if (value && cjk.test(value)) found.push(name + "=" + value);
    }
  if (cjk.test(document.title)) found.push("document.title=" + document.title);
  return found;
})()`;

describe("the session page with BOT_LOCALE=en_us", () => {
  it(
    "shows English headings, buttons and question panel, and accepts an answer given there",
    async () => {
      const consolePage = await openConsole();
      const card = await cardFor(consolePage, await send(consolePage, "Plan the rollout"));
      await card.getByTestId("card-form").first().waitFor({ timeout: WAIT_MS });
      const page = await openDetails(card);

      await page.getByTestId("session").waitFor({ timeout: WAIT_MS });
      await expect(page.locator("html").getAttribute("lang")).resolves.toBe("en");
      await expect(page.locator(".brand").textContent()).resolves.toBe("Session details");
      await expect(page.getByTestId("sign-out").textContent()).resolves.toBe("Sign out");
      await expect(page.locator("section.block h2").first().textContent()).resolves.toBe("Steps");
      await expect(page.getByTestId("session-title").textContent()).resolves.toBe("Private chat");

      const panel = page.getByTestId("ask-panel");
      await panel.waitFor({ timeout: WAIT_MS });
      await expect(panel.locator(".ask-title").textContent()).resolves.toBe("Your answer is needed");
      await expect.poll(() => page.getByTestId("status").textContent()).toBe("Waiting for answer");
      const questions = panel.getByTestId("question");
      await expect(questions.count()).resolves.toBe(2);
      await expect(questions.nth(0).locator(".hint").textContent()).resolves.toBe("Choose one");
      await expect(questions.nth(1).locator(".hint").textContent()).resolves.toBe("Choose any");
      await expect(questions.nth(0).locator(".other-label").textContent()).resolves.toBe("Other");
      await expect(questions.nth(0).getByTestId("other-input").getAttribute("placeholder")).resolves.toBe(
        "Type your own answer…",
      );
      await expect(questions.nth(0).getByTestId("question-text").textContent()).resolves.toBe(
        "How should the new service be deployed?",
      );
      await expect(panel.getByTestId("preview-title").first().textContent()).resolves.toBe("Preview");
      const submit = panel.getByTestId("submit");
      await expect(submit.textContent()).resolves.toBe("Submit");
      await expect(submit.isDisabled()).resolves.toBe(true);
      await expect(page.evaluate(CHINESE_ON_PAGE)).resolves.toEqual([]);
      await screenshot(page, "session-page-en-question");

      await questions.nth(0).getByTestId("option").filter({ hasText: "Kubernetes" }).click();
      await questions.nth(1).getByTestId("option").filter({ hasText: "Dark mode" }).click();
      await expect(panel.getByTestId("preview-title").first().textContent()).resolves.toBe(
        "Preview · Kubernetes",
      );
      await submit.click();

      // Accepted: the panel goes, the page says so in English, and the run finishes with the choice.
      await page.getByTestId("ask-notice").waitFor({ timeout: WAIT_MS });
      await expect(page.getByTestId("ask-notice").textContent()).resolves.toBe("Answer submitted");
      await expect.poll(() => page.getByTestId("ask-panel").count(), { timeout: WAIT_MS }).toBe(0);
      await expect
        .poll(() => page.getByTestId("status").getAttribute("data-status"), { timeout: WAIT_MS })
        .toBe("completed");
      await expect(page.getByTestId("status").textContent()).resolves.toBe("Completed");
      await expect(page.getByTestId("result-text").textContent()).resolves.toContain("Kubernetes");
      const icon = page.getByTestId("step").first().locator("svg");
      await expect(icon.getAttribute("aria-label")).resolves.toBe("Done");
      await expect(page.title()).resolves.toBe("Completed · Private chat");
      await expect(page.evaluate(CHINESE_ON_PAGE)).resolves.toEqual([]);
      await screenshot(page, "session-page-en-answered");
    },
    TEST_MS,
  );

  it(
    "asks a stranger to sign in in English",
    async () => {
      context = await browser.newContext({ locale: "en-US" });
      const page = await context.newPage();
      watch(page);
      await page.goto(`${bot.baseUrl}/sessions/${encodeURIComponent(`feishu-x-private-${ALICE}`)}`);
      await page.getByTestId("sign-in-prompt").waitFor({ timeout: WAIT_MS });
      await expect(page.locator("[data-testid=sign-in-prompt] h1").textContent()).resolves.toBe(
        "Please sign in",
      );
      await expect(page.getByTestId("sign-in-local-user").first().textContent()).resolves.toMatch(
        /^Sign in as /,
      );
      await expect(page.evaluate(CHINESE_ON_PAGE)).resolves.toEqual([]);
    },
    TEST_MS,
  );
});
