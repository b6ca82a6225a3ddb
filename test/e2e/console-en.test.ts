import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type MainProcess, startMain } from "../helpers/main-process.ts";
import { launchBrowser, screenshot } from "./browser.ts";

/**
 * A Lark tenant's console (issue 25): with BOT_LOCALE=en_us the local console starts in the bot's language —
 * its own labels, the cards it draws and the toasts of a click — until its viewer picks another with the
 * 中文/English switch, which stays theirs across a reload. `npm start`'s entry point in local mode, in
 * chromium.
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
      await screenshot(page, `failed-console-en-${index}`).catch(() => undefined);
    process.stderr.write(`--- bot output (tail) ---\n${bot.output().slice(-3000)}\n`);
  }
  await context?.close();
  context = undefined;
  const found = problems.splice(0);
  if (found.length > 0) throw new Error(`the console reported errors:\n${found.join("\n")}`);
});

async function startBot(): Promise<typeof bot> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-console-en-e2e-"));
  const started = await startMain({ env: { DATA_DIR: dataDir, DEMO_STEP_MS: "50", BOT_LOCALE: "en_us" } });
  return { baseUrl: started.url, dataDir, output: started.output, stop: started.stop };
}

/** The console as `user` in `chat`, in a browser context of its own (no saved language choice). */
async function openConsole(user: string, chat: string): Promise<Page> {
  context ??= await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  page.on("pageerror", (error) => problems.push(`${page.url()}: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`${page.url()}: console.error ${message.text()}`);
  });
  await page.goto(`${bot.baseUrl}/console#user=${user}&chat=${chat}`);
  await page.locator('[data-testid="connection-status"][data-state="open"]').waitFor({ timeout: WAIT_MS });
  return page;
}

async function send(page: Page, text: string): Promise<string> {
  const input = page.getByTestId("composer-input");
  await input.fill(text);
  const posted = page.waitForResponse(
    (r) => r.url().endsWith("/console/api/messages") && r.request().method() === "POST",
    { timeout: WAIT_MS },
  );
  await input.press("Enter");
  const body = (await (await posted).json()) as { messageId: string; delivered: boolean };
  expect(body.delivered).toBe(true);
  return body.messageId;
}

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

/** Every text node and title / aria-label / placeholder of the console that holds Chinese. */
const CHINESE_ON_PAGE = `(() => {
  const cjk = /[\\u3000-\\u303f\\u3400-\\u9fff\\uff00-\\uffef]/;
  const found = [];
  const walker = document.createTreeWalker(document.documentElement, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    // The log's request and response bodies are the wire's data (a card carries every language).
    if (node.parentElement && node.parentElement.closest("script, style, .log-body")) continue;
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

describe("the console with BOT_LOCALE=en_us", () => {
  it(
    "shows its labels, the cards and a click's toast in English until the viewer switches to Chinese",
    async () => {
      const page = await openConsole(ALICE, p2p(ALICE));
      await expect(page.locator("html").getAttribute("lang")).resolves.toBe("en");
      await expect(page.getByTestId("language-switch").textContent()).resolves.toBe("English");
      await expect(page.getByTestId("connection-status").textContent()).resolves.toBe("Connected");
      await expect(page.getByTestId("composer-send").textContent()).resolves.toBe("Send");
      await expect(page.locator(".log-title").textContent()).resolves.toBe("API call log");
      await expect(
        page.getByTestId("chat-item").filter({ hasText: "Local test group" }).count(),
      ).resolves.toBe(1);

      const card = await cardFor(page, await send(page, "Plan the rollout"));
      await card.getByTestId("card-form").first().waitFor({ timeout: WAIT_MS });
      await expect(card.getByTestId("submit-button").first().textContent()).resolves.toBe("Submit");
      // Submitting the form empty: the bot's toast, in the client's language.
      await card.getByTestId("submit-button").first().click();
      const toast = page.getByTestId("toast").last();
      await toast.waitFor({ timeout: WAIT_MS });
      await expect(toast.textContent()).resolves.toMatch(/^\S*\s*Question 1/);
      await expect(page.evaluate(CHINESE_ON_PAGE)).resolves.toEqual([]);
      await screenshot(page, "console-en");

      // The viewer's switch: Chinese labels and cards, kept for this viewer across a reload.
      await page.getByTestId("language-switch").click();
      await expect(page.getByTestId("language-switch").textContent()).resolves.toBe("中文");
      await expect(page.locator(".log-title").textContent()).resolves.toBe("API 调用日志");
      await expect(page.getByTestId("composer-send").textContent()).resolves.toBe("发送");
      await expect(card.getByTestId("submit-button").first().textContent()).resolves.toBe("提交");
      await page.reload();
      await page
        .locator('[data-testid="connection-status"][data-state="open"]')
        .waitFor({ timeout: WAIT_MS });
      await expect(page.getByTestId("language-switch").textContent()).resolves.toBe("中文");
      await expect(page.locator("html").getAttribute("lang")).resolves.toBe("zh-CN");
      await expect(page.getByTestId("connection-status").textContent()).resolves.toBe("已连接");
    },
    TEST_MS,
  );
});
