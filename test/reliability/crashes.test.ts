import { describe, expect, it } from "vitest";
import type { Card } from "../../src/cards/model.ts";
import type { CardActionInput, Emulator, MessageReceiveEvent } from "../../src/local/emulator/index.ts";
import { testRandom } from "../helpers/random.ts";
import {
  type BotProcess,
  cardOf,
  cardsReplyingTo,
  checkDatabase,
  query,
  tempDataDir,
} from "./helpers/bot-process.ts";
import { useCrashRig } from "./helpers/crash-rig.ts";
import { LONG, record, size, sleep, timeoutMs, until } from "./helpers/env.ts";
import { startSlowPath } from "./helpers/slow-path.ts";
import { ALICE, isCompleted, requestIdsOn, submitValue } from "./helpers/stack.ts";

/**
 * Crashes: the real entry point as a child process, killed with SIGKILL mid-ask and mid-run, then started
 * again on the same DATA_DIR. After the restart: queued messages run once, redelivered events start nothing,
 * and SQLite says the file is intact after every kill. A kill while a question waits: durable-crashes.test.ts
 * (the question survives it).
 */

const { emulator, bot, deliver, onCleanup } = useCrashRig();

/** A click as the Feishu client makes it: over the bot's webhook, the answer's card applied to the message. */
async function click(bot: BotProcess, emu: Emulator, input: CardActionInput) {
  emu.subscribe({ mode: "webhook", url: bot.hookUrl });
  const outcome = await emu.click(input, { timeoutMs: 10_000 });
  if (outcome.status !== 200) throw new Error(`the click failed: ${outcome.error}`);
  return outcome.answer as { toast?: { type: string; content: string }; card?: { data: Card } };
}

const sessionOf = (emu: Emulator, user = ALICE) => `feishu-${emu.appId}-private-${user}`;

interface RunRow {
  id: string;
  input: string;
  status: string;
}
const runsOf = (dataDir: string) =>
  query<RunRow>(dataDir, "SELECT id, input, status FROM runs ORDER BY started_at");

describe("kill -9 mid-run with messages queued", () => {
  it(
    "resumes the run, runs each queued message once, starts nothing for redeliveries, and keeps the file intact",
    async () => {
      const emu = await emulator();
      const dataDir = tempDataDir();
      const first = await bot({ emulator: emu, dataDir, env: { DEMO_STEP_MS: "100" } });
      const payloads = ["/long", "/quick 第二条", "/quick 第三条"].map((text) =>
        emu.userMessage({ chatType: "p2p", senderOpenId: ALICE, text }),
      );
      for (const payload of payloads) await deliver(first, emu, payload);
      const ids = payloads.map((p) => p.event.message.message_id);
      await until(
        () => cardsReplyingTo(emu, ids[2]!).length > 0,
        "the queued card of the third message",
        20_000,
      );
      const longCard = await until(() => cardsReplyingTo(emu, ids[0]!)[0], "the /long card", 20_000);
      await until(
        () => JSON.stringify(cardOf(emu, longCard)).includes("第 5/20"),
        "a few steps of /long",
        20_000,
      );

      await first.kill();
      expect(checkDatabase(dataDir)).toEqual({ integrity: "ok", foreignKeyViolations: 0 });
      expect(query<{ n: number }>(dataDir, "SELECT count(*) AS n FROM queued_messages")[0]?.n).toBe(2);

      const second = await bot({ emulator: emu, dataDir, env: { DEMO_STEP_MS: "20" } });
      // Feishu redelivers all three after the restart.
      for (const payload of payloads) await deliver(second, emu, payload);
      await until(
        () => {
          const runs = runsOf(dataDir);
          return runs.length === 3 && runs.every((r) => r.status === "completed") && runs;
        },
        "three completed runs",
        30_000,
      );
      await until(() => isCompleted(cardOf(emu, longCard)), "the /long card completed", 20_000);
      await sleep(500);
      await second.stop();

      expect(checkDatabase(dataDir)).toEqual({ integrity: "ok", foreignKeyViolations: 0 });
      const runs = runsOf(dataDir);
      expect(runs.map((r) => r.input)).toEqual(["/long", "/quick 第二条", "/quick 第三条"]);
      expect(query<{ n: number }>(dataDir, "SELECT count(*) AS n FROM queued_messages")[0]?.n).toBe(0);
      const inputs = query<{ content: string }>(
        dataDir,
        "SELECT content FROM messages WHERE role = 'user' ORDER BY id",
      );
      expect(inputs.map((m) => m.content)).toEqual(["/long", "/quick 第二条", "/quick 第三条"]);
      // One progress card for /long; a queued card plus a progress card for each queued message; no duplicates.
      expect(cardsReplyingTo(emu, ids[0]!)).toHaveLength(1);
      expect(cardsReplyingTo(emu, ids[1]!)).toHaveLength(2);
      expect(cardsReplyingTo(emu, ids[2]!)).toHaveLength(2);
      record("crashes: kill -9 mid-run with a queue", { runs: runs.length });
    },
    timeoutMs(60_000, 60_000),
  );
});

