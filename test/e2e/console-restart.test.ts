import type { ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Browser, Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMain } from "../helpers/main-process.ts";
import { launchBrowser, screenshot } from "./browser.ts";

/**
 * A console tab left open while `npm start` (local mode) is killed and started again on the same port and
 * DATA_DIR: the tab reconnects, still shows the chat, takes the resumed card's updates (the same question
 * again: asks are durable since issue 16, so the run resumes at the waiting call with the same request id),
 * answers it, and keeps logging the new process's calls — as a Feishu client does while a bot restarts.
 */

const ALICE = "ou_local_alice";
const CHAT = `oc_p2p_${ALICE}`;
const WAIT_MS = 20_000;

let browser: Browser;
let dataDir: string;
let port = 0;
const children: ChildProcess[] = [];

beforeAll(async () => {
  browser = await launchBrowser();
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-console-restart-"));
}, 30_000);

afterAll(async () => {
  await browser?.close();
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  fs.rmSync(dataDir, { recursive: true, force: true });
});

async function start(): Promise<ChildProcess> {
  // The first start takes any free port (PORT=0); the restart comes back on that one, since the open tab
  // reconnects to it, as a bot restarted by its supervisor on its configured port does.
  const bot = await startMain({
    env: {
      ...(port !== 0 ? { PORT: String(port) } : {}),
      DATA_DIR: dataDir,
      DEMO_STEP_MS: "50",
      CARD_PATCH_INTERVAL_MS: "200",
    },
    startMs: WAIT_MS,
  });
  children.push(bot.child);
  port = bot.port;
  return bot.child;
}

type Revision = { at: number; card: unknown };
const revisions = async (cardId: string): Promise<Revision[]> => {
  const response = await fetch(`http://127.0.0.1:${port}/console/api/messages/${cardId}/history`);
  return ((await response.json()) as { revisions: Revision[] }).revisions;
};
/** The request ids a card's forms wait on (their submit buttons carry them; a stacked form lists its asks). */
const requestIds = (card: unknown): string[] => {
  const json = JSON.stringify(card);
  const stacked = [...json.matchAll(/"stack":"([^"]+)"/g)].flatMap((match) =>
    (match[1] ?? "").split(" ").map((entry) => entry.slice(entry.indexOf(":") + 1)),
  );
  const own = [...json.matchAll(/"requestId":"([^"]+)"/g)].map((match) => match[1] ?? "");
  return [...new Set([...own, ...stacked])];
};

const messageRevs = async (): Promise<Map<string, number>> => {
  const response = await fetch(`http://127.0.0.1:${port}/console/api/messages?chatId=${CHAT}`);
  const body = (await response.json()) as { messages: { messageId: string; rev: number }[] };
  return new Map(body.messages.map((message) => [message.messageId, message.rev]));
};

/** Fills a demo form (whichever of its two questions it holds) and submits it; the toast's text. */
/** Fills the form (`only: "single"`: just its single-choice question) and submits it; returns the toast. */
async function answer(page: Page, form: Locator, only?: "single"): Promise<string | undefined> {
  const single = form.locator('[data-testid="form-field"][data-tag="select_static"]');
  if ((await single.count()) > 0) await single.selectOption({ label: "systemd" });
  const multi = form.locator('[data-testid="form-field"][data-tag="multi_select_static"]');
  if ((await multi.count()) > 0 && only !== "single")
    await multi.getByRole("checkbox", { name: "多语言" }).check();
  const answered = page.waitForResponse((response) => response.url().endsWith("/console/api/actions"));
  await form.getByTestId("submit-button").click();
  const body = (await (await answered).json()) as { toast?: { content?: string } | null };
  return body.toast?.content;
}

