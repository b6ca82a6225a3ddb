import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type MainProcess, startMain } from "../helpers/main-process.ts";
import { launchBrowser, screenshot } from "./browser.ts";

/**
 * Who you are on the session page, in a real browser against `npm start`'s entry point in local mode:
 * 会话详情 opens as the console's current user, each card opens its own run with the chat's history beside
 * it, and a group card says whose answer it waits for.
 */

const ALICE = "ou_local_alice";
const BOB = "ou_local_bob";
const CAROL = "ou_local_carol";
const GROUP = "oc_local_group";
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
      await screenshot(page, `failed-sign-in-${index}`).catch(() => undefined);
    process.stderr.write(`--- bot output (tail) ---\n${bot.output().slice(-3000)}\n`);
  }
  await context?.close();
  context = undefined;
  const found = problems.splice(0);
  if (found.length > 0) throw new Error(`the pages reported errors:\n${found.join("\n")}`);
});

/** On PORT=0: the listening line names the port, and the URL cards link to (PUBLIC_URL's default follows it). */
async function startBot(): Promise<typeof bot> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-sign-in-e2e-"));
  const started = await startMain({ env: { DATA_DIR: dataDir, DEMO_STEP_MS: "50" } });
  // The console runs on the same origin as the card links.
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

/** The console as `user`, opened on 127.0.0.1 while the cards link to localhost: cookies are per host. */
async function openConsole(user: string, chatId: string): Promise<Page> {
  context ??= await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: "zh-CN" });
  const page = await context.newPage();
  watch(page);
  await page.goto(`${bot.baseUrl.replace("localhost", "127.0.0.1")}/console#user=${user}&chat=${chatId}`);
  await page.locator('[data-testid="connection-status"][data-state="open"]').waitFor({ timeout: WAIT_MS });
  return page;
}

async function switchTo(page: Page, user: string, chatId: string): Promise<void> {
  await page.locator(`[data-testid="user-option"][data-user-id="${user}"]`).click();
  await page.locator(`[data-testid="chat-item"][data-chat-id="${chatId}"] button`).click();
  await page.locator(`[data-testid="chat-item"][data-chat-id="${chatId}"][data-active="true"]`).waitFor();
}