describe("kill -9 while the card's first reply is on its way", () => {
  // Found by this suite: a run whose card was being posted when the process died used to resume with no
  // card at all (its question refused, its answer shown to nobody, Feishu's card stuck at 执行中). The run now
  // keeps its source, and the resumed run replies again with the same uuid, which gives back that card.
  it(
    "gives the resumed run its card: the one Feishu created, updated to the final state",
    async () => {
      const emu = await emulator();
      const path = await startSlowPath(emu.url);
      onCleanup(() => path.close());
      const dataDir = tempDataDir();
      // /quick is one step: at 20 ms it can end before the kill lands (under load it did, and the card then
      // stayed at 执行中 with no run left to resume). A step that outlasts the test keeps the run going until
      // the kill; the second bot runs it at the default 20 ms.
      const first = await bot({ emulator: emu, dataDir, apiUrl: path.url, env: { DEMO_STEP_MS: "60000" } });
      path.hold({ method: "POST", path: /\/reply$/ }, 1500);
      const payload = emu.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "/quick 崩溃时的回复" });
      const messageId = payload.event.message.message_id;
      await deliver(first, emu, payload);
      await until(() => path.arrived.some((r) => r.path.endsWith("/reply")), "the reply on its way");
      await first.kill();
      // The case under test: the run was still going when the process died (its card not yet recorded).
      expect(runsOf(dataDir).map((r) => r.status)).toEqual(["running"]);
      await until(() => cardsReplyingTo(emu, messageId).length > 0, "Feishu to create the card anyway");
      const second = await bot({ emulator: emu, dataDir });
      await until(() => runsOf(dataDir)[0]?.status === "completed", "the resumed run to finish", 20_000);
      await second.stop();
      const cards = cardsReplyingTo(emu, messageId);
      expect(cards).toHaveLength(1);
      expect(isCompleted(cardOf(emu, cards[0]!))).toBe(true);
    },
    timeoutMs(60_000, 60_000),
  );
});

describe("kill -9 after the run ended, before its final PATCH landed", () => {
  // A run saved as completed whose last PATCH was still on its way (held by the network here; a back-off, a
  // 5xx retry or a late retry alike) used to leave the card at 执行中 for ever: ended runs are not resumed.
  it(
    "sends the final card after the restart, by one PATCH, and a second restart sends none",
    async () => {
      const emu = await emulator();
      const path = await startSlowPath(emu.url);
      onCleanup(() => path.close());
      const dataDir = tempDataDir();
      const first = await bot({ emulator: emu, dataDir, apiUrl: path.url, env: { DEMO_STEP_MS: "1500" } });
      const payload = emu.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "/quick 最后一次更新" });
      await deliver(first, emu, payload);
      const cardId = await until(() => cardsReplyingTo(emu, payload.event.message.message_id)[0], "the card");
      const patchPath = `/open-apis/im/v1/messages/${cardId}`;
      // From here every PATCH of this card is held on the way for longer than the test: the final one too.
      const arrivedBefore = path.arrived.length;
      path.hold({ method: "PATCH", path: new RegExp(`${cardId}$`) }, 600_000, 100);
      await until(
        () =>
          runsOf(dataDir)[0]?.status === "completed" &&
          path.arrived.slice(arrivedBefore).some((r) => r.method === "PATCH" && r.path === patchPath),
        "the run completed and its final PATCH on its way",
        20_000,
      );
      await first.kill();
      // The case under test: the run ended, its card did not get the final state.
      expect(isCompleted(cardOf(emu, cardId))).toBe(false);
      const patchesBefore = emu.callsTo("PATCH", patchPath).length;

      const second = await bot({ emulator: emu, dataDir });
      await until(() => isCompleted(cardOf(emu, cardId)), "the card completed after the restart", 20_000);
      await sleep(500);
      await second.stop();
      expect(
        emu
          .callsTo("PATCH", patchPath)
          .slice(patchesBefore)
          .map((c) => c.code),
      ).toEqual([0]);
      const landed = query<{ at: number | null }>(
        dataDir,
        "SELECT final_landed_at AS at FROM progress_cards WHERE message_id = ?",
        cardId,
      );
      expect(landed[0]?.at).toEqual(expect.any(Number));

      const third = await bot({ emulator: emu, dataDir });
      await sleep(1000);
      await third.stop();
      expect(emu.callsTo("PATCH", patchPath)).toHaveLength(patchesBefore + 1);
      expect(cardsReplyingTo(emu, payload.event.message.message_id)).toHaveLength(1);
      expect(checkDatabase(dataDir)).toEqual({ integrity: "ok", foreignKeyViolations: 0 });
    },
    timeoutMs(60_000, 60_000),
  );
});

