import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type MainProcess, startMain } from "../helpers/main-process.ts";
import { until } from "../helpers/wait.ts";
import { launchBrowser, screenshot } from "./browser.ts";

/**
 * Local mode in a real browser: `npm start`'s entry point as a child process (bot + Feishu emulator + demo
 * agent), Debian's chromium driving /console and the session page. One process for the file; every test
 * works in a chat (and so a session) of its own, or in one the previous test left finished.
 *
 * Screenshots of each card state go to test-artifacts/. `UPDATE_DOCS_SCREENSHOTS=1` also copies the ones
 * the README shows into docs/.
 */

const ALICE = "ou_local_alice";
const BOB = "ou_local_bob";
const CAROL = "ou_local_carol";
const GROUP = "oc_local_group";
const p2p = (openId: string) => `oc_p2p_${openId}`;

/** Every wait on the page gets this long, unless it says otherwise; the demo needs well under a second. */
const WAIT_MS = 10_000;
const TEST_MS = 45_000;
const VIEWPORT = { width: 1280, height: 900 };
const DOCS = path.resolve(import.meta.dirname, "..", "..", "docs");
const DEPLOY = "部署方式";
const FEATURES = "附加功能";

let bot: { baseUrl: string; dataDir: string; output: () => string; stop: MainProcess["stop"] };
let browser: Browser;
/** The current test's browser context, closed (and photographed on failure) after it. */
let context: BrowserContext | undefined;

beforeAll(async () => {
  const [started, launched] = await Promise.allSettled([startBot(), launchBrowser()]);
  if (started.status === "fulfilled") bot = started.value;
  if (launched.status === "fulfilled") browser = launched.value;
  for (const outcome of [started, launched]) if (outcome.status === "rejected") throw outcome.reason;
}, 30_000);

afterAll(async () => {
  await browser?.close();
  if (bot) {
    await bot.stop();
    fs.rmSync(bot.dataDir, { recursive: true, force: true });
  }
});

afterEach(async ({ task }) => {
  const pages = context?.pages() ?? [];
  if (task.result?.state === "fail") {
    const slug = task.name.replace(/[^a-z0-9]+/gi, "-").slice(0, 40);
    for (const [index, page] of pages.entries())
      await screenshot(page, `failed-${slug}-${index}`).catch(() => undefined);
    process.stderr.write(`--- bot output (tail) ---\n${bot.output().slice(-4000)}\n`);
  }
  await context?.close();
  context = undefined;
  const problems = pageProblems.splice(0);
  if (problems.length > 0) throw new Error(`the pages reported errors:\n${problems.join("\n")}`);
});

// ---------------------------------------------------------------------------------------------------------
// The process

/** On PORT=0: the listening line names the port, and the URL cards link to (PUBLIC_URL's default follows it). */
async function startBot(): Promise<typeof bot> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-local-e2e-"));
  const started = await startMain({
    env: { DATA_DIR: dataDir, DEMO_STEP_MS: "50", CARD_PATCH_INTERVAL_MS: "300" },
  });
  // The console runs on the same origin as the card links.
  return { baseUrl: started.url, dataDir, output: started.output, stop: started.stop };
}

// ---------------------------------------------------------------------------------------------------------
// The console

