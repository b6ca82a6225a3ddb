import type { ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { startMain } from "../helpers/main-process.ts";
import { launchBrowser, screenshot } from "./browser.ts";

/**
 * Topics and threads in the console, in a real browser (issue 19): local mode's `npm start` as a child
 * process, 本地话题群 shown as a topic list whose topics open as threads, and a thread opened under a message
 * of the normal group. The bot's cards land inside the topics, never in the main flow.
 */

const WAIT_MS = 10_000;
const TEST_MS = 45_000;
const ALICE = "ou_local_alice";
const BOB = "ou_local_bob";
const TOPICS = "oc_local_topics";
const GROUP = "oc_local_group";

let bot: { child: ChildProcess; baseUrl: string; dataDir: string; output: () => string };
let browser: Browser;
const pageErrors: string[] = [];

beforeAll(async () => {
  const [started, launched] = await Promise.allSettled([startBot(), launchBrowser()]);
  if (started.status === "fulfilled") bot = started.value;
  if (launched.status === "fulfilled") browser = launched.value;
  for (const outcome of [started, launched]) if (outcome.status === "rejected") throw outcome.reason;
}, 30_000);

afterAll(async () => {
  await browser?.close();
  if (bot) {
    const exited = new Promise((resolve) => bot.child.once("exit", resolve));
    bot.child.kill("SIGTERM");
    await exited;
    fs.rmSync(bot.dataDir, { recursive: true, force: true });
  }
});

/** The bot on PORT=0: the port it got is read from its `listening` line (helpers/main-process.ts). */
async function startBot(): Promise<typeof bot> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-topics-e2e-"));
  const started = await startMain({ env: { DATA_DIR: dataDir, DEMO_STEP_MS: "20" }, startMs: 20_000 });
  return {
    child: started.child,
    baseUrl: `http://127.0.0.1:${started.port}`,
    dataDir,
    output: started.output,
  };
}

async function openConsole(user: string, chatId: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: "zh-CN" });
  const page = await context.newPage();
  page.on("pageerror", (error) => pageErrors.push(error.message));
  await page.goto(`${bot.baseUrl}/console#user=${user}&chat=${chatId}`);
  await page.locator('[data-testid="connection-status"][data-state="open"]').waitFor({ timeout: WAIT_MS });
  await page.locator(`[data-testid="chat-item"][data-chat-id="${chatId}"][data-active="true"]`).waitFor({
    timeout: WAIT_MS,
  });
  return page;
}

const PostAnswer = z.object({ messageId: z.string(), delivered: z.boolean() });

/** Types and sends a message (after @机器人 when `mention`); the new message's id. */
async function post(page: Page, text: string, mention = false): Promise<string> {
  const input = page.getByTestId("composer-input");
  await input.fill(mention ? `@机器人 ${text}` : text);
  const posted = page.waitForResponse(
    (response) => response.url().endsWith("/console/api/messages") && response.request().method() === "POST",
    { timeout: WAIT_MS },
  );
  await input.press("Enter");
  const response = await posted;
  const body = PostAnswer.parse(await response.json());
  expect(response.status()).toBe(200);
  expect(body.delivered).toBe(true);
  return body.messageId;
}

const message = (page: Page, messageId: string) =>
  page.locator(`[data-testid="message"][data-message-id="${messageId}"]`);
/** The bot's card replying to `parentId`, as shown in the current view. */
const cardFor = (page: Page, parentId: string) =>
  page
    .locator('[data-testid="message"][data-sender-type="app"]')
    .filter({ has: page.locator(`[data-testid="message-reply-ref"][data-parent-id="${parentId}"]`) })
    .filter({ has: page.getByTestId("card") });
const completed = (page: Page, parentId: string) =>
  cardFor(page, parentId)
    .locator('[data-testid="card-header"][data-template="green"]')
    .waitFor({ timeout: WAIT_MS });

