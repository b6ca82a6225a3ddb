import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type MainProcess, startMain } from "../helpers/main-process.ts";
import { launchBrowser, screenshot } from "./browser.ts";

/**
 * The session page offers what the card offers beside its forms (issue 25): the question's deadline in the
 * viewer's own zone, 延长 15 分钟 and 取消任务 (after a confirmation), with the card's effects — the card in
 * the console follows. `npm start`'s entry point in local mode; the browser sits in Berlin while the bot
 * writes its own texts in Shanghai time, so a deadline in the bot's zone would show the wrong hour.
 */

const ALICE = "ou_local_alice";
const p2p = (openId: string) => `oc_p2p_${openId}`;
const WAIT_MS = 10_000;
/**
 * The viewer's zone, hours from the bot's (Shanghai): Berlin, unless the next hour crosses midnight there (the
 * page then writes the date before a deadline on another day, so the times below would depend on the hour
 * the test runs); then another zone where it does not.
 */
const VIEWER_ZONE = ["Europe/Berlin", "America/New_York", "Asia/Kolkata"].find((zone) => {
  const day = (at: number) =>
    new Intl.DateTimeFormat("en-CA", { timeZone: zone, dateStyle: "short" }).format(at);
  return day(Date.now()) === day(Date.now() + 60 * 60_000);
}) as string;
/** How each candidate zone may be named in the deadline's title. */
const ZONE_NAMES: Record<string, RegExp> = {
  "Europe/Berlin": /中欧|GMT\+[12]|CE[S]?T/,
  "America/New_York": /北美东部|GMT-[45]|E[SD]T/,
  "Asia/Kolkata": /印度|GMT\+5:30|IST/,
};
const FIFTEEN_MIN = 15 * 60_000;

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
      await screenshot(page, `failed-session-page-actions-${index}`).catch(() => undefined);
    process.stderr.write(`--- bot output (tail) ---\n${bot.output().slice(-3000)}\n`);
  }
  await context?.close();
  context = undefined;
  const found = problems.splice(0);
  if (found.length > 0) throw new Error(`the pages reported errors:\n${found.join("\n")}`);
});

async function startBot(): Promise<typeof bot> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-session-actions-e2e-"));
  const started = await startMain({ env: { DATA_DIR: dataDir, DEMO_STEP_MS: "50" } });
  return { baseUrl: started.url, dataDir, output: started.output, stop: started.stop };
}