/** Script errors and console errors of the current test's pages; a test with any fails. */
const pageProblems: string[] = [];
function watch(page: Page): void {
  page.on("pageerror", (error) => pageProblems.push(`${page.url()}: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() !== "error") return;
    // A signed-out session page asks /auth/me first; its 401 is the expected answer, logged by chromium.
    const signedOut = message.text().includes("status of 401") && message.location().url.endsWith("/auth/me");
    if (!signedOut)
      pageProblems.push(`${page.url()}: console.error ${message.text()} (${message.location().url})`);
  });
}

async function newPage(): Promise<Page> {
  context ??= await browser.newContext({ viewport: VIEWPORT, locale: "zh-CN" });
  const page = await context.newPage();
  watch(page);
  return page;
}

/** /console as `user`, in `chatId`, connected to the live stream. */
async function openConsole(user: string, chatId: string): Promise<Page> {
  const page = await newPage();
  await page.goto(`${bot.baseUrl}/console#user=${user}&chat=${chatId}`);
  await page.locator('[data-testid="connection-status"][data-state="open"]').waitFor({ timeout: WAIT_MS });
  await page.locator(`[data-testid="chat-item"][data-chat-id="${chatId}"][data-active="true"]`).waitFor({
    timeout: WAIT_MS,
  });
  await page.locator(`[data-testid="user-option"][data-user-id="${user}"][aria-pressed="true"]`).waitFor({
    timeout: WAIT_MS,
  });
  return page;
}

async function switchUser(page: Page, user: string): Promise<void> {
  await page.locator(`[data-testid="user-option"][data-user-id="${user}"]`).click();
  await page.locator(`[data-testid="user-option"][data-user-id="${user}"][aria-pressed="true"]`).waitFor({
    timeout: WAIT_MS,
  });
}

/** Types `text` into the composer (after `@机器人` when `mention`), sends it with Enter; the new message's id. */
async function sendMessage(page: Page, text: string, options: { mention?: boolean } = {}): Promise<string> {
  const input = page.getByTestId("composer-input");
  if (options.mention) {
    await page.getByTestId("mention-bot").click();
    await expect.poll(() => input.inputValue(), { timeout: WAIT_MS }).toBe("@机器人 ");
    await page.keyboard.insertText(text);
  } else {
    await input.fill(text);
  }
  const posted = page.waitForResponse(
    (response) => response.url().endsWith("/console/api/messages") && response.request().method() === "POST",
    { timeout: WAIT_MS },
  );
  await input.press("Enter");
  const response = await posted;
  const body = (await response.json()) as { messageId: string; delivered: boolean; mentionBot: boolean };
  expect(response.status(), JSON.stringify(body)).toBe(200);
  expect(body.delivered).toBe(true);
  if (options.mention) expect(body.mentionBot).toBe(true);
  await page.locator(`[data-testid="message"][data-message-id="${body.messageId}"]`).waitFor({
    timeout: WAIT_MS,
  });
  return body.messageId;
}

/** The progress card the bot sent in reply to message `parentId`, once it is on screen. */
async function progressCardFor(page: Page, parentId: string): Promise<{ selector: string; card: Locator }> {
  const row = page
    .locator('[data-testid="message"][data-sender-type="app"]')
    .filter({ has: page.locator(`[data-testid="message-reply-ref"][data-parent-id="${parentId}"]`) })
    .filter({ has: page.getByTestId("card") });
  await row.waitFor({ timeout: WAIT_MS });
  const messageId = await row.getAttribute("data-message-id");
  if (!messageId) throw new Error("the card has no message id");
  // Each update replaces the element; a selector by message id finds the newest one.
  const selector = `[data-testid="message"][data-message-id="${messageId}"]`;
  return { selector, card: page.locator(selector) };
}

/** The card's text, whitespace collapsed. */
/**
 * Text of an element with the console's status icons (SVG, web/public/icons.ts) read back as the emoji the
 * card JSON carries, so expectations quote the card as Feishu shows it. Runs in the page.
 */
const ICON_TEXT = `(root) => {
  const copy = root.cloneNode(true);
  const emoji = { done: "✅", failed: "❌", running: "⏳" };
  for (const svg of copy.querySelectorAll("svg[data-icon]")) svg.replaceWith(emoji[svg.dataset.icon] ?? "");
  return copy.textContent ?? "";
}`;
// A Function built from the same source: evaluate() needs a function to hand the element to.
const iconTextOf = new Function("root", `return (${ICON_TEXT})(root);`) as (root: unknown) => string;
const textWithIcons = async (locator: Locator) => String(await locator.evaluate(iconTextOf));
const cardText = async (card: Locator) =>
  (await textWithIcons(card.getByTestId("card"))).replace(/\s+/g, " ");
const formsOf = (card: Locator) => card.getByTestId("card-form");
const formAsking = (card: Locator, header: string) => formsOf(card).filter({ hasText: `【${header}】` });

async function waitForTemplate(card: Locator, template: string, timeout = WAIT_MS): Promise<void> {
  await card.locator(`[data-testid="card-header"][data-template="${template}"]`).waitFor({ timeout });
}

async function chooseDeploy(form: Locator, label: string): Promise<void> {
  await form.locator('[data-testid="form-field"][data-tag="select_static"]').selectOption({ label });
}

async function checkFeatures(form: Locator, labels: string[]): Promise<void> {
  const box = form.locator('[data-testid="form-field"][data-tag="multi_select_static"]');
  for (const label of labels) await box.getByRole("checkbox", { name: label }).check();
}

/** Clicks the form's 提交 and returns the toast the console shows for the bot's answer. */
async function submitForm(page: Page, form: Locator): Promise<{ type: string; content: string }> {
  const answered = page.waitForResponse((response) => response.url().endsWith("/console/api/actions"), {
    timeout: WAIT_MS,
  });
  await form.getByTestId("submit-button").click();
  const body = (await (await answered).json()) as { toast: { type: string; content: string } | null };
  if (!body.toast) throw new Error(`no toast in the answer: ${JSON.stringify(body)}`);
  const toast = page.getByTestId("toast").filter({ hasText: body.toast.content }).last();
  await toast.waitFor({ timeout: WAIT_MS });
  return { type: (await toast.getAttribute("data-type")) ?? "", content: body.toast.content };
}

/**
 * Records every state the page renders for cards (header colour, forms, first markdown block), through a
 * MutationObserver: updates come faster than a poll could see them.
 */
async function recordCardStates(page: Page): Promise<() => Promise<string[]>> {
  await page.evaluate(`(() => {
    const states = (window.__cardStates = []);
    const record = () => {
      for (const card of document.querySelectorAll('[data-testid="message"][data-sender-type="app"] [data-testid="card"]')) {
        const template = card.querySelector('[data-testid="card-header"]')?.dataset.template ?? "";
        const forms = card.querySelectorAll('[data-testid="card-form"]').length;
        const markdown = card.querySelector('[data-testid="card-markdown"]');
        const steps = markdown ? (${ICON_TEXT})(markdown) : "";
        const state = template + " forms=" + forms + " " + steps.replace(/\\s+/g, " ");
        if (states.at(-1) !== state) states.push(state);
      }
    };
    new MutationObserver(record).observe(document.querySelector('[data-testid="message-list"]'), {
      childList: true,
      subtree: true,
    });
  })()`);
  return async () => (await page.evaluate("window.__cardStates")) as string[];
}

// ---------------------------------------------------------------------------------------------------------
// The session page

/**
 * Clicks the card's 会话详情, which opens the card's own run (/sessions/<id>/runs/<runId>) in a new page,
 * signed in as the console's current user `user` (the console goes through /auth/local), and waits for it.
 */
async function openSessionPage(card: Locator, user: string): Promise<{ page: Page; sessionPath: string }> {
  if (!context) throw new Error("no browser context");
  const opened = context.waitForEvent("page", { timeout: WAIT_MS });
  await card.getByTestId("card-button").filter({ hasText: "会话详情" }).click();
  const page = await opened;
  watch(page);
  await page.waitForURL(/\/sessions\/[^/]+\/runs\/[^/]+$/, { timeout: WAIT_MS });
  const sessionPath = new URL(page.url()).pathname;
  await page.getByTestId("session").waitFor({ timeout: WAIT_MS });
  await expect
    .poll(() => page.getByTestId("viewer-name").textContent(), { timeout: WAIT_MS })
    .toContain(user);
  return { page, sessionPath };
}

const panelsOf = (page: Page) => page.getByTestId("ask-panel");

async function answerOnPage(panel: Locator, deploy: string, features: string[]): Promise<void> {
  const [first, second] = [0, 1].map((index) =>
    panel.locator(`[data-testid="question"][data-index="${index}"]`),
  ) as [Locator, Locator];
  await expect(first.getByTestId("question-header").textContent()).resolves.toBe(DEPLOY);
  await expect(second.getByTestId("question-header").textContent()).resolves.toBe(FEATURES);
  await first.locator(`[data-testid="option"][data-label="${deploy}"]`).getByTestId("option-input").check();
  for (const label of features)
    await second.locator(`[data-testid="option"][data-label="${label}"]`).getByTestId("option-input").check();
  const submit = panel.getByTestId("submit");
  await expect.poll(() => submit.isEnabled(), { timeout: WAIT_MS }).toBe(true);
  await submit.click();
}

// ---------------------------------------------------------------------------------------------------------
// Screenshots

async function shot(page: Page, name: string, selector?: string): Promise<string> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      const file = await screenshot(page, name, selector);
      expect(fs.statSync(file).size).toBeGreaterThan(1000);
      return file;
    } catch (error) {
      // An update replaced the message while it was being photographed: take the new one.
      if (attempt >= 3 || !String(error).includes("not attached")) throw error;
    }
  }
}

