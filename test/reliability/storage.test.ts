import { afterEach, describe, expect, it } from "vitest";
import type { Agent } from "../../src/harness/agents/agent.ts";
import type { ToolImpl } from "../../src/harness/dispatcher.ts";
import { type Emulator, startEmulator } from "../../src/local/emulator/index.ts";
import { DataDirLockedError, lockDataDir } from "../../src/store/lock.ts";
import { cardText } from "../helpers/feishu.ts";
import { holdWriteLock } from "../helpers/write-lock.ts";
import { type BotProcess, startBot, tempDataDir } from "./helpers/bot-process.ts";
import { record, until } from "./helpers/env.ts";
import { ALICE, ENCRYPT_KEY, stacksForEachTest } from "./helpers/stack.ts";

/**
 * Hardening II, storage: an event is recorded before it is acknowledged (a database another process has
 * locked gets the delivery refused, and Feishu's redelivery runs it once); a run whose writes are refused
 * ends at 失败 with the reason; one process per DATA_DIR (a second exits at once naming the holder; a
 * SIGKILLed holder never blocks the restart).
 */

const { stack } = stacksForEachTest({ askPing: false });

/** An agent that calls `tick` once per run; every tick waits until the test calls `release()`. */
function gatedAgent() {
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let ticks = 0;
  const tick: ToolImpl = {
    definition: { name: "tick", description: "waits for the test", parameters: { type: "object" } },
    async execute() {
      ticks += 1;
      await gate;
      return "ok";
    },
  };
  const agent: Agent = {
    name: "ticker",
    async run(ctx) {
      await ctx.callTool("tick", {});
      return { text: "done" };
    },
  };
  return { agent, tick, release: () => release(), ticking: () => ticks };
}

describe("writes the database refuses", () => {
  it("a message is refused (non-2xx) while another connection holds the write lock, then redelivered and run once", async () => {
    const s = await stack();
    const payload = s.emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "部署" });
    const messageId = payload.event.message.message_id;
    const lock = holdWriteLock(s.dbFile);
    const startedAt = Date.now();
    const refused = await s.deliver(payload);
    const refusedInMs = Date.now() - startedAt;
    // The event loop was not held for SQLite's old 5 s busy wait meanwhile.
    const health = await fetch(`${s.httpUrl}/healthz`);
    lock.release();
    expect(refused.status).toBe(503);
    expect(health.status).toBe(200);
    expect(refusedInMs).toBeLessThan(2_000);
    // Nothing half-recorded: no de-dup row that would swallow the redelivery.
    const seen = s.db.prepare("SELECT COUNT(*) AS n FROM inbound_messages WHERE message_id = ?");
    expect(seen.get(messageId)).toEqual({ n: 0 });

    // Feishu redelivers (same payload): now recorded, acknowledged, run; a further redelivery runs nothing.
    expect((await s.deliver(payload)).status).toBe(200);
    const card = await s.progressCard(messageId);
    expect((await s.deliver(payload)).status).toBe(200);
    // (The demo run now waits at its question; it is the only run.)
    const runs = s.db.prepare("SELECT COUNT(*) AS n FROM runs").get();
    expect(runs).toEqual({ n: 1 });
    expect(card).toBeTruthy();
    record("persist before ack", { refusedStatus: refused.status, refusedInMs });
  });

  it("a run whose writes are refused ends at 失败 naming the database, and its state lands once the lock is gone", async () => {
    const { agent, tick, release, ticking } = gatedAgent();
    const s = await stack({ agent, tools: [tick] });
    const { messageId } = await s.say({ chatType: "p2p", senderOpenId: ALICE, text: "开始" });
    const card = await s.progressCard(messageId);
    await until(() => ticking() > 0, "the tool running");
    const lock = holdWriteLock(s.dbFile);
    release(); // the turn's write now meets the lock
    const failed = await until(
      () => {
        const text = cardText(s.cardOf(card));
        return text.includes("无法写入数据库") ? text : undefined;
      },
      "the card showing the failure",
      20_000,
    );
    expect(failed).toContain("失败");
    expect(failed).not.toContain("执行中");
    lock.release();
    const status = () =>
      (s.db.prepare("SELECT status FROM runs").get() as { status: string } | undefined)?.status;
    await until(() => status() === "failed", "the failed state written once the lock is gone", 20_000);
  }, 45_000);

  it("a queued message is not lost when the run before it ends while the database is locked", async () => {
    const { agent, tick, release, ticking } = gatedAgent();
    const s = await stack({ agent, tools: [tick] });
    await s.say({ chatType: "p2p", senderOpenId: ALICE, text: "第一件事" });
    await until(() => ticking() === 1, "the first run's tool running");
    await s.say({ chatType: "p2p", senderOpenId: ALICE, text: "第二件事" }); // queued behind it
    const queued = () => (s.db.prepare("SELECT COUNT(*) AS n FROM queued_messages").get() as { n: number }).n;
    expect(queued()).toBe(1);
    const lock = holdWriteLock(s.dbFile);
    release(); // the first run ends now; taking the next message off the queue meets the lock
    await until(() => s.core.runner.activeRun(s.privateSessionId(ALICE)) === undefined, "the first run over");
    lock.release();
    // The queue was left intact and is drained once the database takes writes again.
    await until(() => ticking() === 2, "the queued message running", 20_000);
    await s.core.runner.idle();
    const runs = s.db.prepare("SELECT input, status FROM runs ORDER BY started_at").all();
    expect(runs).toEqual([
      { input: "第一件事", status: "failed" },
      { input: "第二件事", status: "completed" },
    ]);
    expect(queued()).toBe(0);
  }, 45_000);
});

const running: BotProcess[] = [];
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const bot of running.splice(0)) await bot.kill();
  for (const close of closers.splice(0)) await close();
});

async function emulator(): Promise<Emulator> {
  const started = await startEmulator({ encryptKey: ENCRYPT_KEY });
  closers.push(() => started.close());
  return started;
}

describe("two processes on one DATA_DIR", () => {
  it("the second exits at once naming the holder's pid; after a SIGKILL the next start takes over", async () => {
    const emu = await emulator();
    const dataDir = tempDataDir();
    const first = await startBot({ emulator: emu, dataDir });
    running.push(first);

    const startedAt = Date.now();
    const refusal = await startBot({ emulator: emu, dataDir }).then(
      (second) => {
        running.push(second);
        return "started";
      },
      (error: unknown) => String(error),
    );
    const refusedInMs = Date.now() - startedAt;
    expect(refusal).toContain(`is in use by process ${first.child.pid}`);
    expect(refusal).not.toContain('"msg":"listening"');

    await first.kill(); // SIGKILL: no release, the lock file and bot.pid stay behind
    const third = await startBot({ emulator: emu, dataDir });
    running.push(third);
    expect((await fetch(`http://127.0.0.1:${third.port}/healthz`)).status).toBe(200);
    record("data-dir lock", { refusedInMs });
  }, 60_000); // three starts of the real entry point (tsx) on a busy machine

  it("in one process too: a second lock on the same directory is refused until the first is released", () => {
    const dataDir = tempDataDir();
    const held = lockDataDir(dataDir, 4242);
    expect(() => lockDataDir(dataDir)).toThrow(DataDirLockedError);
    expect(() => lockDataDir(dataDir)).toThrow("in use by process 4242");
    held.release();
    lockDataDir(dataDir).release();
  });
});
