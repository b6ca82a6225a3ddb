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
 * The console as a person on a laptop half-screen or a phone sees it: `npm start` in local mode as a child
 * process, a real browser at 800 and 400 px. Nothing may be wider than the window, the composer must work,
 * and the API log must fold out each call's bodies with secrets redacted.
 */

const WAIT_MS = 10_000;
const ALICE = "ou_local_alice";
const CAROL = "ou_local_carol";

let bot: { child: ChildProcess; baseUrl: string; dataDir: string };
let browser: Browser;

beforeAll(async () => {
  const [started, launched] = await Promise.allSettled([startBot(), launchBrowser()]);
  if (started.status === "fulfilled") bot = started.value;
  if (launched.status === "fulfilled") browser = launched.value;
  for (const outcome of [started, launched]) if (outcome.status === "rejected") throw outcome.reason;
}, 30_000);

afterAll(async () => {
  await browser?.close();
  if (bot) {
    bot.child.kill("SIGTERM");
    fs.rmSync(bot.dataDir, { recursive: true, force: true });
  }
});

/** On PORT=0: the listening line names the port, and the URL cards link to (PUBLIC_URL's default follows it). */
async function startBot(): Promise<typeof bot> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-layout-e2e-"));
  const started = await startMain({ env: { DATA_DIR: dataDir, DEMO_STEP_MS: "20" } });
  // The console runs on the same origin as the card links.
  return { child: started.child, baseUrl: started.url, dataDir };
}

async function openConsole(width: number, user = ALICE): Promise<Page> {
  const page = await browser.newPage({ viewport: { width, height: 800 }, locale: "zh-CN" });
  await page.goto(`${bot.baseUrl}/console#user=${user}&chat=oc_p2p_${user}`);
  await page.locator('[data-testid="connection-status"][data-state="open"]').waitFor({ timeout: WAIT_MS });
  return page;
}

/**
 * Runs in the page (a string: the tests compile without the DOM library). The page's scroll width, and the
 * elements sticking out past the window's right edge outside any box that scrolls or clips them.
 */
const MEASURE = `(() => {
  const clipped = (el) => {
    for (let p = el.parentElement; p; p = p.parentElement) {
      const x = getComputedStyle(p).overflowX;
      if (x === "auto" || x === "hidden" || x === "scroll") return p.getBoundingClientRect().right <= innerWidth + 1;
    }
    return false;
  };
  // HTML boxes only: an icon's shapes are clipped by its own <svg>.
  const wide = [...document.querySelectorAll("body *")]
    .filter((el) => el instanceof HTMLElement)
    .filter((el) => el.getBoundingClientRect().right > innerWidth + 1 && !clipped(el))
    .map((el) => el.tagName.toLowerCase() + "." + el.className);
  const root = document.documentElement;
  return JSON.stringify({ scroll: root.scrollWidth, client: root.clientWidth, wide });
})()`;
const measured = z.object({ scroll: z.number(), client: z.number(), wide: z.array(z.string()) });

async function measure(page: Page) {
  return measured.parse(JSON.parse(z.string().parse(await page.evaluate(MEASURE))));
}

describe("the console in a narrow window", () => {
  it.each([800, 400])(
    "at %i px: nothing wider than the window, and the composer sends a task",
    async (width) => {
      const page = await openConsole(width);
      const input = page.getByTestId("composer-input");
      const send = page.getByTestId("composer-send");
      for (const control of [input, send]) {
        const box = await control.boundingBox();
        expect(box, "composer control on screen").not.toBeNull();
        expect((box?.x ?? 0) + (box?.width ?? 0)).toBeLessThanOrEqual(width);
      }
      await input.fill(`/quick ${width}`);
      await send.click();
      // The demo answers on a card, which must fit too.
      await page.getByTestId("card").filter({ hasText: "只执行了一步" }).last().waitFor({ timeout: WAIT_MS });
      await screenshot(page, `console-${width}px`);
      const sizes = await measure(page);
      expect(sizes.scroll).toBeLessThanOrEqual(sizes.client);
      expect(sizes.wide).toEqual([]);
      await page.close();
    },
  );
});

describe("the console's API log", () => {
  it("folds out a call's headers and bodies, with the app secret, tokens and Authorization redacted", async () => {
    const page = await openConsole(1280);
    await page.getByTestId("composer-input").fill("/quick");
    await page.getByTestId("composer-send").click();
    const patch = page.locator('[data-testid="log-entry"][data-method="PATCH"]').first();
    await patch.waitFor({ timeout: WAIT_MS });
    const details = patch.getByTestId("log-details");
    await expect.poll(() => details.getByTestId("log-body").first().isVisible()).toBe(false);
    await details.locator("summary").click();
    const bodies = await details.getByTestId("log-body").allTextContents();
    expect(bodies.join("\n")).toContain("Bearer [redacted]");
    expect(bodies.join("\n")).toContain('"schema": "2.0"');
    // Opening the bodies does not jump to the card the line links to (which would scroll the chat away).
    expect(await page.locator(".is-flash").count()).toBe(0);

    const auth = page.locator('[data-testid="log-entry"]').filter({ hasText: "tenant_access_token" });
    await auth.getByTestId("log-details").locator("summary").click();
    const authText = (await auth.getByTestId("log-body").allTextContents()).join("\n");
    expect(authText).toContain('"app_secret": "[redacted]"');
    expect(authText).toContain('"tenant_access_token": "[redacted]"');
    const all = await page.getByTestId("call-log").textContent();
    expect(all).not.toContain("emulator-secret");
    expect(all).not.toMatch(/t-[0-9a-f]{20,}/);
    await screenshot(page, "console-log-bodies", '[data-testid="call-log"]');
    await page.close();
  });
});