/**
 * A screenshot of one chat message. A card taller than the message list would be cut by the list's
 * scrolling, so the page grows until the message fits, just for the shot.
 */
async function messageShot(
  page: Page,
  name: string,
  selector: string,
  options: { cardOnly?: boolean } = {},
): Promise<string> {
  // A running card is replaced on the page at every update: between the replacement's removal and its
  // arrival there is no box to measure, so measure again until both are there.
  const [message, list] = await until(
    async () => {
      const boxes = await Promise.all([
        page.locator(selector).boundingBox({ timeout: 2_000 }),
        page.getByTestId("message-list").boundingBox({ timeout: 2_000 }),
      ]);
      return boxes[0] && boxes[1] ? ([boxes[0], boxes[1]] as const) : undefined;
    },
    `something to photograph for ${name}`,
    WAIT_MS,
    50,
  );
  const extra = Math.ceil(message.height - list.height + 32);
  try {
    if (extra > 0) await page.setViewportSize({ width: VIEWPORT.width, height: VIEWPORT.height + extra });
    // A running card is replaced on the page at every update (console.ts showMessage): if it is swapped out
    // under the scroll or the shot, take them again on the new element.
    return await until(
      async () => {
        try {
          await page.locator(selector).scrollIntoViewIfNeeded({ timeout: WAIT_MS });
          return await shot(page, name, options.cardOnly ? `${selector} [data-testid="card"]` : selector);
        } catch (error) {
          if (error instanceof Error && error.message.includes("not attached to the DOM")) return undefined;
          throw error;
        }
      },
      `a steady ${name} to photograph`,
      WAIT_MS,
      50,
    );
  } finally {
    if (extra > 0) await page.setViewportSize(VIEWPORT);
  }
}