/** Long variant: a crash loop over a stream of tasks from several people, every question answered on its card. */
describe.runIf(LONG)("a crash loop (RELIABILITY_LONG)", () => {
  it(`survives ${size(2, 10)} kills at random moments: every message runs exactly once to completion`, async () => {
    // Each life's length from a seeded PRNG: a failing run prints TEST_SEED to replay it with.
    const rng = testRandom();
    const emu = await emulator();
    const dataDir = tempDataDir();
    const users = Array.from({ length: 4 }, (_, i) => `ou_crash${String(i).padStart(29, "0")}`);
    const sent: MessageReceiveEvent[] = [];
    const answered = new Set<string>();
    let current = await bot({ emulator: emu, dataDir });
    const kills = size(2, 10);
    const started = Date.now();
    for (let k = 0; k <= kills; k += 1) {
      // Each life: everyone sends a message; questions on cards get answered as they appear.
      for (const user of users) {
        const payload = emu.userMessage({
          chatType: "p2p",
          senderOpenId: user,
          text: `任务 ${k} ${user.slice(-4)}`,
        });
        sent.push(payload);
        await deliver(current, emu, payload).catch(() => undefined);
      }
      const lifeEnds = Date.now() + 500 + rng.random() * 2500;
      while (Date.now() < lifeEnds) {
        await answerOpenForms(current, emu, users, answered);
        await sleep(50);
      }
      if (k === kills) break;
      await current.kill();
      expect(checkDatabase(dataDir)).toEqual({ integrity: "ok", foreignKeyViolations: 0 });
      current = await bot({ emulator: emu, dataDir });
      // Feishu redelivers whatever it sent during the last life.
      for (const payload of sent.slice(-users.length))
        await deliver(current, emu, payload).catch(() => undefined);
    }
    await until(
      async () => {
        await answerOpenForms(current, emu, users, answered);
        const runs = runsOf(dataDir);
        return runs.length === sent.length && runs.every((r) => r.status === "completed");
      },
      "every run to complete",
      90_000,
      100,
    ).catch((error: unknown) => {
      const statuses = JSON.stringify(runsOf(dataDir).map((r) => r.status));
      throw new Error(`${error instanceof Error ? error.message : String(error)}: ${statuses}`);
    });
    await current.stop();
    expect(checkDatabase(dataDir)).toEqual({ integrity: "ok", foreignKeyViolations: 0 });
    const runs = runsOf(dataDir);
    expect(runs.map((r) => r.input).sort()).toEqual(
      sent.map((p) => JSON.parse(p.event.message.content).text).sort(),
    );
    record("crashes: crash loop", {
      kills,
      messages: sent.length,
      runs: runs.length,
      answered: answered.size,
      durationMs: Date.now() - started,
    });
  }, 600_000);
});

/** Answers every form currently on a card, as its sender would. */
async function answerOpenForms(
  bot: BotProcess,
  emu: Emulator,
  users: string[],
  answered: Set<string>,
): Promise<void> {
  for (const message of emu.messages.listMessages()) {
    if (message.msgType !== "interactive" || message.senderType !== "app" || message.recalled) continue;
    const card = JSON.parse(message.content) as Card;
    for (const requestId of requestIdsOn(card)) {
      if (answered.has(requestId)) continue;
      const sender = users.find((user) => message.chatId.includes(user));
      if (!sender) continue;
      answered.add(requestId);
      await click(bot, emu, {
        messageId: message.messageId,
        operatorOpenId: sender,
        name: "ask0_submit",
        value: submitValue(sessionOf(emu, sender), requestId, sender),
        formValue: { ask0_q0: "0", ask0_q1: ["1"] },
      }).catch(() => undefined);
    }
  }
}
