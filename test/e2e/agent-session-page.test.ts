import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signToken } from "../../src/auth/token.ts";
import { SESSION_COOKIE } from "../../src/web/cookie.ts";
import { type AgentsRig, ALICE, QUESTION, RIG_AUTH_SECRET, startAgentsRig } from "../helpers/agents.ts";
import { launchBrowser } from "./browser.ts";

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
});
