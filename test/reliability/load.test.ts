import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { signToken } from "../../src/auth/token.ts";
import type { Card } from "../../src/cards/model.ts";
import { createLarkMessenger } from "../../src/feishu/lark-messenger.ts";
import { createAppLimiter, IGNORED_SLOT, type Limiter } from "../../src/feishu/limits.ts";
import { type Emulator, type MessageView, startEmulator } from "../../src/local/emulator/index.ts";
import { createLogger } from "../../src/logger.ts";
import { strings } from "../../src/strings/index.ts";
import { TestClient } from "../helpers/harness.ts";
import { type BotProcess, checkDatabase, query, startBot, tempDataDir } from "./helpers/bot-process.ts";
import { LONG, percentile, record, size, sleep, until } from "./helpers/env.ts";
import { startSlowPath } from "./helpers/slow-path.ts";
import {
  ALICE as ALICE_ID,
  AUTH_SECRET,
  ENCRYPT_KEY,
  isCompleted,
  requestIdsOn,
  startStack,
  submitValue,
} from "./helpers/stack.ts";

/**
 * Load: many people at once, each sending a task, answering its question (half on the card through the
 * emulator, half on a desktop client over the WebSocket) and waiting for the final card, again and again.
 * The bot is the real entry point in a child process with production limits (50 calls/s, 1000/min to the
 * platform). Afterwards: no answer lost, no run stuck, no question left waiting, memory back where it was.
 * CI: 20 people, two rounds. RELIABILITY_LONG=1: 200 people for 5 minutes.
 */

const USERS = size(20, 200);
const DURATION_MS = size(0, 5 * 60_000);
/** How long one step of a task may wait: the platform's 1000 calls/min is shared by everyone. */
const STAGE_MS = size(60_000, 240_000);
const PROBE = fileURLToPath(new URL("./helpers/memory-probe.ts", import.meta.url));

const running: BotProcess[] = [];
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const bot of running.splice(0)) await bot.kill();
  for (const close of closers.splice(0)) await close();
});

interface Memory {
  heapUsed: number;
  rss: number;
  external: number;
  gc: boolean;
}

/** Asks the bot's process for its memory after a full GC (see memory-probe.ts). */
async function memoryOf(bot: BotProcess): Promise<Memory> {
  const seen = (bot.output().match(/MEMPROBE /g) ?? []).length;
  bot.child.kill("SIGUSR2");
  await until(() => (bot.output().match(/MEMPROBE /g) ?? []).length > seen, "a memory probe line", 10_000);
  const line =
    bot
      .output()
      .split("\n")
      .filter((l) => l.startsWith("MEMPROBE "))
      .at(-1) ?? "";
  return JSON.parse(line.slice("MEMPROBE ".length)) as Memory;
}

const mb = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;

/**
 * The emulator's side, event-driven: each card's latest content, parsed once, and waiters that wake on the
 * change they wait for (200 people polling the message list would measure the test, not the bot).
 */
function watchCards(emu: Emulator) {
  const latest = new Map<string, Card>();
  const cardOfReply = new Map<string, string>();
  const waiters = new Set<() => void>();
  const completedAt = new Map<string, number>();
  const pings: { card: string; at: number; after: boolean }[] = [];
  const changed = (message: MessageView) => {
    // The @-mention "waiting for you" ping is a text reply to the card; note whether its task was over.
    if (message.msgType === "text" && message.senderType === "app" && message.parentId) {
      const done = completedAt.get(message.parentId);
      pings.push({
        card: message.parentId,
        at: message.createdAt,
        after: done !== undefined && done < message.createdAt,
      });
    }
    if (message.msgType !== "interactive" || message.senderType !== "app") return;
    const card = JSON.parse(message.content) as Card;
    latest.set(message.messageId, card);
    if (isCompleted(card) && !completedAt.has(message.messageId))
      completedAt.set(message.messageId, message.updatedAt);
    if (message.parentId && !cardOfReply.has(message.parentId))
      cardOfReply.set(message.parentId, message.messageId);
    for (const wake of [...waiters]) wake();
  };
  let recalled = 0;
  emu.on("message_recalled", () => {
    recalled += 1;
  });
  emu.on("message_created", changed);
  emu.on("message_patched", ({ message }) => changed(message));
  return {
    pings: () => pings,
    recalled: () => recalled,
    card: (messageId: string) => latest.get(messageId),
    /** The progress card replying to a message: the first card reply, the one that is not a queued card. */
    replyTo: (messageId: string) => cardOfReply.get(messageId),
    wait<T>(probe: () => T | undefined, what: string, timeoutMs: number): Promise<T> {
      const now = probe();
      if (now !== undefined) return Promise.resolve(now);
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
        }, timeoutMs);
        const check = () => {
          const value = probe();
          if (value === undefined) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(value);
        };
        waiters.add(check);
      });
    },
  };
}