async function send(page: Page, text: string, options: { mention?: boolean } = {}): Promise<string> {
  const input = page.getByTestId("composer-input");
  if (options.mention) {
    await page.getByTestId("mention-bot").click();
    await expect.poll(() => input.inputValue(), { timeout: WAIT_MS }).toBe("@机器人 ");
    await page.keyboard.insertText(text);
  } else {
    await input.fill(text);
  }
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

/** The bot's progress card replying to `parentId`; a selector by id finds the newest render. */
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

const text = async (card: Locator) =>
  ((await card.getByTestId("card").textContent()) ?? "").replace(/\s+/g, " ");
const waitGreen = (card: Locator) =>
  card.locator('[data-testid="card-header"][data-template="green"]').waitFor({ timeout: WAIT_MS });

async function openDetails(card: Locator): Promise<Page> {
  if (!context) throw new Error("no browser context");
  const opened = context.waitForEvent("page", { timeout: WAIT_MS });
  await card.getByTestId("card-button").filter({ hasText: "会话详情" }).click();
  const page = await opened;
  watch(page);
  await page.waitForURL(/\/sessions\/[^/]+\/runs\/[^/]+$/, { timeout: WAIT_MS });
  return page;
}

describe("signing in to the session page from the console", () => {
  it(
    "会话详情 opens as the console's current user, also after switching from Alice to Bob",
    async () => {
      const consolePage = await openConsole(ALICE, p2p(ALICE));
      const mine = await cardFor(consolePage, await send(consolePage, "/quick 看看状态"));
      await waitGreen(mine);
      const alicePage = await openDetails(mine);
      await alicePage.getByTestId("session").waitFor({ timeout: WAIT_MS });
      await expect.poll(() => alicePage.getByTestId("viewer-name").textContent()).toContain(ALICE);

      // The console now acts as Bob: his own chat's 会话详情 is his, not "Alice — 无权查看此会话".
      await switchTo(consolePage, BOB, p2p(BOB));
      const his = await cardFor(consolePage, await send(consolePage, "/quick 我是 Bob"));
      await waitGreen(his);
      const bobPage = await openDetails(his);
      await bobPage.getByTestId("session").waitFor({ timeout: WAIT_MS });
      await expect.poll(() => bobPage.getByTestId("viewer-name").textContent()).toContain(BOB);
      await expect(bobPage.getByTestId("task-title").textContent()).resolves.toContain("我是 Bob");
      await expect(bobPage.getByTestId("forbidden").isHidden()).resolves.toBe(true);

      // The switch also moved the console host's own sign-in: a session page there reloads as Bob.
      const sameHost = await context!.newPage();
      watch(sameHost);
      const path = new URL(bobPage.url()).pathname;
      await sameHost.goto(`${bot.baseUrl.replace("localhost", "127.0.0.1")}${path}`);
      await sameHost.getByTestId("session").waitFor({ timeout: WAIT_MS });
      await expect.poll(() => sameHost.getByTestId("viewer-name").textContent()).toContain(BOB);
    },
    TEST_MS,
  );

  it(
    "an old card opens its own run, marked as earlier, with the chat's runs listed beside it",
    async () => {
      const consolePage = await openConsole(CAROL, p2p(CAROL));
      const first = await cardFor(consolePage, await send(consolePage, "/quick 第一次任务"));
      await waitGreen(first);
      const second = await cardFor(consolePage, await send(consolePage, "/quick 第二次任务"));
      await waitGreen(second);

      const page = await openDetails(first);
      await page.getByTestId("session").waitFor({ timeout: WAIT_MS });
      await expect.poll(() => page.getByTestId("task-title").textContent()).toContain("第一次任务");
      await page.getByTestId("older-run").waitFor({ timeout: WAIT_MS });
      await expect(page.getByTestId("status").getAttribute("data-status")).resolves.toBe("completed");
      const runs = page.getByTestId("history-run");
      await expect.poll(() => runs.count(), { timeout: WAIT_MS }).toBe(2);
      await expect(runs.nth(0).textContent()).resolves.toContain("第二次任务");
      await expect(runs.nth(1).getAttribute("aria-current")).resolves.toBe("page");
      await screenshot(page, "session-page-earlier-run");

      // Following the history to the newer run shows it as the chat's current one.
      await runs.nth(0).getByTestId("history-link").click();
      await expect.poll(() => page.getByTestId("task-title").textContent()).toContain("第二次任务");
      await expect.poll(() => page.getByTestId("older-run").isHidden()).toBe(true);
    },
    TEST_MS,
  );

  it(
    "a run link opened outside the console asks who you are, and signing in comes back to that run",
    async () => {
      const consolePage = await openConsole(CAROL, p2p(CAROL));
      const card = await cardFor(consolePage, await send(consolePage, "/quick 从别处打开"));
      await waitGreen(card);
      const runPage = await openDetails(card);
      const runPath = new URL(runPage.url()).pathname;

      // A browser that never saw the console (no cookie), e.g. the link pasted elsewhere.
      const stranger = await browser.newContext({ locale: "zh-CN" });
      try {
        const page = await stranger.newPage();
        watch(page);
        await page.goto(`${bot.baseUrl}${runPath}`);
        await page.getByTestId("sign-in-prompt").waitFor({ timeout: WAIT_MS });
        await expect(page.getByTestId("sign-in-local-user").count()).resolves.toBe(3);
        await page.locator(`[data-testid="sign-in-local-user"][data-user="${CAROL}"]`).click();
        await page.waitForURL(`${bot.baseUrl}${runPath}`, { timeout: WAIT_MS });
        await page.getByTestId("session").waitFor({ timeout: WAIT_MS });
        await expect.poll(() => page.getByTestId("task-title").textContent()).toContain("从别处打开");
      } finally {
        await stranger.close();
      }
    },
    TEST_MS,
  );

  it(
    "a task's sender still opens its card after someone else's task took the group over",
    async () => {
      const consolePage = await openConsole(ALICE, GROUP);
      await waitGreen(
        await cardFor(consolePage, await send(consolePage, "/quick 先开个头", { mention: true })),
      );
      await consolePage.locator(`[data-testid="user-option"][data-user-id="${BOB}"]`).click();
      const bobs = await cardFor(
        consolePage,
        await send(consolePage, "/quick Bob 的任务", { mention: true }),
      );
      await waitGreen(bobs);
      await consolePage.locator(`[data-testid="user-option"][data-user-id="${ALICE}"]`).click();
      await waitGreen(
        await cardFor(consolePage, await send(consolePage, "/quick Alice 接着来", { mention: true })),
      );

      // The chat's session runs Alice's task now; Bob's card still opens Bob's task. Bob wrote in the group,
      // so under the viewing rule (src/domain/access.ts) he is a member and sees the chat's runs beside it.
      await consolePage.locator(`[data-testid="user-option"][data-user-id="${BOB}"]`).click();
      const page = await openDetails(bobs);
      await page.getByTestId("session").waitFor({ timeout: WAIT_MS });
      await expect.poll(() => page.getByTestId("viewer-name").textContent()).toContain(BOB);
      await expect(page.getByTestId("task-title").textContent()).resolves.toContain("Bob 的任务");
      await expect(page.getByTestId("status").getAttribute("data-status")).resolves.toBe("completed");
      await expect(page.getByTestId("forbidden").isHidden()).resolves.toBe(true);
      const runs = page.getByTestId("history-run");
      await expect.poll(() => runs.count(), { timeout: WAIT_MS }).toBe(3);
      await expect(runs.nth(1).getAttribute("aria-current")).resolves.toBe("page");

      // Carol was never seen in the group: the same card's 会话详情 is forbidden to her.
      await consolePage.locator(`[data-testid="user-option"][data-user-id="${CAROL}"]`).click();
      const carols = await openDetails(bobs);
      await carols.getByTestId("forbidden").waitFor({ timeout: WAIT_MS });
      await expect(carols.getByTestId("session").isHidden()).resolves.toBe(true);
      // Her page's 403 is the answer this step expects; chromium logs it as an error, which is not one here.
      const expected = `${carols.url()}: console.error Failed to load resource: the server responded with a status of 403`;
      const others = problems.splice(0).filter((problem) => !problem.startsWith(expected));
      problems.push(...others);
    },
    TEST_MS,
  );

  it(
    "a group card says whose answer it waits for; another member's submit is told who may answer",
    async () => {
      const consolePage = await openConsole(ALICE, GROUP);
      const card = await cardFor(consolePage, await send(consolePage, "帮我选部署方案", { mention: true }));
      await card.getByTestId("card-form").first().waitFor({ timeout: WAIT_MS });
      const shown = await text(card);
      expect(shown).toContain("等待 @Alice 回答");
      expect(shown).not.toContain("需要你的回答");
      expect(shown).not.toContain("<at");
      await screenshot(consolePage, "group-card-waiting-for-alice", '[data-testid="message-list"]');

      await consolePage.locator(`[data-testid="user-option"][data-user-id="${BOB}"]`).click();
      const form = card.getByTestId("card-form").first();
      await form.locator('[data-testid="form-field"][data-tag="select_static"]').selectOption({ index: 1 });
      const answered = consolePage.waitForResponse((r) => r.url().endsWith("/console/api/actions"));
      await form.getByTestId("submit-button").click();
      const body = (await (await answered).json()) as { toast?: { content: string } };
      expect(body.toast?.content).toBe("仅 @Alice 可以回答此问题");

      // One reminder for the question, replying to its card or its message, never a recalled one.
      const reminders = consolePage
        .locator('[data-testid="message"][data-sender-type="app"]')
        .filter({ has: consolePage.getByTestId("message-text") });
      await expect.poll(() => reminders.count(), { timeout: WAIT_MS }).toBe(1);
      await expect(reminders.first().textContent()).resolves.toContain("@Alice");
      await expect(consolePage.getByText("撤回了一条消息").count()).resolves.toBe(0);
      await expect(consolePage.getByText("此消息已撤回").count()).resolves.toBe(0);
    },
    TEST_MS,
  );
});
