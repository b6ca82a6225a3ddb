import type { ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";
import { ACP_FIXTURE, TSX_LOADER } from "./helpers/acp.ts";
import { startMain } from "./helpers/main-process.ts";
import { until as waitUntil } from "./helpers/wait.ts";

/** `npm start` with AGENT=acp and the scripted ACP agent, in feishu mode against the emulator over webhooks. */

const ALICE = "ou_alice000000000000000000000000000";
const BOB = "ou_bob00000000000000000000000000000";
const ENCRYPT_KEY = "test-encrypt-key-123";
const running: { child?: ChildProcess; emulator: Emulator }[] = [];

afterEach(async () => {
  for (const { child, emulator } of running.splice(0)) {
    child?.kill("SIGKILL");
    await emulator.close();
  }
});

const until = <T>(probe: () => T | undefined | false, what: string, timeoutMs = 20_000): Promise<T> =>
  waitUntil(probe, what, timeoutMs, 20);

describe("npm start with AGENT=acp", () => {
  it("shows the agent's work on the card, takes the permission answer from the sender only, and lands the answer", async () => {
    const emulator = await startEmulator({ encryptKey: ENCRYPT_KEY });
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-acp-main-"));
    const entry: { child?: ChildProcess; emulator: Emulator } = { emulator };
    running.push(entry);
    const bot = await startMain({
      env: {
        LOG_LEVEL: "info",
        DATA_DIR: dataDir,
        FEISHU_APP_ID: emulator.appId,
        FEISHU_APP_SECRET: emulator.appSecret,
        FEISHU_DOMAIN: emulator.url,
        FEISHU_TRANSPORT: "webhook",
        FEISHU_ENCRYPT_KEY: ENCRYPT_KEY,
        AUTH_SECRET: "acp-main-process-test-secret-0123456789",
        CARD_PATCH_INTERVAL_MS: "200",
        AGENT: "acp",
        ACP_COMMAND: process.execPath,
        ACP_ARGS: JSON.stringify(["--import", TSX_LOADER, ACP_FIXTURE]),
      },
    });
    entry.child = bot.child;
    const hook = `http://127.0.0.1:${bot.port}/feishu/events`;
    const cardOf = (id: string) => emulator.messages.getMessage(id)?.content ?? "";

    const message = emulator.userMessage({
      chatType: "group",
      chatId: "oc_acp_main",
      mentionBot: true,
      senderOpenId: ALICE,
      text: "/perm",
    });
    expect((await emulator.deliverWebhook(hook, message)).status).toBe(200);
    const messageId = message.event.message.message_id;
    const cardId = await until(
      () =>
        emulator.messages.listMessages().find((m) => m.parentId === messageId && m.msgType === "interactive")
          ?.messageId,
      "the progress card",
    );
    const withForm = await until(() => cardOf(cardId).includes('"tag":"form"') && cardOf(cardId), "the form");
    expect(withForm).toContain("编辑 · Edit notes.md");
    const requestId = /"requestId":"([^"]+)"/.exec(withForm)?.[1] ?? "";
    const sessionId = /"sessionId":"([^"]+)"/.exec(withForm)?.[1] ?? "";
    const click = (operator: string) =>
      emulator.deliverWebhook(
        hook,
        emulator.cardAction({
          messageId: cardId,
          operatorOpenId: operator,
          name: "ask0_submit",
          value: { kind: "feishu_ask", act: "submit", sessionId, requestId, sender: ALICE },
          formValue: { ask0_q0: "0", ask0_c0: "" },
        }),
      );
    // This emulator's directory names nobody: the refusal says whose question it is without a name.
    expect((await click(BOB)).body).toMatchObject({ toast: { content: "仅任务发起人可以回答此问题" } });
    expect((await click(ALICE)).body).toMatchObject({ toast: { type: "success", content: "已提交" } });
    await until(() => cardOf(cardId).includes('"template":"green"'), "the completed card");
    expect(cardOf(cardId)).toContain("权限结果: selected allow");

    await bot.stop();
    expect(bot.output()).toContain("shutting down");
  });
});
