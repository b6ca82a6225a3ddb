import type { ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMain } from "../helpers/main-process.ts";
import { launchBrowser } from "./browser.ts";

/**
 * Local mode as a person connecting an agent: `npm start`'s entry point, the console's 连接外部 Agent panel
 * read in a real browser, its token used by the official MCP client, the agent's card and form on the page,
 * answered there by clicking, and the answer back in the agent's tool result.
 */

const ALICE = "ou_local_alice";
const WAIT_MS = 10_000;
let bot: { child: ChildProcess; baseUrl: string; dataDir: string; output: () => string };
let browser: Browser;

beforeAll(async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-agent-e2e-"));
  // PORT=0: the listening line says which port the system gave (helpers/main-process.ts).
  const started = await startMain({ env: { DATA_DIR: dataDir, CARD_PATCH_INTERVAL_MS: "300" } });
  bot = { child: started.child, baseUrl: started.url, dataDir, output: started.output };
  // Debian's chromium when present, else the one inside @sparticuz/chromium (browser.ts; never a download).
  browser = await launchBrowser();
}, 40_000);

afterAll(async () => {
  await browser?.close();
  if (bot) {
    const exited = new Promise((resolve) => bot.child.once("exit", resolve));
    bot.child.kill("SIGTERM");
    await exited;
    fs.rmSync(bot.dataDir, { recursive: true, force: true });
  }
});

describe("the console's agent panel", () => {
  it("gives a token that connects an MCP client whose question is answered on the console's card", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${bot.baseUrl}/console#user=${ALICE}&chat=oc_p2p_${ALICE}`);
    await page.getByTestId("agent-setup").locator("summary").click();
    const claude = await page.getByTestId("agent-setup-claudeCode").textContent({ timeout: WAIT_MS });
    expect(claude).toMatch(/^claude mcp add --transport http feishu http:\/\/localhost:\d+\/mcp --header/);
    const token = (await page.getByTestId("agent-setup-token").textContent()) ?? "";

    const client = new Client({ name: "e2e-agent", version: "1.0.0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${bot.baseUrl}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } },
      }),
    );
    const answer = client.callTool({
      name: "ask_user_questions",
      arguments: {
        to: ALICE,
        reason: "Needed before the migration",
        wait_s: 30,
        questions: [
          {
            question: "Which database?",
            header: "DB",
            multiSelect: false,
            options: [
              { label: "Postgres", description: "Already running" },
              { label: "SQLite", description: "One file" },
            ],
          },
        ],
      },
    });
    const card = page
      .locator('[data-testid="message"][data-sender-type="app"]')
      .filter({ hasText: "Local Agent 正在处理…" });
    await card.getByText("提问原因：").waitFor({ timeout: WAIT_MS });
    await card
      .locator('[data-testid="form-field"][data-tag="select_static"]')
      .selectOption({ label: "SQLite" });
    await card.getByRole("button", { name: "提交" }).click();
    const result = await answer;
    expect(result.structuredContent).toMatchObject({
      status: "answered",
      answered_by: ALICE,
      answers: [{ question: "Which database?", selectedLabels: ["SQLite"] }],
    });
    await client.close();
  }, 45_000);
});
