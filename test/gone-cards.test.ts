import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { feishuPrivateSessionId } from "../src/harness/tools.ts";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";
import { openDatabase } from "../src/store/db.ts";
import { FeishuStore } from "../src/store/feishu.ts";
import { strings } from "../src/strings.ts";
import { type FeishuRig, formsOn, startFeishuRig, WEBHOOK_KEY } from "./helpers/feishu.ts";

/**
 * A run whose progress card is gone for good (recalled 230011, deleted 230110, unknown to the platform
 * 230001) must not hold its chat: its questions end, the run fails with a new reply in the chat saying so,
 * and the next message runs at once — not after the ask's 15 minutes.
 */

const ALICE = "ou_alice000000000000000000000000000";
const FIFTEEN_MIN_MS = 15 * 60_000;

const rigs: FeishuRig[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function rig(options: Parameters<typeof startFeishuRig>[0] = {}): Promise<FeishuRig> {
  const started = await startFeishuRig({ askTimeoutMs: FIFTEEN_MIN_MS, ...options });
  rigs.push(started);
  return started;
}

async function cardWithForm(
  r: FeishuRig,
  text = "帮我部署",
): Promise<{ userMessageId: string; cardId: string }> {
  const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text });
  const cardId = await r.progressCard(userMessageId);
  await r.until(() => formsOn(r.cardOf(cardId)).length > 0, "a form on the card");
  await r.channel.idle();
  return { userMessageId, cardId };
}

/** The bot's text reply to a message that says its card is gone, if there is one yet. */
function goneNotice(emulator: Emulator, messageId?: string): string | undefined {
  return emulator.messages
    .listMessages()
    .find(
      (m) =>
        (messageId === undefined || m.parentId === messageId) &&
        m.senderType === "app" &&
        m.msgType === "text" &&
        m.content.includes("已被撤回或删除"),
    )?.content;
}

const sessionId = (r: FeishuRig) => feishuPrivateSessionId(r.emulator.appId, ALICE);

describe("a run whose card is gone", () => {
  it("recalled mid-ask: the question ends, the chat is told, and the next message starts at once", async () => {
    const r = await rig();
    const first = await cardWithForm(r);
    const [ask] = r.core.registry.getPendingForSession(sessionId(r));
    const firstRunId = r.core.runner.activeRun(sessionId(r))?.id ?? "";
    r.emulator.recall(first.cardId);

    await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/quick" });
    // Handled now, long before the 15-minute ask timeout: the queued message becomes the session's run.
    await r.until(() => r.core.store.latestRun(sessionId(r))?.input === "/quick", "the second task to start");
    expect(ask && r.core.registry.get(ask.requestId)).toBeUndefined();
    expect(r.core.store.getRun(firstRunId)).toMatchObject({
      status: "failed",
      error: strings.feishu.cardGoneError,
    });
    expect(await r.until(() => goneNotice(r.emulator, first.userMessageId), "the notice")).toContain(
      "任务已停止",
    );
    await r.until(() => r.core.store.latestRun(sessionId(r))?.status === "completed", "the second task done");
  });

  it("recalled with nothing queued: a desktop client's question ends, and the run is not left waiting", async () => {
    const r = await rig({ withServer: true });
    const desktop = await r.connect(ALICE);
    const first = await cardWithForm(r);
    r.emulator.recall(first.cardId);
    // No PATCH goes out while the form is open; the next message is what finds the card gone.
    await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/quick" });
    await r.until(
      () => desktop.frames.find((frame) => frame.type === "ask_user_questions_cancelled"),
      "the desktop client told the question is gone",
    );
    desktop.close();
  });

  it("deleted (230110) at a PATCH: the run fails visibly instead of going on unseen", async () => {
    const r = await rig({ stepMs: 30 });
    const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/long" });
    const cardId = await r.progressCard(userMessageId);
    r.emulator.injectFault({
      match: { method: "PATCH", path: `/open-apis/im/v1/messages/${cardId}` },
      times: 1_000,
      response: { httpStatus: 400, code: 230110, msg: "the message was deleted" },
    });
    await r.until(() => goneNotice(r.emulator, userMessageId), "the notice");
    await r.until(() => r.core.runner.activeRun(sessionId(r)) === undefined, "the run to end");
    expect(r.core.store.latestRun(sessionId(r))).toMatchObject({ status: "failed" });
    r.emulator.clearFaults();
  });

  it("a lookup that fails for another reason (HTTP 500) proves nothing: the question stays open", async () => {
    const r = await rig();
    await cardWithForm(r);
    const lookups = r.emulator.injectFault({
      match: { method: "GET", path: "/open-apis/im/v1/messages/" },
      times: 1,
      response: { httpStatus: 500, msg: "internal error" },
    });
    await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/quick" });
    await r.until(() => lookups.remaining === 0, "the failed lookup");
    await r.channel.idle();
    expect(r.core.registry.getPendingForSession(sessionId(r))).toHaveLength(1);
    expect(r.core.runner.activeRun(sessionId(r))?.status).toBe("running");
  });

  it("recorded as gone by a process that died before ending its run: the resumed run ends visibly", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-gone-"));
    cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    const emulator = await startEmulator({ encryptKey: WEBHOOK_KEY });
    cleanups.push(() => emulator.close());
    const before = await startFeishuRig({ askTimeoutMs: FIFTEEN_MIN_MS, dataDir, emulator });
    const first = await cardWithForm(before);
    const runId = before.core.runner.activeRun(sessionId(before))?.id ?? "";
    await before.stop();
    const db = openDatabase(path.join(dataDir, "bot.sqlite"));
    new FeishuStore(db, Date.now).markCardGone(runId);
    db.close();

    const after = await rig({ dataDir, emulator, recover: true });
    expect(await after.until(() => goneNotice(emulator, first.userMessageId), "the notice")).toContain(
      "任务已停止",
    );
    await after.until(() => after.core.store.getRun(runId)?.status === "failed", "the resumed run to end");
    expect(after.core.registry.getPendingForSession(sessionId(after))).toEqual([]);
  });

  it("unknown to the platform after a restart (230001): the resumed run ends and the chat is told", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-gone-"));
    cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    const before = await startFeishuRig({ askTimeoutMs: FIFTEEN_MIN_MS, dataDir });
    await cardWithForm(before);
    await before.stop();

    // A Feishu that never saw that card (as local mode's emulator was before it kept its state).
    const emulator = await startEmulator({ encryptKey: WEBHOOK_KEY });
    cleanups.push(() => emulator.close());
    const after = await rig({ dataDir, emulator, recover: true });
    // The message that started the task is unknown here too, so the notice goes to the chat itself.
    expect(await after.until(() => goneNotice(emulator), "the notice in the chat")).toContain("任务已停止");
    expect(after.core.registry.getPendingForSession(sessionId(after))).toEqual([]);
    await after.send({ chatType: "p2p", senderOpenId: ALICE, text: "/quick" });
    await after.until(
      () => after.core.store.latestRun(sessionId(after))?.status === "completed",
      "the next task to run and finish",
    );
  });
});
