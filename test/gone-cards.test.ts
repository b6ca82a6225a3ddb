import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { AskOutcome } from "../src/asks/pending.ts";
import { feishuPrivateSessionId } from "../src/domain/session-id.ts";
import { openDatabase } from "../src/store/db.ts";
import { FeishuStore } from "../src/store/feishu.ts";
import { strings } from "../src/strings/index.ts";
import { FakeMessenger } from "../src/testing/fake-messenger.ts";
import { type FakeChannelRig, startFakeChannel } from "./helpers/fake-channel.ts";
import { formsOn } from "./helpers/feishu.ts";

/**
 * A run whose progress card is gone for good (recalled 230011, deleted 230110, unknown to the platform
 * 230001) must not hold its chat: its questions end, the run fails with a new reply in the chat saying so,
 * and the next message runs at once — not after the ask's 15 minutes. On the fake messenger and fake time.
 */

const ALICE = "ou_alice000000000000000000000000000";
const FIFTEEN_MIN_MS = 15 * 60_000;

const rigs: FakeChannelRig[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
  for (const cleanup of cleanups.splice(0)) await cleanup();
  vi.useRealTimers();
});

async function rig(options: Parameters<typeof startFakeChannel>[0] = {}): Promise<FakeChannelRig> {
  const started = await startFakeChannel({ askTimeoutMs: FIFTEEN_MIN_MS, ...options });
  rigs.push(started);
  return started;
}

async function cardWithForm(
  r: FakeChannelRig,
  text = "帮我部署",
): Promise<{ userMessageId: string; cardId: string }> {
  const userMessageId = r.send({ chatType: "p2p", senderOpenId: ALICE, text });
  const cardId = await r.progressCard(userMessageId);
  await r.until(() => formsOn(r.cardOf(cardId)).length > 0, "a form on the card");
  await r.idle();
  return { userMessageId, cardId };
}

/** The bot's text reply to a message that says its card is gone, if there is one yet. */
function goneNotice(fake: FakeMessenger, messageId?: string): string | undefined {
  return fake
    .messages()
    .find(
      (m) =>
        (messageId === undefined || m.parentId === messageId) &&
        m.senderType === "app" &&
        m.msgType === "text" &&
        m.content.includes("已被撤回或删除"),
    )?.content;
}

const sessionId = (r: FakeChannelRig) => feishuPrivateSessionId(r.fake.appId, ALICE);