describe("icons without an emoji font", () => {
  it("draws step icons and avatars as SVG on the console and the session page, not as emoji", async () => {
    const page = await openConsole(1280, CAROL);
    await page.getByTestId("composer-input").fill("/fail");
    await page.getByTestId("composer-send").click();
    const card = page.getByTestId("card").filter({ hasText: "/fail 命令模拟的错误" }).last();
    await card.waitFor({ timeout: WAIT_MS });
    // The card JSON keeps ✅ (Feishu draws it); the console shows it as an icon.
    await expect.poll(() => card.locator('svg[data-icon="done"]').count(), { timeout: WAIT_MS }).toBe(1);
    expect(await card.textContent()).not.toMatch(/[✅❌⏳]/u);
    expect(await page.locator('.avatar-bot svg[data-icon="bot"]').count()).toBeGreaterThan(0);
    // Both group chats (本地测试群 and the topic group 本地话题群) have the group icon.
    expect(await page.locator('.avatar-group svg[data-icon="group"]').count()).toBe(2);
    expect(await page.locator(".chat-list, .messages").first().textContent()).not.toMatch(/🤖/u);

    const opened = page.context().waitForEvent("page", { timeout: WAIT_MS });
    await card.getByTestId("card-button").filter({ hasText: "会话详情" }).click();
    const session = await opened;
    await session.waitForURL(/\/sessions\//, { timeout: WAIT_MS });
    const sessionPath = new URL(session.url()).pathname;
    await session.goto(`${bot.baseUrl}/auth/local?user=${CAROL}&next=${encodeURIComponent(sessionPath)}`);
    const steps = session.getByTestId("step");
    await steps.first().waitFor({ timeout: WAIT_MS });
    expect(await steps.first().locator('svg[data-icon="done"]').count()).toBe(1);
    expect(await session.getByTestId("steps").textContent()).not.toMatch(/[✅❌⏳]/u);
    await screenshot(session, "session-page-icons");
    await page.close();
  });
});

describe("the console's language switch (issue 19)", () => {
  it("shows the same bilingual card in English after the switch, and English toasts for its clicks", async () => {
    const page = await openConsole(1280, CAROL);
    await page.evaluate("localStorage.removeItem('fpb-console-locale')");
    await page.getByTestId("composer-input").fill("部署 language switch");
    await page.getByTestId("composer-send").click();
    const card = page.getByTestId("card").filter({ hasText: "language switch" }).last();
    // Once the question's form is on the card (before it, the card only says it is running).
    await card.getByTestId("submit-button").filter({ hasText: "提交" }).waitFor({ timeout: WAIT_MS });
    const language = page.getByTestId("language-switch");
    expect(await language.textContent()).toBe("中文");

    await language.click();
    expect(await language.textContent()).toBe("English");
    const cancel = card.getByTestId("card-button").filter({ hasText: "Cancel task" });
    await cancel.waitFor({ timeout: WAIT_MS });
    expect(await card.textContent()).toContain("Your answer is needed");
    expect(await card.textContent()).not.toContain("取消任务");
    await screenshot(page, "console-english-card", '[data-testid="message-list"]');

    await cancel.click();
    // 取消任务 asks first (its documented confirm dialog), in the viewer's language.
    const dialog = page.getByTestId("confirm-dialog");
    await dialog.waitFor({ timeout: WAIT_MS });
    expect(await dialog.textContent()).toContain("Cancel the task?");
    await dialog.getByTestId("confirm-ok").click();
    await page.getByTestId("toast").filter({ hasText: "Task cancelled" }).waitFor({ timeout: WAIT_MS });
    await card.getByTestId("card-button").filter({ hasText: "Retry" }).waitFor({ timeout: WAIT_MS });

    // The choice stays across a reload, and switching back shows Chinese again.
    await page.reload();
    await page.locator('[data-testid="connection-status"][data-state="open"]').waitFor({ timeout: WAIT_MS });
    expect(await page.getByTestId("language-switch").textContent()).toBe("English");
    await page.getByTestId("language-switch").click();
    const again = page.getByTestId("card").filter({ hasText: "language switch" }).last();
    await again.getByTestId("card-button").filter({ hasText: "重试" }).waitFor({ timeout: WAIT_MS });
    await page.close();
  });
});