describe("load", () => {
  it(
    `keeps ${USERS} people asking and answering ${LONG ? "for 5 minutes" : "for two rounds"}: nothing lost, nothing stuck, memory flat`,
    async () => {
      // The platform's own limits (50 calls/s per app, 5 PATCHes/s per message): nothing may be refused.
      const emu = await startEmulator({ encryptKey: ENCRYPT_KEY });
      closers.push(() => emu.close());
      const dataDir = tempDataDir();
      const bot = await startBot({
        emulator: emu,
        dataDir,
        env: {
          DEMO_STEP_MS: "20",
          LOG_LEVEL: "warn",
          CARD_PATCH_INTERVAL_MS: "1000",
          FEISHU_ASK_PING: "on",
          // Every person's desktop client and every callback comes from this one loopback address here; in a
          // tenant they come from many. The per-address share is tested in connection-slots.test.ts.
          MAX_CONNECTIONS_PER_ADDRESS: "4096",
        },
        nodeArgs: ["--expose-gc"],
        preload: [PROBE],
      });
      running.push(bot);
      // No pause after start: the start-up call (bot info) takes its place in the app limiter like any other.
      const cards = watchCards(emu);
      emu.subscribe({ mode: "webhook", url: bot.hookUrl });
      const deliver = async (payload: unknown) => {
        const result = await emu.deliverWebhook(bot.hookUrl, payload, { timeoutMs: 10_000 });
        expect(result.status).toBe(200);
        return result.body as { toast?: { content: string } };
      };
      const sessionOf = (openId: string) => `feishu-${emu.appId}-private-${openId}`;

      const people = await Promise.all(
        Array.from({ length: USERS }, async (_, index) => {
          const openId = `ou_load${String(index).padStart(29, "0")}`;
          const viaCard = index % 2 === 0;
          let desktop: TestClient | undefined;
          if (!viaCard) {
            const ws = new WebSocket(
              `ws://127.0.0.1:${bot.port}/ws?token=${signToken(AUTH_SECRET, openId, Date.now() + 3_600_000)}`,
            );
            desktop = new TestClient(ws);
            await new Promise<void>((resolve, reject) => {
              ws.once("open", () => resolve());
              ws.once("error", reject);
            });
          }
          return { index, openId, viaCard, desktop, cycles: 0 };
        }),
      );

      const latencies: number[] = [];
      const expected = new Map<string, string>(); // run input → the token its answer carried
      /** One task of one person, start to final card. */
      const cycle = async (person: (typeof people)[number]) => {
        const started = Date.now();
        const text = `load ${person.index} ${person.cycles}`;
        const token = `ans-${person.index}-${person.cycles}`;
        person.cycles += 1;
        expected.set(text, token);
        const payload = emu.userMessage({ chatType: "p2p", senderOpenId: person.openId, text });
        const messageId = payload.event.message.message_id;
        await deliver(payload);
        const cardId = await cards.wait(() => cards.replyTo(messageId), `the card for ${text}`, STAGE_MS);
        const answers = [{ ask0_c0: token, ask0_q1: ["1"] }];
        if (person.viaCard) {
          const requestId = await cards.wait(
            () => requestIdsOn(cards.card(cardId)!)[0],
            `the form for ${text}`,
            STAGE_MS,
          );
          // As the Feishu client: the answer's card is applied to the message.
          const outcome = await emu.click(
            {
              messageId: cardId,
              operatorOpenId: person.openId,
              name: "ask0_submit",
              value: submitValue(sessionOf(person.openId), requestId, person.openId),
              formValue: answers[0]!,
            },
            { timeoutMs: 10_000 },
          );
          expect(outcome.toast?.content, text).toBe(strings.feishu.submitted);
        } else {
          const desktop = person.desktop!;
          const ask = await desktop.next("ask_user_questions", () => true, STAGE_MS);
          const questions = ask.data.questions;
          desktop.send({
            type: "ask_user_questions_result",
            sessionId: ask.sessionId,
            data: {
              requestId: ask.data.requestId,
              answers: [
                { question: questions[0]!.question, selectedLabels: [], customInput: token },
                {
                  question: questions[1]!.question,
                  selectedLabels: [questions[1]!.options[1]!.label],
                  customInput: null,
                },
              ],
            },
          });
          await desktop.next(
            "ask_user_questions_accepted",
            (f) => f.data.requestId === ask.data.requestId,
            30_000,
          );
          await desktop.next(
            "ask_user_questions_cancelled",
            (f) => f.data.requestId === ask.data.requestId,
            30_000,
          );
        }
        await cards.wait(
          () => isCompleted(cards.card(cardId)!) || undefined,
          `the final card for ${text}`,
          STAGE_MS,
        );
        latencies.push(Date.now() - started);
      };

      const started = Date.now();
      // Round one warms the process up (JIT, SQLite's cache, sockets); memory is measured from its end.
      await Promise.all(people.map((person) => cycle(person)));
      await sleep(1000);
      const baseline = await memoryOf(bot);
      const samples: Memory[] = [baseline];
      const endAt = Date.now() + DURATION_MS;
      const sampler = setInterval(() => {
        void memoryOf(bot).then(
          (m) => samples.push(m),
          () => undefined,
        );
      }, 15_000);
      try {
        await Promise.all(
          people.map(async (person) => {
            do await cycle(person);
            while (Date.now() < endAt);
          }),
        );
      } finally {
        clearInterval(sampler);
      }
      const loadMs = Date.now() - started;

      // Nothing waits, nothing runs.
      const metrics = await (await fetch(`http://127.0.0.1:${bot.port}/metrics`)).text();
      expect(metrics).toContain("fpb_pending_asks 0");
      for (const person of people) person.desktop?.ws.close();
      // Work that is not urgent may still wait for the platform's budget: measure how long until no call has
      // come for 2 s. (These are private chats, where the card is the notification: no @-mention reminder.)
      const loadEnded = Date.now();
      const callsAtLoadEnd = emu.calls.length;
      await until(
        () => Date.now() - (emu.calls.at(-1)?.at ?? 0) > 2000,
        "the backlog to drain",
        size(60_000, 1_200_000),
        200,
      );
      const drainMs = Date.now() - loadEnded - 2000;
      const backlogCalls = emu.calls.length - callsAtLoadEnd;
      await sleep(size(500, 2000));
      const after = await memoryOf(bot);
      const runs = query<{ input: string; status: string; final_text: string | null }>(
        dataDir,
        "SELECT input, status, final_text FROM runs",
      );
      const audit = query<{ outcome: string | null; answered_via: string | null }>(
        dataDir,
        "SELECT outcome, answered_via FROM ask_audit",
      );
      const stopping = Date.now();
      expect(await bot.stop()).toBe(0);
      const shutdownMs = Date.now() - stopping;
      expect(checkDatabase(dataDir)).toEqual({ integrity: "ok", foreignKeyViolations: 0 });

      // No answer lost: every task ran once, completed, and its final reply quotes the answer it was given.
      expect(runs).toHaveLength(expected.size);
      const lost = runs.filter(
        (run) => run.status !== "completed" || !run.final_text?.includes(`其他：${expected.get(run.input)}`),
      );
      expect(lost).toEqual([]);
      // Reminders are never recalled (a recall leaves 撤回了一条消息 in the chat), and none go to private chats.
      expect([cards.recalled(), cards.pings().length]).toEqual([0, 0]);
      expect(audit.filter((row) => row.outcome !== "answered")).toEqual([]);
      const viaFeishu = audit.filter((row) => row.answered_via === "feishu").length;
      const calls = emu.calls;
      const refused = calls.filter((call) => call.status === 429 || call.code === 230020);
      const rateLimited = refused.length;
      expect(refused.map((c) => `${c.method} ${c.path} ${c.status} ${c.code} at ${c.at}`)).toEqual([]);
      const errorLines = bot
        .output()
        .split("\n")
        .filter((line) => /"level":(50|60)/.test(line));
      expect(errorLines).toEqual([]);
      const growth = after.heapUsed - baseline.heapUsed;
      record("load", {
        people: USERS,
        tasks: runs.length,
        answeredOnCard: viaFeishu,
        answeredOnDesktop: audit.length - viaFeishu,
        loadMs,
        taskMs: {
          p50: percentile(latencies, 50),
          p90: percentile(latencies, 90),
          p99: percentile(latencies, 99),
          max: Math.max(...latencies),
        },
        apiCalls: calls.length,
        patches: calls.filter((c) => c.method === "PATCH").length,
        rateLimited,
        drainMs,
        backlogCalls,
        shutdownMs,
        pings: cards.pings().length,
        pingsAfterTheirTask: cards.pings().filter((ping) => ping.after).length,
        memoryMB: {
          gc: baseline.gc,
          heapBaseline: mb(baseline.heapUsed),
          heapAfter: mb(after.heapUsed),
          heapPeak: mb(Math.max(...samples.map((s) => s.heapUsed))),
          rssBaseline: mb(baseline.rss),
          rssAfter: mb(after.rss),
        },
      });
      // Memory flat: once the backlog drained, the heap is within a few MB of the warmed-up heap before the run.
      expect(baseline.gc).toBe(true);
      expect(mb(growth)).toBeLessThan(size(15, 25));
    },
    size(120_000, 2_400_000),
  );

  // The platform counts a call when it arrives; a limiter that counted starts let calls started in two
  // seconds arrive in one (HTTP 429 under load, found here and by the benchmarks). Each call now holds its
  // slot until a second after it settles: one slow call must not let the next second overfill.
  it("keeps what reaches the platform under its 50 calls/s when one call is slow on the way", async () => {
    const emu = await startEmulator({ encryptKey: ENCRYPT_KEY });
    const path = await startSlowPath(emu.url);
    closers.push(
      () => path.close(),
      () => emu.close(),
    );
    const messenger = createLarkMessenger({
      appId: emu.appId,
      appSecret: emu.appSecret,
      domain: path.url,
      logger: createLogger({ level: "silent" }),
      timeoutMs: 5000,
    });
    await messenger.botInfo();
    await sleep(1100); // that call's second is over
    const limiter = createAppLimiter();
    // The first message takes 300 ms to reach the platform; the other 99 arrive at once.
    path.hold({ method: "POST", path: /^\/open-apis\/im\/v1\/messages$/ }, 300);
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        limiter(() => messenger.sendText({ chatId: "oc_p2p_ou_limit" }, `message ${i}`)).then(
          () => 200,
          (error: { httpStatus?: number }) => error.httpStatus ?? 0,
        ),
      ),
    );
    record("load: app limiter at the platform's edge", {
      sent: results.length,
      refused429: results.filter((status) => status === 429).length,
    });
    expect(results.filter((status) => status !== 200)).toEqual([]);
  });

  // Found by this suite: the @-mention ping used to be sent when its turn in the app-wide queue came even if
  // its question had been answered meanwhile (then recalled); under load most pings were for questions gone.
  it("sends no ping for a question that was answered while the ping waited for the app-wide budget", async () => {
    // A congested budget: plain (not urgent) calls wait half a second for their turn; urgent ones go at once.
    const congested: Limiter = (fn, options) =>
      options?.urgent
        ? fn(IGNORED_SLOT)
        : new Promise((resolve) => setTimeout(resolve, 500)).then(() => fn(IGNORED_SLOT));
    const s = await startStack({ askPing: true, stepMs: 5, appLimiter: congested });
    closers.push(() => s.stop());
    const desktop = await s.connect(ALICE_ID);
    // A group: the only chat type that gets the reminder.
    await s.say({
      chatType: "group",
      chatId: "oc_congested",
      senderOpenId: ALICE_ID,
      text: "帮我部署",
      mentionBot: true,
    });
    const ask = await desktop.next("ask_user_questions");
    const questions = ask.data.questions;
    desktop.send({
      type: "ask_user_questions_result",
      sessionId: ask.sessionId,
      data: {
        requestId: ask.data.requestId,
        answers: questions.map((q) => ({
          question: q.question,
          selectedLabels: [q.options[0]!.label],
          customInput: null,
        })),
      },
    });
    await desktop.next("ask_user_questions_accepted");
    const answeredAt = s.emulator.clock.now();
    await s.core.runner.idle();
    await sleep(1500);
    const pings = s.emulator.messages
      .listMessages()
      .filter((m) => m.senderType === "app" && m.msgType === "text");
    expect(pings.filter((ping) => ping.createdAt > answeredAt)).toEqual([]);
  });
});