function watch(page: Page): void {
  page.on("pageerror", (error) => problems.push(`${page.url()}: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() !== "error") return;
    const signedOut = message.text().includes("status of 401") && message.location().url.endsWith("/auth/me");
    if (!signedOut) problems.push(`${page.url()}: console.error ${message.text()}`);
  });
}

async function openConsole(): Promise<Page> {
  context ??= await browser.newContext({
    viewport: { width: 1280, height: 900 },
    locale: "zh-CN",
    timezoneId: VIEWER_ZONE,
  });
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

async function openDetails(card: Locator): Promise<Page> {
  if (!context) throw new Error("no browser context");
  const opened = context.waitForEvent("page", { timeout: WAIT_MS });
  await card.getByTestId("card-button").filter({ hasText: "会话详情" }).click();
  const page = await opened;
  watch(page);
  await page.waitForURL(/\/sessions\/[^/]+\/runs\/[^/]+$/, { timeout: WAIT_MS });
  return page;
}

/** `15:42` as a reader in `timeZone` reads it, the way the page and the console write a time. */
const hhmm = (at: number, timeZone: string) =>
  new Intl.DateTimeFormat("zh-CN", { timeZone, hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(
    at,
  );

async function shownDeadline(page: Page): Promise<number> {
  const iso = await page.getByTestId("ask-deadline").locator("time").getAttribute("datetime");
  return Date.parse(iso ?? "");
}

describe("the session page's deadline, 延长 and 取消任务", () => {
  it("shows the deadline in the viewer's zone, extends it like the card, and cancels after a confirmation", async () => {
    const consolePage = await openConsole();
    const card = await cardFor(consolePage, await send(consolePage, "规划发布"));
    await card.getByTestId("card-form").first().waitFor({ timeout: WAIT_MS });
    const page = await openDetails(card);
    await page.getByTestId("ask-panel").waitFor({ timeout: WAIT_MS });

    // The deadline: an ISO moment, written in Berlin time (the bot's zone is Shanghai, hours apart).
    const line = page.getByTestId("ask-deadline");
    await line.waitFor({ timeout: WAIT_MS });
    const deadline = await shownDeadline(page);
    expect(Math.abs(deadline - (Date.now() + FIFTEEN_MIN))).toBeLessThan(60_000);
    const time = line.locator("time");
    await expect(time.textContent()).resolves.toBe(hhmm(deadline, VIEWER_ZONE));
    expect(hhmm(deadline, VIEWER_ZONE)).not.toBe(hhmm(deadline, "Asia/Shanghai"));
    await expect(line.textContent()).resolves.toBe(`⏰ 请在 ${hhmm(deadline, VIEWER_ZONE)} 前回答`);
    await expect(time.getAttribute("title")).resolves.toMatch(ZONE_NAMES[VIEWER_ZONE] ?? /$^/);

    // 延长 15 分钟: the page's deadline moves by 15 minutes, and so does the card's.
    const extend = page.getByTestId("extend");
    await expect(extend.textContent()).resolves.toBe("延长 15 分钟");
    const cancel = page.getByTestId("cancel-task");
    await expect(cancel.textContent()).resolves.toBe("取消任务");
    await screenshot(page, "session-page-deadline-actions");
    await extend.click();
    await expect.poll(() => shownDeadline(page), { timeout: WAIT_MS }).toBe(deadline + FIFTEEN_MIN);
    const later = hhmm(deadline + FIFTEEN_MIN, VIEWER_ZONE);
    await expect(time.textContent()).resolves.toBe(later);
    await expect
      .poll(() => page.getByTestId("ask-notice").last().textContent(), { timeout: WAIT_MS })
      .toBe(`已延长，请在 ${later} 前回答`);
    await expect.poll(() => card.textContent(), { timeout: WAIT_MS }).toContain(`请在 ${later} 前回答`);
    // The panel stays as it was: what the viewer chose is still chosen.
    await expect(page.getByTestId("ask-panel").count()).resolves.toBe(1);

    // 取消任务 asks first, as the card's confirm dialog does; 返回 leaves the task running.
    await cancel.click();
    const dialog = page.getByTestId("cancel-dialog");
    await expect(dialog.isVisible()).resolves.toBe(true);
    await expect(page.getByTestId("cancel-dialog-title").textContent()).resolves.toBe("取消任务？");
    await expect(page.getByTestId("cancel-dialog-text").textContent()).resolves.toBe(
      "任务会停止，等待中的问题也会失效。",
    );
    await screenshot(page, "session-page-cancel-confirm");
    await page.getByTestId("cancel-dialog-no").click();
    await expect(dialog.isVisible()).resolves.toBe(false);
    await expect(page.getByTestId("status").getAttribute("data-status")).resolves.toBe("waiting");

    await cancel.click();
    await page.getByTestId("cancel-dialog-yes").click();
    await expect
      .poll(() => page.getByTestId("status").getAttribute("data-status"), { timeout: WAIT_MS })
      .toBe("cancelled");
    await expect.poll(() => page.getByTestId("ask-panel").count(), { timeout: WAIT_MS }).toBe(0);
    await expect(page.getByTestId("run-actions").isHidden()).resolves.toBe(true);
    // The card follows: cancelled, its form and buttons gone.
    await expect.poll(() => card.getByTestId("card-form").count(), { timeout: WAIT_MS }).toBe(0);
    await expect.poll(() => card.textContent(), { timeout: WAIT_MS }).toContain("已取消");
    await expect(card.getByTestId("card-button").filter({ hasText: "取消任务" }).count()).resolves.toBe(0);
    await screenshot(page, "session-page-cancelled");
  }, 60_000);
});
