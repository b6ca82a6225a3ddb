import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signToken } from "../../src/auth/token.ts";
import { SESSION_COOKIE } from "../../src/web/cookie.ts";
import { type AgentsRig, ALICE, QUESTION, RIG_AUTH_SECRET, startAgentsRig } from "../helpers/agents.ts";
import { launchBrowser, screenshot } from "./browser.ts";

/** The session page in a browser for an outside agent's task: what its person sees, and answering there. */

const WAIT_MS = 10_000;
let r: AgentsRig;
let browser: Browser;

beforeAll(async () => {
  [r, browser] = await Promise.all([startAgentsRig({ sessionPages: true }), launchBrowser()]);
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await r?.stop();
});

describe("an outside agent's task on the session page", () => {
  it("shows the agent, title, steps and status, and the answerer answers there", async () => {
    const token = r.token("CI bot", [ALICE]);
    const api = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${r.httpUrl}/api${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      return (await response.json()) as Record<string, unknown>;
    };
    const taskId = String((await api("POST", "/tasks", { to: ALICE, title: "Nightly release" })).task_id);
    await api("POST", `/tasks/${taskId}/steps`, { step: "Build", status: "done" });

    const context = await browser.newContext({ locale: "zh-CN" });
    await context.addCookies([
      {
        name: SESSION_COOKIE,
        value: signToken(RIG_AUTH_SECRET, ALICE, Date.now() + 60_000),
        url: r.httpUrl,
      },
    ]);
    const page = await context.newPage();
    const sessionId = encodeURIComponent(`agent:CI bot:${ALICE}`);
    await page.goto(`${r.httpUrl}/sessions/${sessionId}/runs/${encodeURIComponent(taskId)}`);
    await page.getByTestId("session").waitFor({ timeout: WAIT_MS });
    await expect.poll(() => page.getByTestId("session-title").textContent()).toContain("CI bot 的任务");
    await expect.poll(() => page.getByTestId("task-title").textContent()).toContain("Nightly release");
    await expect.poll(() => page.getByTestId("step").first().textContent()).toContain("Build");
    await expect.poll(() => page.getByTestId("status").getAttribute("data-status")).toBe("running");

    const askId = String((await api("POST", "/asks", { task_id: taskId, questions: [QUESTION] })).ask_id);
    const panel = page.getByTestId("ask-panel");
    await panel.waitFor({ timeout: WAIT_MS });
    await panel.locator('[data-testid="option"][data-label="SQLite"]').getByTestId("option-input").check();
    await panel.getByTestId("submit").click();
    await expect
      .poll(async () => (await api("GET", `/asks/${askId}`)).status, { timeout: WAIT_MS })
      .toBe("answered");
    expect(await api("GET", `/asks/${askId}`)).toMatchObject({ answers: [{ selectedLabels: ["SQLite"] }] });

    await api("POST", `/tasks/${taskId}/finish`, { status: "completed", text: "Shipped" });
    await expect
      .poll(() => page.getByTestId("status").getAttribute("data-status"), { timeout: WAIT_MS })
      .toBe("completed");
    await context.close();
  }, 60_000);

  it("offers the answerer 拒绝回答 and 延长 15 分钟 (no 取消任务), and the agent reads the decline", async () => {
    const token = r.token("CI bot", [ALICE]);
    const api = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${r.httpUrl}/api${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      return (await response.json()) as Record<string, unknown>;
    };
    const taskId = String((await api("POST", "/tasks", { to: ALICE, title: "Weekly report" })).task_id);
    const askId = String((await api("POST", "/asks", { task_id: taskId, questions: [QUESTION] })).ask_id);

    const context = await browser.newContext({ locale: "zh-CN", timezoneId: "America/New_York" });
    await context.addCookies([
      {
        name: SESSION_COOKIE,
        value: signToken(RIG_AUTH_SECRET, ALICE, Date.now() + 60_000),
        url: r.httpUrl,
      },
    ]);
    const page = await context.newPage();
    const sessionId = encodeURIComponent(`agent:CI bot:${ALICE}`);
    await page.goto(`${r.httpUrl}/sessions/${sessionId}/runs/${encodeURIComponent(taskId)}`);
    const panel = page.getByTestId("ask-panel");
    await panel.waitFor({ timeout: WAIT_MS });
    await page.getByTestId("ask-deadline").waitFor({ timeout: WAIT_MS });
    await expect(page.getByTestId("extend").isVisible()).resolves.toBe(true);
    // An outside agent's task is ended by its agent: no 取消任务 here, as on its card.
    await expect(page.getByTestId("cancel-task").isHidden()).resolves.toBe(true);
    const decline = panel.getByTestId("decline");
    await expect(decline.textContent()).resolves.toBe("拒绝回答");
    await screenshot(page, "agent-session-page-decline");

    const before = Date.parse((await page.locator("time").getAttribute("datetime")) ?? "");
    await page.getByTestId("extend").click();
    await expect
      .poll(async () => Date.parse((await page.locator("time").getAttribute("datetime")) ?? ""), {
        timeout: WAIT_MS,
      })
      .toBe(before + 15 * 60_000);

    await decline.click();
    await expect
      .poll(async () => (await api("GET", `/asks/${askId}`)).status, { timeout: WAIT_MS })
      .toBe("declined");
    expect(await api("GET", `/asks/${askId}`)).toMatchObject({
      declined_by: ALICE,
      declined_via: "websocket",
    });
    await expect.poll(() => page.getByTestId("ask-panel").count(), { timeout: WAIT_MS }).toBe(0);
    await expect(page.getByTestId("ask-notice").last().textContent()).resolves.toBe("已拒绝回答");
    await context.close();
  }, 60_000);
});
