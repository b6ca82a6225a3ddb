import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";
import { startMain } from "./helpers/main-process.ts";
import { until as waitUntil } from "./helpers/wait.ts";

/** The real entry point (`npm start`) as a child process, in feishu mode against the emulator over webhooks. */

const ALICE = "ou_alice000000000000000000000000000";
const ENCRYPT_KEY = "test-encrypt-key-123";
const running: { child?: ChildProcess; emulator?: Emulator }[] = [];

afterEach(async () => {
  for (const { child, emulator } of running.splice(0).reverse()) {
    child?.kill("SIGKILL");
    await emulator?.close();
  }
});

const until = <T>(probe: () => T | undefined | false, what: string, timeoutMs = 15_000): Promise<T> =>
  waitUntil(probe, what, timeoutMs, 20);

describe("npm start in feishu mode (webhook transport)", () => {
  it("serves the webhook: a signed message gets a progress card, a card submit is answered, a forged request gets 401", async () => {
    const emulator = await startEmulator({ encryptKey: ENCRYPT_KEY });
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-main-"));
    running.push({ emulator });
    const bot = await startMain({
      env: {
        LOG_LEVEL: "info",
        DATA_DIR: dataDir,
        FEISHU_APP_ID: emulator.appId,
        FEISHU_APP_SECRET: emulator.appSecret,
        FEISHU_DOMAIN: emulator.url,
        FEISHU_TRANSPORT: "webhook",
        FEISHU_ENCRYPT_KEY: ENCRYPT_KEY,
        AUTH_SECRET: "main-process-test-secret-0123456789",
        DEMO_STEP_MS: "10",
        CARD_PATCH_INTERVAL_MS: "200",
      },
    });
    running.push({ child: bot.child });
    const hook = `http://127.0.0.1:${bot.port}/feishu/events`;

    const message = emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "帮我部署" });
    const delivered = await emulator.deliverWebhook(hook, message);
    expect(delivered).toMatchObject({ status: 200, body: {} });
    const messageId = message.event.message.message_id;
    const cardId = await until(
      () =>
        emulator.messages.listMessages().find((m) => m.parentId === messageId && m.msgType === "interactive")
          ?.messageId,
      "the progress card",
    );
    const withForm = await until(() => {
      const content = emulator.messages.getMessage(cardId)?.content ?? "";
      return content.includes('"tag":"form"') && content;
    }, "the form on the card");
    const requestId = /"requestId":"([^"]+)"/.exec(withForm)?.[1] ?? "";
    const sessionId = /"sessionId":"([^"]+)"/.exec(withForm)?.[1] ?? "";

    const click = emulator.cardAction({
      messageId: cardId,
      operatorOpenId: ALICE,
      name: "ask0_submit",
      value: { kind: "feishu_ask", act: "submit", sessionId, requestId, sender: ALICE },
      formValue: { ask0_q0: "0", ask0_q1: ["2"] },
    });
    const answered = await emulator.deliverWebhook(hook, click);
    expect(answered.status).toBe(200);
    expect(answered.body).toMatchObject({ toast: { type: "success", content: "已提交" } });
    expect(answered.durationMs).toBeLessThan(3000);
    await until(
      () => emulator.messages.getMessage(cardId)?.content.includes('"template":"green"'),
      "the completed card",
    );

    const forged = await fetch(hook, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(message),
    });
    expect(forged.status).toBe(401);
    // The log line crosses the child's stdout pipe on its own schedule: the 401 may arrive first.
    await until(() => bot.output().includes("webhook request refused"), "the refusal in the log", 5000);

    // PORT=0 without PUBLIC_URL: /login's personal link names the port the bot got, never localhost:0.
    const login = emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "/login" });
    expect((await emulator.deliverWebhook(hook, login)).status).toBe(200);
    const reply = await until(
      () =>
        emulator.messages
          .listMessages()
          .find((m) => m.parentId === login.event.message.message_id && m.msgType === "text")?.content,
      "the /login reply",
    );
    expect(reply).toContain(`http://localhost:${bot.port}/auth/link?token=`);
    expect(bot.url).toBe(`http://localhost:${bot.port}`);
    expect(bot.output()).not.toContain("localhost:0");
  });

  it("refuses to start in webhook mode without an encrypt key, naming the variable", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
      env: {
        PATH: process.env.PATH ?? "",
        FEISHU_APP_ID: "cli_0123456789abcdef",
        FEISHU_APP_SECRET: "x",
        AUTH_SECRET: "0123456789abcdef0123456789abcdef",
        FEISHU_TRANSPORT: "webhook",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr?.on("data", (chunk) => {
      stderr += String(chunk);
    });
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect(code).toBe(1);
    expect(stderr).toContain("FEISHU_ENCRYPT_KEY: required with FEISHU_TRANSPORT=webhook");
  });
});