/** Copies an artifact into docs/ when asked to; the tests never touch tracked files otherwise. */
function toDocs(file: string, name: string): void {
  if (process.env.UPDATE_DOCS_SCREENSHOTS !== "1") return;
  fs.mkdirSync(DOCS, { recursive: true });
  fs.copyFileSync(file, path.join(DOCS, `${name}.png`));
}

// ---------------------------------------------------------------------------------------------------------

describe("local mode in a browser", () => {
  it(
    "private chat: the card shows its steps, takes the form's answers and ends with a reply quoting them",
    async () => {
      const page = await openConsole(ALICE, p2p(ALICE));
      const states = await recordCardStates(page);
      const sent = await sendMessage(page, "帮我给新服务选一个部署方案");
      const { selector, card } = await progressCardFor(page, sent);

      // The form: orange header, the first step done, both questions.
      const form = formAsking(card, DEPLOY);
      await form.waitFor({ timeout: WAIT_MS });
      await waitForTemplate(card, "orange");
      await expect(formsOf(card).count()).resolves.toBe(1);
      await expect(form.textContent()).resolves.toContain(`【${FEATURES}】`);
      await expect(textWithIcons(card.getByTestId("card-markdown").first())).resolves.toContain(
        "✅ 扫描工作区 · 扫描了 42 个文件",
      );
      toDocs(await messageShot(page, "console-form", selector, { cardOnly: true }), "console-form");

      await chooseDeploy(form, "Kubernetes");
      await checkFeatures(form, ["暗色模式", "导出 PDF"]);
      await expect(submitForm(page, form)).resolves.toEqual({ type: "success", content: "已提交" });

      // Completed: green, every step done, the reply quoting both answers.
      await waitForTemplate(card, "green");
      await expect(formsOf(card).count()).resolves.toBe(0);
      const text = await cardText(card);
      expect(text).toContain("已完成");
      expect(text).toContain("✅ 部署方式：Kubernetes");
      expect(text).toContain("✅ 开启功能：导出 PDF");
      expect(text).toContain("新服务要用哪种方式部署？ Kubernetes");
      expect(text).toContain("需要同时开启哪些功能？ 暗色模式、导出 PDF");
      toDocs(await shot(page, "console-completed"), "console-completed");
      await messageShot(page, "card-completed", selector);

      // What the page rendered on the way: running, the form after the first step, then every step done;
      // the steps only ever pile up.
      const seen = await states();
      const report = seen.join("\n");
      const stepsDone = (state: string | undefined) => (state ?? "").split("✅").length - 1;
      const asking = seen.findIndex((state) => state.startsWith("orange forms=1"));
      const done = seen.findIndex((state) => state.startsWith("green forms=0"));
      expect(
        seen.some((state) => state.startsWith("blue forms=0")),
        report,
      ).toBe(true);
      expect(asking, report).toBeGreaterThanOrEqual(0);
      expect(done, report).toBe(seen.length - 1);
      expect(asking, report).toBeLessThan(done);
      expect(stepsDone(seen[asking]), report).toBe(1);
      expect(stepsDone(seen[done]), report).toBe(5);
      const counts = seen.map(stepsDone);
      expect(counts, report).toEqual([...counts].sort((a, b) => a - b));
    },
    TEST_MS,
  );

  it(
    "a long task: the running card shows its steps as they finish, then completes",
    async () => {
      const page = await openConsole(CAROL, p2p(CAROL));
      const sent = await sendMessage(page, "/long 跑一个长任务");
      const { selector, card } = await progressCardFor(page, sent);
      const running = card.getByTestId("card").filter({
        has: page.locator('[data-testid="card-header"][data-template="blue"]'),
        hasText: /处理第 \d+\/20 块/,
      });
      await running.waitFor({ timeout: WAIT_MS });
      await expect.poll(() => cardText(card), { timeout: WAIT_MS }).toMatch(/✅ 处理第 \d+\/20 块/);
      await messageShot(page, "card-running", selector);
      await waitForTemplate(card, "green");
      const text = await cardText(card);
      expect(text).toContain("✅ 处理第 20/20 块");
      expect(text).toContain("执行了 20 步");
    },
    TEST_MS,
  );

  it(
    "group: only the person who @-mentioned the bot may submit its form",
    async () => {
      const page = await openConsole(ALICE, GROUP);
      const sent = await sendMessage(page, "帮我给新服务选一个部署方案", { mention: true });
      const { selector, card } = await progressCardFor(page, sent);
      const form = formAsking(card, DEPLOY);
      await form.waitFor({ timeout: WAIT_MS });

      // Bob fills it in and submits: refused, naming who may answer; the form stays.
      await switchUser(page, BOB);
      await chooseDeploy(form, "Kubernetes");
      await expect(submitForm(page, form)).resolves.toEqual({
        type: "error",
        content: "仅 @Alice 可以回答此问题",
      });
      await shot(page, "group-refused");
      await expect(formsOf(card).count()).resolves.toBe(1);
      await waitForTemplate(card, "orange");
      await messageShot(page, "card-group-form", selector);

      // Alice answers: accepted, and the card completes with her answers.
      await switchUser(page, ALICE);
      await form.waitFor({ timeout: WAIT_MS });
      // Alice's client shows the form as the bot sent it, not what Bob chose in his.
      await expect(
        form.locator('[data-testid="form-field"][data-tag="select_static"]').inputValue(),
      ).resolves.toBe("");
      await chooseDeploy(form, "systemd");
      await checkFeatures(form, ["多语言"]);
      await expect(submitForm(page, form)).resolves.toEqual({ type: "success", content: "已提交" });
      await waitForTemplate(card, "green");
      const text = await cardText(card);
      expect(text).toContain("新服务要用哪种方式部署？ systemd");
      expect(text).toContain("需要同时开启哪些功能？ 多语言");
      expect(text).not.toContain("Kubernetes");
    },
    TEST_MS,
  );

  it(
    "the same ask answered on the session page leaves the card in the console",
    async () => {
      const consolePage = await openConsole(ALICE, p2p(ALICE));
      const sent = await sendMessage(consolePage, "帮我给新服务选一个部署方案");
      const { card } = await progressCardFor(consolePage, sent);
      await formAsking(card, DEPLOY).waitFor({ timeout: WAIT_MS });

      const { page } = await openSessionPage(card, ALICE);
      const panel = panelsOf(page).first();
      await panel.waitFor({ timeout: WAIT_MS });
      await expect(panelsOf(page).count()).resolves.toBe(1);
      await expect
        .poll(() => page.getByTestId("status").getAttribute("data-status"), { timeout: WAIT_MS })
        .toBe("waiting");
      await expect(page.getByTestId("read-only-note").isHidden()).resolves.toBe(true);
      // Hovering an option shows its preview beside the question.
      await panel.locator('[data-testid="option"][data-label="Kubernetes"]').hover();
      await expect
        .poll(() => panel.getByTestId("preview").textContent(), { timeout: WAIT_MS })
        .toContain("kind: Deployment");
      toDocs(await shot(page, "session-page"), "session-page");

      await answerOnPage(panel, "Docker（推荐）", ["暗色模式", "多语言"]);
      await page.getByTestId("ask-notice").filter({ hasText: "回答已提交" }).waitFor({ timeout: WAIT_MS });
      await expect.poll(() => panelsOf(page).count(), { timeout: WAIT_MS }).toBe(0);

      // The console: the form leaves the card, then the card completes with the page's answers.
      await expect.poll(() => formsOf(card).count(), { timeout: WAIT_MS }).toBe(0);
      await waitForTemplate(card, "green");
      const text = await cardText(card);
      expect(text).toContain("新服务要用哪种方式部署？ Docker（推荐）");
      expect(text).toContain("需要同时开启哪些功能？ 暗色模式、多语言");

      // And the session page shows the run finished, with the same reply.
      await expect
        .poll(() => page.getByTestId("status").getAttribute("data-status"), { timeout: WAIT_MS })
        .toBe("completed");
      await expect(page.getByTestId("result-text").textContent()).resolves.toContain("Docker（推荐）");
      await shot(page, "session-page-completed");
    },
    TEST_MS,
  );

  it(
    "/parallel: both asks in one form with one submit, so what was typed for either is sent, not wiped",
    async () => {
      const page = await openConsole(BOB, p2p(BOB));
      const sent = await sendMessage(page, "/parallel 同时问我两件事");
      const { selector, card } = await progressCardFor(page, sent);
      await expect.poll(() => formAsking(card, FEATURES).count(), { timeout: WAIT_MS }).toBe(1);
      // One form holds both asks, with one 全部提交: a Feishu submit sends only its own form's fields.
      await expect(formsOf(card).count()).resolves.toBe(1);
      const form = formAsking(card, DEPLOY);
      await expect(form.count()).resolves.toBe(1);
      await expect(card.getByTestId("submit-button").count()).resolves.toBe(1);
      await expect(card.getByTestId("submit-button").textContent()).resolves.toBe("全部提交");
      await expect(card.getByTestId("card").textContent()).resolves.toContain("需要你的回答（2/2）");
      toDocs(await messageShot(page, "console-parallel", selector, { cardOnly: true }), "console-parallel");

      // A choice for the first ask, and 其他 text typed for the second: both go with the one submit.
      await chooseDeploy(form, "systemd");
      await form.locator('[data-testid="form-field"][data-tag="input"]').nth(1).fill("RTL 支持");
      await expect(submitForm(page, form)).resolves.toEqual({ type: "success", content: "已提交" });
      await waitForTemplate(card, "green");
      await expect(formsOf(card).count()).resolves.toBe(0);
      const text = await cardText(card);
      expect(text).toContain("新服务要用哪种方式部署？ systemd");
      expect(text).toContain("需要同时开启哪些功能？ 其他：RTL 支持");
      await messageShot(page, "card-parallel-answered", selector);
    },
    TEST_MS,
  );

  it(
    "取消任务 asks first: 取消 in the dialog sends nothing, 确定 cancels, and the card says 已取消 once",
    async () => {
      const page = await openConsole(ALICE, p2p(ALICE));
      const sent = await sendMessage(page, "帮我给新服务选一个部署方案");
      const { selector, card } = await progressCardFor(page, sent);
      await waitForTemplate(card, "orange");
      const cancel = card.getByTestId("card-button").filter({ hasText: "取消任务" });
      const actions: string[] = [];
      page.on("request", (request) => {
        if (request.url().endsWith("/console/api/actions")) actions.push(request.url());
      });
      await cancel.click();
      const dialog = page.getByTestId("confirm-dialog");
      await dialog.waitFor({ timeout: WAIT_MS });
      await expect(dialog.textContent()).resolves.toContain("取消任务？");
      await expect(dialog.textContent()).resolves.toContain("任务会停止，等待中的问题也会失效。");
      await shot(page, "console-cancel-confirm");
      await dialog.getByTestId("confirm-cancel").click();
      await expect(dialog.count()).resolves.toBe(0);
      expect(actions).toEqual([]);
      await expect(formsOf(card).count()).resolves.toBe(1);

      await cancel.click();
      const answered = page.waitForResponse((response) => response.url().endsWith("/console/api/actions"));
      await page.getByTestId("confirm-dialog").getByTestId("confirm-ok").click();
      const body = (await (await answered).json()) as { toast?: { content?: string } };
      expect(body.toast?.content).toBe("已取消任务");
      await waitForTemplate(card, "grey");
      const text = await cardText(card);
      expect(text.match(/取消/g) ?? []).toEqual(["取消"]);
      await messageShot(page, "card-cancelled", selector);
    },
    TEST_MS,
  );

  it(
    "refreshing the session page while an ask is pending shows it again, and it can be answered",
    async () => {
      const consolePage = await openConsole(CAROL, p2p(CAROL));
      const sent = await sendMessage(consolePage, "帮我给新服务选一个部署方案");
      const { card } = await progressCardFor(consolePage, sent);
      await formAsking(card, DEPLOY).waitFor({ timeout: WAIT_MS });

      const { page } = await openSessionPage(card, CAROL);
      await panelsOf(page).first().waitFor({ timeout: WAIT_MS });
      const requestId = await panelsOf(page).first().getAttribute("data-request-id");
      expect(requestId).toBeTruthy();

      await page.reload();
      await page.getByTestId("session").waitFor({ timeout: WAIT_MS });
      const panel = page.locator(`[data-testid="ask-panel"][data-request-id="${requestId}"]`);
      await panel.waitFor({ timeout: WAIT_MS });
      await expect(panelsOf(page).count()).resolves.toBe(1);
      await shot(page, "session-page-after-refresh");

      await answerOnPage(panel, "Kubernetes", ["导出 PDF"]);
      await page.getByTestId("ask-notice").filter({ hasText: "回答已提交" }).waitFor({ timeout: WAIT_MS });
      await expect
        .poll(() => page.getByTestId("status").getAttribute("data-status"), { timeout: WAIT_MS })
        .toBe("completed");
      await expect(page.getByTestId("result-text").textContent()).resolves.toContain("Kubernetes");
      await waitForTemplate(card, "green");
      await expect(cardText(card)).resolves.toContain("导出 PDF");
    },
    TEST_MS,
  );

  it(
    "the session page renders the final answer's markdown, and HTML typed into an answer stays text",
    async () => {
      const consolePage = await openConsole(BOB, p2p(BOB));
      const sent = await sendMessage(consolePage, "帮我给新服务选一个部署方案");
      const { card } = await progressCardFor(consolePage, sent);
      await formAsking(card, DEPLOY).waitFor({ timeout: WAIT_MS });

      const { page } = await openSessionPage(card, BOB);
      const panel = panelsOf(page).first();
      await panel.waitFor({ timeout: WAIT_MS });
      // The demo quotes each answer in its reply (`- **question** answer`), so this lands in the final answer.
      const attempt = '<img src=x onerror="window.__injected=1"><script>window.__injected=2</script>';
      const [first, second] = [0, 1].map((index) =>
        panel.locator(`[data-testid="question"][data-index="${index}"]`),
      ) as [Locator, Locator];
      await first.getByTestId("other-input").fill(attempt);
      await second.locator('[data-testid="option"][data-label="多语言"]').getByTestId("option-input").check();
      const submit = panel.getByTestId("submit");
      await expect.poll(() => submit.isEnabled(), { timeout: WAIT_MS }).toBe(true);
      await submit.click();
      await expect
        .poll(() => page.getByTestId("status").getAttribute("data-status"), { timeout: WAIT_MS })
        .toBe("completed");

      // "**完成** 已按你的选择执行:" then a list, one item per question with the question in bold.
      const result = page.getByTestId("result-text");
      await expect(result.locator("p > strong").first().textContent()).resolves.toBe("完成");
      const items = result.locator("ul > li");
      await expect(items.count()).resolves.toBe(2);
      await expect(items.nth(0).locator("strong").textContent()).resolves.toBe("新服务要用哪种方式部署？");
      await expect(items.nth(1).locator("strong").textContent()).resolves.toBe("需要同时开启哪些功能？");
      await expect(items.nth(1).textContent()).resolves.toContain("多语言");
      // The HTML attempt is shown as the text it is: no element made from it, nothing run.
      await expect(items.nth(0).textContent()).resolves.toContain(`其他：${attempt}`);
      await expect(result.locator("img, script").count()).resolves.toBe(0);
      await expect(
        result.locator("*").evaluateAll((nodes) => nodes.map((node) => node.tagName)),
      ).resolves.toEqual(["P", "STRONG", "UL", "LI", "STRONG", "LI", "STRONG"]);
      await expect(page.evaluate("window.__injected")).resolves.toBeUndefined();
      await shot(page, "session-page-markdown");
    },
    TEST_MS,
  );
});
