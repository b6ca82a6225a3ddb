import { afterEach, describe, expect, it, vi } from "vitest";
import { AskRegistry } from "../src/asks/registry.ts";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";
import { AskStore } from "../src/store/asks.ts";
import { openDatabase } from "../src/store/db.ts";
import { FeishuStore } from "../src/store/feishu.ts";
import { sqliteSql } from "../src/store/sql.ts";
import { strings } from "../src/strings/index.ts";
import {
  FAST_LONG_CONNECTION,
  type FeishuRig,
  requestIdsOn,
  startFeishuRig,
  WEBHOOK_KEY,
} from "./helpers/feishu.ts";

/**
 * The @-ping and the expiry reminder end with their question across a restart (issue 25): the messages sent
 * before it are recorded, so the bot after it edits them once their question is answered or expires, and
 * edits at start those whose question ended while it was down. Over the SDK and the emulator, which stays up
 * across the restart as Feishu does.
 */

const ALICE = "ou_alice000000000000000000000000000";
const GROUP = "oc_team";
const MIN = 60_000;

const rigs: FeishuRig[] = [];
const emulators: Emulator[] = [];
afterEach(async () => {
  // Stopping waits for the cards' last PATCHes, which wait on timers (fake ones in the deadline case).
  for (const r of rigs.splice(0)) {
    let done = false;
    const stopped = r.stop().then(() => {
      done = true;
    });
    if (vi.isFakeTimers())
      for (let second = 0; second < 60 && !done; second += 1) await vi.advanceTimersByTimeAsync(1000);
    await stopped;
  }
  for (const emulator of emulators.splice(0)) await emulator.close();
  vi.useRealTimers();
});

async function emulator(): Promise<Emulator> {
  const started = await startEmulator({ encryptKey: WEBHOOK_KEY, longConnection: FAST_LONG_CONNECTION });
  emulators.push(started);
  return started;
}

async function rig(options: Parameters<typeof startFeishuRig>[0]): Promise<FeishuRig> {
  const started = await startFeishuRig(options);
  rigs.push(started);
  return started;
}

/** The bot's text messages in the group (its @-ping and reminders), oldest first, as their text. */
function botTexts(r: FeishuRig): { messageId: string; text: string; edits: number }[] {
  return r.emulator.messages
    .listMessages(GROUP)
    .filter((m) => m.msgType === "text" && m.senderType === "app")
    .map((m) => ({
      messageId: m.messageId,
      text: (JSON.parse(m.content) as { text: string }).text,
      edits: m.edits ?? 0,
    }));
}

/** A group task waiting on its question, with its @-ping out. */
async function waitingInGroup(r: FeishuRig) {
  const userMessageId = await r.send({
    chatId: GROUP,
    chatType: "group",
    senderOpenId: ALICE,
    text: "帮我部署",
    mentionBot: true,
  });
  const cardId = await r.progressCard(userMessageId);
  const requestId = await r.until(() => requestIdsOn(r.cardOf(cardId))[0], "a form");
  const ask = r.core.registry.get(requestId);
  if (!ask) throw new Error("no pending ask");
  const ping = await r.until(() => botTexts(r)[0], "the @-ping");
  expect(ping.text).toContain(strings.feishu.askPing(ask.questions.length));
  return { cardId, requestId, ask };
}

describe("the @-ping and the reminder across a restart", () => {
  it("answered after the restart: the ping sent before it is edited to say who answered", async () => {
    const platform = await emulator();
    const first = await rig({ emulator: platform });
    const { cardId, requestId, ask } = await waitingInGroup(first);
    await first.channel.idle();
    await first.stop();
    rigs.splice(rigs.indexOf(first), 1);

    const second = await rig({ emulator: platform, dataDir: first.dataDir, recover: true });
    await second.until(
      () => requestIdsOn(second.cardOf(cardId))[0] === requestId,
      "the form after the restart",
    );
    const answered = await second.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: { kind: "feishu_ask", act: "submit", sessionId: ask.sessionId, requestId, sender: ALICE },
      name: "ask0_submit",
      formValue: { ask0_q0: "0", ask0_q1: ["0"] },
    });
    expect(answered.toast?.type).toBe("success");
    await second.until(
      () => botTexts(second)[0]?.text === `问题已由 <at user_id="${ALICE}"></at> 回答`,
      "the ping edited",
    );
    await second.channel.idle();
    // Edited once, never recalled, and nothing more was sent: the record went with the edit.
    expect(botTexts(second).map((m) => m.edits)).toEqual([1]);
    expect(platform.messages.listMessages(GROUP).some((m) => m.recalled)).toBe(false);
    const db = openDatabase(second.dbFile);
    expect(await FeishuStore.onFile(db, Date.now).pingsSince(0)).toEqual([]);
    db.close();
  });

  it("expired after the restart: the ping and the reminder sent before it say the question expired", async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true, toFake: ["setTimeout", "clearTimeout", "Date"] });
    vi.setSystemTime(new Date("2026-12-01T07:00:00Z"));
    const platform = await emulator();
    const first = await rig({ emulator: platform, askTimeoutMs: 15 * MIN });
    const { requestId } = await waitingInGroup(first);
    // Five minutes before the deadline the reminder goes out too.
    vi.advanceTimersByTime(10 * MIN + 1_000);
    await first.until(() => botTexts(first)[1], "the expiry reminder");
    await first.channel.idle();
    const stopped = first.stop();
    for (let second = 0; second < 60; second += 1) await vi.advanceTimersByTimeAsync(100);
    await stopped;
    rigs.splice(rigs.indexOf(first), 1);

    const second = await rig({
      emulator: platform,
      dataDir: first.dataDir,
      askTimeoutMs: 15 * MIN,
      recover: true,
    });
    expect(second.core.registry.get(requestId)).toBeDefined();
    vi.advanceTimersByTime(5 * MIN);
    await second.until(
      async () => (await second.core.registry.state(requestId))?.status === "timeout",
      "the timeout",
    );
    const expired = strings.asks.goneLine(strings.asks.gone.timeout);
    await second.until(
      () => botTexts(second).length === 2 && botTexts(second).every((m) => m.text === expired),
      "both messages edited",
    );
  });

  it("answered while the bot was down: the ping is edited as the bot starts again", async () => {
    const platform = await emulator();
    const first = await rig({ emulator: platform });
    const { requestId, ask } = await waitingInGroup(first);
    await first.channel.idle();
    await first.stop();
    rigs.splice(rigs.indexOf(first), 1);

    // Another instance over the same file (the session page it serves) takes the answer meanwhile.
    const db = openDatabase(first.dbFile);
    const other = new AskRegistry({
      timeoutMs: MIN,
      now: Date.now,
      newId: () => "unused",
      onListenerError: (error) => {
        throw error;
      },
      store: new AskStore(sqliteSql(db)),
    });
    await other.restore();
    const answers = ask.questions.map((q) => ({
      question: q.question,
      selectedLabels: [q.options[0]?.label ?? ""],
      customInput: null,
    }));
    expect(
      await other.complete(ask.sessionId, requestId, answers, { surface: "websocket", userId: ALICE }),
    ).toEqual({ ok: true });
    db.close();

    const second = await rig({ emulator: platform, dataDir: first.dataDir, recover: true });
    await second.until(
      () => botTexts(second)[0]?.text === `问题已由 <at user_id="${ALICE}"></at> 在网页端回答`,
      "the ping edited at start",
    );
  });
});