describe("Console topics and threads", () => {
  it(
    "shows a topic group as a topic list; a topic opens as a thread with the bot's card inside it",
    async () => {
      const page = await openConsole(ALICE, TOPICS);
      await expect
        .poll(() => page.getByTestId("chat-item").filter({ hasText: "本地话题群" }).textContent(), {
          timeout: WAIT_MS,
        })
        .toContain("话题群");
      const first = await post(page, "/quick 话题一", true);
      const root = message(page, first);
      await root.waitFor({ timeout: WAIT_MS });
      await expect.poll(() => root.getAttribute("data-thread-id"), { timeout: WAIT_MS }).toMatch(/^omt_/);
      // The card is in the topic, not in the list: the topic shows its reply instead.
      const opener = page.locator(`[data-testid="thread-open"][data-root-id="${first}"]`);
      await opener.waitFor({ timeout: WAIT_MS });
      await expect.poll(() => opener.textContent(), { timeout: WAIT_MS }).toContain("1 条回复");
      await expect.poll(() => cardFor(page, first).count(), { timeout: WAIT_MS }).toBe(0);

      await opener.click();
      await page
        .locator(`[data-testid="thread-view"][data-root-id="${first}"]`)
        .waitFor({ timeout: WAIT_MS });
      await completed(page, first);
      const threadId = await root.getAttribute("data-thread-id");
      await expect
        .poll(() => cardFor(page, first).getAttribute("data-thread-id"), { timeout: WAIT_MS })
        .toBe(threadId);

      // Posting inside the topic: a reply in the thread, and its task's card lands there too.
      const followUp = await post(page, "/quick 接着做", true);
      await expect
        .poll(() => message(page, followUp).getAttribute("data-thread-id"), { timeout: WAIT_MS })
        .toBe(threadId);
      await completed(page, followUp);
      await screenshot(page, "console-topic-thread");

      // Back to the list, and a second topic: two topics, each with its own replies.
      await page.getByTestId("thread-back").click();
      await page.getByTestId("thread-view").waitFor({ state: "detached", timeout: WAIT_MS });
      await expect.poll(() => opener.textContent(), { timeout: WAIT_MS }).toContain("3 条回复");
      // The topic shows its latest reply: the follow-up's card, finished.
      await expect
        .poll(() => opener.getByTestId("thread-last").textContent(), { timeout: WAIT_MS })
        .toMatch(/^Progress Bot：.*已完成/);
      const second = await post(page, "/quick 话题二", true);
      const secondOpener = page.locator(`[data-testid="thread-open"][data-root-id="${second}"]`);
      await expect.poll(() => secondOpener.textContent(), { timeout: WAIT_MS }).toContain("1 条回复");
      await expect
        .poll(() => page.locator('[data-testid="message"][data-sender-type="user"]').count(), {
          timeout: WAIT_MS,
        })
        .toBe(2);
      // The list holds the topics and nothing else (no stray text between them).
      const strays = await page
        .getByTestId("message-list")
        .evaluate(
          (list) => [...list.childNodes].filter((node) => node.nodeType === 3 /* a text node */).length,
        );
      expect(strays).toBe(0);
      const secondThread = await message(page, second).getAttribute("data-thread-id");
      expect(secondThread).toMatch(/^omt_/);
      expect(secondThread).not.toBe(threadId);
      await screenshot(page, "console-topic-list");

      // The topic's session page: titled by the topic's first words, marked as a topic.
      const sessionId = `feishu-cli_0123456789abcdef-group-${TOPICS}-topic-${first}`;
      const sessionPage = await page.context().newPage();
      sessionPage.on("pageerror", (error) => pageErrors.push(error.message));
      await sessionPage.goto(
        `${bot.baseUrl}/auth/local?user=Alice&next=${encodeURIComponent(`/sessions/${sessionId}`)}`,
      );
      await sessionPage.getByTestId("topic-badge").waitFor({ state: "visible", timeout: WAIT_MS });
      await expect
        .poll(() => sessionPage.getByTestId("session-title").textContent(), { timeout: WAIT_MS })
        .toBe("飞书群聊话题：/quick 话题一");
      await screenshot(sessionPage, "session-page-topic");
    },
    TEST_MS,
  );

  it(
    "opens a thread under a message of the normal group; the task started there answers inside it",
    async () => {
      const page = await openConsole(BOB, GROUP);
      const plain = await post(page, "大家看看这个问题");
      await message(page, plain).hover();
      await page.locator(`[data-testid="thread-start"][data-root-id="${plain}"]`).click();
      await page
        .locator(`[data-testid="thread-view"][data-root-id="${plain}"]`)
        .waitFor({ timeout: WAIT_MS });
      const inThread = await post(page, "/quick 在话题里查", true);
      await expect
        .poll(() => message(page, inThread).getAttribute("data-thread-id"), { timeout: WAIT_MS })
        .toMatch(/^omt_/);
      await completed(page, inThread);

      // On a phone-width window the thread view fits: nothing wider than the window.
      await page.setViewportSize({ width: 400, height: 800 });
      const width = z
        .object({ scroll: z.number(), client: z.number(), header: z.number() })
        .parse(
          JSON.parse(
            z
              .string()
              .parse(
                await page.evaluate(
                  `JSON.stringify({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth, header: document.querySelector('[data-testid="thread-view"]').getBoundingClientRect().right })`,
                ),
              ),
          ),
        );
      expect(width.scroll).toBeLessThanOrEqual(width.client);
      expect(width.header).toBeLessThanOrEqual(width.client + 1);
      await screenshot(page, "console-thread-narrow");
      await page.setViewportSize({ width: 1280, height: 900 });

      await page.getByTestId("thread-back").click();
      const opener = page.locator(`[data-testid="thread-open"][data-root-id="${plain}"]`);
      await expect.poll(() => opener.textContent(), { timeout: WAIT_MS }).toContain("2 条回复");
      // Neither the thread's message nor the card shows in the group's main flow.
      await expect.poll(() => message(page, inThread).count(), { timeout: WAIT_MS }).toBe(0);
      await expect
        .poll(() => page.locator('[data-testid="message"][data-sender-type="app"]').count(), {
          timeout: WAIT_MS,
        })
        .toBe(0);
      expect(pageErrors).toEqual([]);
    },
    TEST_MS,
  );
});