describe("a run whose card is gone", () => {
  it("recalled mid-ask: the question ends, the chat is told, and the next message starts at once", async () => {
    const r = await rig();
    const first = await cardWithForm(r);
    const [ask] = r.core.registry.getPendingForSession(sessionId(r));
    const firstRunId = r.core.runner.activeRun(sessionId(r))?.id ?? "";
    r.fake.recallMessage(first.cardId);

    r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/quick" });
    // Handled now, long before the 15-minute ask timeout: the queued message becomes the session's run.
    await r.until(
      async () => (await r.core.store.latestRun(sessionId(r)))?.input === "/quick",
      "the second task to start",
    );
    expect(ask && r.core.registry.get(ask.requestId)).toBeUndefined();
    expect(await r.core.store.getRun(firstRunId)).toMatchObject({
      status: "failed",
      error: strings.feishu.cardGoneError,
    });
    expect(await r.until(() => goneNotice(r.fake, first.userMessageId), "the notice")).toContain(
      "任务已停止",
    );
    await r.until(
      async () => (await r.core.store.latestRun(sessionId(r)))?.status === "completed",
      "the second task done",
    );
  });

  it("recalled with nothing queued: the question ends for every surface, and the run is not left waiting", async () => {
    const r = await rig();
    const first = await cardWithForm(r);
    // What the hub tells desktop clients (ask_user_questions_cancelled, test/ws-hub.test.ts) follows this.
    const settled: AskOutcome[] = [];
    r.core.registry.on("settled", ({ outcome }) => settled.push(outcome));
    r.fake.recallMessage(first.cardId);
    // No PATCH goes out while the form is open; the next message is what finds the card gone.
    r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/quick" });
    await r.until(() => settled.length > 0, "the question to end");
    expect(settled).toEqual([{ kind: "cancelled", reason: strings.feishu.cardGoneError }]);
    expect(r.fake.codesOf("messageStatus", first.cardId)).toEqual([0]);
  });

  it("deleted (230110) at a PATCH: the run fails visibly instead of going on unseen", async () => {
    const r = await rig({ stepMs: 30 });
    const userMessageId = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/long" });
    const cardId = await r.progressCard(userMessageId);
    r.fake.fail({
      method: "patchCard",
      messageId: cardId,
      times: Number.POSITIVE_INFINITY,
      response: { code: 230110, msg: "the message was deleted" },
    });
    await r.until(() => goneNotice(r.fake, userMessageId), "the notice");
    await r.until(() => r.core.runner.activeRun(sessionId(r)) === undefined, "the run to end");
    expect(await r.core.store.latestRun(sessionId(r))).toMatchObject({ status: "failed" });
    // One refused PATCH proves it: publishing stopped there.
    expect(r.fake.codesOf("patchCard", cardId).filter((code) => code === 230110)).toHaveLength(1);
  });

  it("a lookup that fails for another reason (HTTP 500) proves nothing: the question stays open", async () => {
    const r = await rig();
    await cardWithForm(r);
    const lookups = r.fake.fail({
      method: "messageStatus",
      response: { httpStatus: 500, msg: "internal error" },
    });
    r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/quick" });
    await r.until(() => lookups.remaining === 0, "the failed lookup");
    await r.idle();
    expect(r.core.registry.getPendingForSession(sessionId(r))).toHaveLength(1);
    expect(r.core.runner.activeRun(sessionId(r))?.status).toBe("running");
  });

  it("recorded as gone by a process that died before ending its run: the resumed run ends visibly", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-gone-"));
    cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    const fake = new FakeMessenger({ timeoutMs: 5000 });
    const before = await startFakeChannel({ askTimeoutMs: FIFTEEN_MIN_MS, dataDir, fake });
    const first = await cardWithForm(before);
    const runId = before.core.runner.activeRun(sessionId(before))?.id ?? "";
    await before.stop();
    const db = openDatabase(path.join(dataDir, "bot.sqlite"));
    await FeishuStore.onFile(db, Date.now).markCardGone(runId);
    db.close();

    const after = await rig({ dataDir, fake, recover: true });
    expect(await after.until(() => goneNotice(fake, first.userMessageId), "the notice")).toContain(
      "任务已停止",
    );
    await after.until(
      async () => (await after.core.store.getRun(runId))?.status === "failed",
      "the resumed run to end",
    );
    expect(after.core.registry.getPendingForSession(sessionId(after))).toEqual([]);
  });

  it("unknown to the platform after a restart (230001): the resumed run ends and the chat is told", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-gone-"));
    cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    const before = await startFakeChannel({ askTimeoutMs: FIFTEEN_MIN_MS, dataDir });
    await cardWithForm(before);
    await before.stop();

    // A Feishu that never saw that card (as local mode's emulator was before it kept its state).
    const fake = new FakeMessenger({ timeoutMs: 5000 });
    const after = await rig({ dataDir, fake, recover: true });
    // The message that started the task is unknown here too, so the notice goes to the chat itself.
    expect(await after.until(() => goneNotice(fake), "the notice in the chat")).toContain("任务已停止");
    expect(after.core.registry.getPendingForSession(sessionId(after))).toEqual([]);
    after.send({ chatType: "p2p", senderOpenId: ALICE, text: "/quick" });
    await after.until(
      async () => (await after.core.store.latestRun(sessionId(after)))?.status === "completed",
      "the next task to run and finish",
    );
  });
});