describe("a console tab across a restart of local mode", () => {
  it("reconnects, shows the resumed card, answers its question and logs the new calls", async () => {
    const first = await start();
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, locale: "zh-CN" });
    const scriptErrors: string[] = [];
    page.on("pageerror", (error) => scriptErrors.push(error.message));
    try {
      await page.goto(`http://localhost:${port}/console#user=${ALICE}&chat=${CHAT}`);
      const connection = page.locator('[data-testid="connection-status"]');
      await page
        .locator('[data-testid="connection-status"][data-state="open"]')
        .waitFor({ timeout: WAIT_MS });
      // Two questions, one answered before the kill: the card has had several versions by then, more than
      // the restarted process gives it before the tab reconnects (a renumbering would hide its updates).
      await page.getByTestId("composer-input").fill("/parallel 帮我部署");
      await page.getByTestId("composer-input").press("Enter");
      const card = page.locator('[data-testid="message"][data-sender-type="app"]').filter({
        has: page.getByTestId("card-form"),
      });
      await card.waitFor({ timeout: WAIT_MS });
      const cardId = await card.getAttribute("data-message-id");
      // /parallel's two asks share one form: answering only the first leaves the second, as typed, on the card.
      const submits = card.getByTestId("submit-button");
      await expect.poll(() => card.getByText("需要你的回答（2/2）").count(), { timeout: WAIT_MS }).toBe(1);
      expect(await submits.count()).toBe(1);
      // 附加功能 is question 2 on the card (numbered across both asks), and the toast says so.
      expect(await answer(page, card.getByTestId("card-form").first(), "single")).toBe(
        "第 2 题「附加功能」：请至少选择一项或填写其他",
      );
      await expect.poll(() => card.getByText("需要你的回答（2/2）").count(), { timeout: WAIT_MS }).toBe(0);
      const revBefore = Number(await card.getAttribute("data-rev"));
      const logged = async () => page.locator('[data-testid="log-entry"]').count();
      const callsBefore = await logged();
      // What every member sees once the bot's PATCH after the callback landed (the answer's card reached only
      // the clicker): the one ask still waiting.
      await expect
        .poll(async () => requestIds((await revisions(cardId ?? "")).at(-1)?.card).length, {
          timeout: WAIT_MS,
        })
        .toBe(1);
      const waitingBefore = requestIds((await revisions(cardId ?? "")).at(-1)?.card);

      const exited = new Promise((resolve) => first.once("exit", resolve));
      first.kill("SIGKILL");
      await exited;
      const restartedAt = Date.now();
      await expect.poll(() => connection.getAttribute("data-state"), { timeout: WAIT_MS }).toBe("retrying");
      await start();
      await page
        .locator('[data-testid="connection-status"][data-state="open"]')
        .waitFor({ timeout: WAIT_MS });

      // The same card (same message) in its newest version: the resumed run's question. A tab that kept the
      // copy from before the restart would miss the updates the new process makes to it.
      const resumed = page.locator(`[data-testid="message"][data-message-id="${cardId}"]`);
      await expect
        .poll(
          async () => {
            const server = (await messageRevs()).get(cardId ?? "");
            const shown = Number(await resumed.getAttribute("data-rev"));
            return (
              server !== undefined && shown === server && (await resumed.getByTestId("card-form").count()) > 0
            );
          },
          { timeout: WAIT_MS },
        )
        .toBe(true);
      expect(Number(await resumed.getAttribute("data-rev"))).toBeGreaterThan(revBefore);
      // The card's first update after the restart shows the question that was waiting, on the same request.
      const resumedRevision = (await revisions(cardId ?? "")).find((revision) => revision.at >= restartedAt);
      expect(requestIds(resumedRevision?.card)).toEqual(waitingBefore);
      await screenshot(page, "console-after-restart", `[data-testid="message"][data-message-id="${cardId}"]`);

      // The waiting question is answered in the tab, and the run completes without asking anything again.
      const forms = () => resumed.getByTestId("card-form").count();
      expect(await forms()).toBe(1);
      expect(await answer(page, resumed.getByTestId("card-form").first())).toBe("已提交");
      await expect.poll(forms, { timeout: WAIT_MS }).toBe(0);
      await resumed
        .locator('[data-testid="card-header"][data-template="green"]')
        .waitFor({ timeout: WAIT_MS });
      const askedAfter = (await revisions(cardId ?? ""))
        .filter((revision) => revision.at >= restartedAt)
        .flatMap((revision) => requestIds(revision.card));
      expect(new Set(askedAfter)).toEqual(new Set(waitingBefore));

      // Every call of the new process shows up in the tab's log, next to the ones it had: none is taken
      // for one it has already seen (the log numbers entries; a restart must not number from 1 again).
      const calls = await fetch(`http://127.0.0.1:${port}/console/api/calls`);
      const loggedNow = ((await calls.json()) as { entries: unknown[] }).entries.length;
      await expect.poll(logged, { timeout: WAIT_MS }).toBeGreaterThanOrEqual(callsBefore + loggedNow);
      expect(scriptErrors).toEqual([]);
    } finally {
      await page.close();
    }
  }, 90_000);
});
