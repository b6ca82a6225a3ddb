import { afterEach, describe, expect, it } from "vitest";
import { connectAskWakeups } from "../src/ask-wakeups.ts";
import type { AskOutcome } from "../src/asks/pending.ts";
import { AskRegistry } from "../src/asks/registry.ts";
import { createWakeups, type Wakeups } from "../src/cluster/wakeups.ts";
import { createLogger } from "../src/logger.ts";
import { AskStore } from "../src/store/asks.ts";
import { ensureStoreSchema, STORE_PG_TYPES } from "../src/store/pg-schema.ts";
import { postgresSql } from "../src/store/sql.ts";
import { sampleAsk } from "./fixtures.ts";
import { usePostgres } from "./helpers/postgres.ts";
import { until } from "./helpers/wait.ts";

/**
 * Two instances on one real Postgres, each with its registry and its wake-up listener (issue 27): an ask asked
 * on one is held on the other as a copy, so the other's sockets show it; an answer given on the instance that
 * does not wait on the ask resumes the tool call waiting on the other, by a NOTIFY; when a wake-up is lost,
 * by the next poll. A deadline stays with the instance that waits, moved by 延长 wherever it is pressed.
 */
const pg = usePostgres();
const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const QUESTIONS = sampleAsk().questions;
const ANSWERS = [{ question: QUESTIONS[0]?.question ?? "", selectedLabels: ["React"], customInput: null }];
const log = createLogger({ level: "silent" });

async function instance(
  name: string,
  options: { notifyChannel?: string; pollIntervalMs?: number; now?: () => number } = {},
) {
  const pool = pg().pool({ types: STORE_PG_TYPES });
  await ensureStoreSchema(pool);
  let n = 0;
  const registry = new AskRegistry({
    timeoutMs: 900_000,
    now: options.now ?? Date.now,
    newId: () => `${name}-${++n}-${Math.random().toString(36).slice(2)}`,
    onListenerError: (error) => {
      throw error;
    },
    store: new AskStore(postgresSql(pool)),
  });
  const channel = pg().schema;
  const wakeups: Wakeups = createWakeups({
    connectionString: pg().url,
    channel,
    pollIntervalMs: options.pollIntervalMs ?? 60_000,
    log,
  });
  const off = connectAskWakeups(registry, wakeups, {
    db: pool,
    channel: options.notifyChannel ?? channel,
    log,
  });
  wakeups.start();
  closers.push(() => wakeups.close(), off);
  await until(() => wakeups.listening(), `${name}'s listener`);
  const settled: AskOutcome[] = [];
  const mirrored: string[] = [];
  const extended: number[] = [];
  /** In order: `elsewhere` (the registry's settledElsewhere) must come before the `settled` it announces. */
  const order: string[] = [];
  registry.on("settledElsewhere", ({ ask, settledAt }) =>
    order.push(`elsewhere ${ask.requestId} ${settledAt !== undefined}`),
  );
  registry.on("settled", ({ ask, outcome }) => {
    settled.push(outcome);
    order.push(`settled ${ask.requestId}`);
  });
  registry.on("mirrored", (ask) => mirrored.push(ask.requestId));
  registry.on("extended", (ask) => extended.push(ask.expiresAt));
  return { registry, settled, mirrored, extended, pool, order };
}

const ask = (registry: AskRegistry, timeoutMs?: number) =>
  registry.register({
    sessionId: "s1",
    runId: "run-1",
    answererId: "ou_a",
    questions: QUESTIONS,
    ...(timeoutMs ? { timeoutMs } : {}),
  });

const copyOf = (on: { registry: AskRegistry }, requestId: string) =>
  until(() => on.registry.get(requestId), "the other instance's copy of the ask", 5_000);

const statusOf = async (on: { pool: ReturnType<ReturnType<typeof pg>["pool"]> }, requestId: string) =>
  (await on.pool.query<{ status: string }>("SELECT status FROM asks WHERE request_id = $1", [requestId]))
    .rows[0]?.status;

describe("asks across instances", () => {
  it("an ask asked on one instance is held on the other by its wake-up, with its id and deadline", async () => {
    const a = await instance("a");
    const b = await instance("b");
    const asked = await ask(a.registry);
    const copy = await copyOf(b, asked.requestId);
    expect(copy).toMatchObject({ requestId: asked.requestId, runId: "run-1", expiresAt: asked.expiresAt });
    expect(b.mirrored).toEqual([asked.requestId]);
    expect(b.registry.getPendingForSession("s1").map((one) => one.requestId)).toEqual([asked.requestId]);
    // The instance that asked holds its own ask: its own wake-up comes back to it and copies nothing.
    expect(a.mirrored).toEqual([]);
  });

  it("an answer on the instance holding a copy resumes the waiting call by a wake-up; each hears the end once", async () => {
    const a = await instance("a");
    const b = await instance("b");
    const asked = await ask(a.registry);
    const waiting = a.registry.waitForAnswer(asked.requestId);
    await copyOf(b, asked.requestId);
    expect(
      await b.registry.complete("s1", asked.requestId, ANSWERS, { surface: "page", userId: "ou_a" }),
    ).toEqual({ ok: true });
    await expect(waiting).resolves.toMatchObject({ kind: "answered", surface: "page", answers: ANSWERS });
    await until(() => a.settled.length === 1, "a's settled event");
    expect(a.registry.get(asked.requestId)).toBeUndefined();
    // Told as settled elsewhere, with the settle's time, just before it settles (a card holds its PATCH).
    expect(a.order).toEqual([`elsewhere ${asked.requestId} true`, `settled ${asked.requestId}`]);
    expect(b.order).toEqual([`settled ${asked.requestId}`]);
    // The copy ended where it was answered (its sockets withdraw the question), once.
    expect(b.settled).toEqual([expect.objectContaining({ kind: "answered", surface: "page" })]);
    expect(b.registry.get(asked.requestId)).toBeUndefined();
  });

  it("an answer on the instance that asked ends the other's copy by the wake-up", async () => {
    const a = await instance("a");
    const b = await instance("b");
    const asked = await ask(a.registry);
    await copyOf(b, asked.requestId);
    const by = { surface: "feishu", userId: "ou_a" };
    expect(await a.registry.complete("s1", asked.requestId, ANSWERS, by)).toEqual({ ok: true });
    await until(() => b.settled.length === 1, "b's copy to end");
    expect(b.settled[0]).toMatchObject({ kind: "answered", surface: "feishu" });
    expect(b.registry.getPendingForSession("s1")).toEqual([]);
  });

  it("a question whose wake-up is lost reaches the other instance by its next poll", async () => {
    const a = await instance("a", { notifyChannel: "nobody_listens" });
    const b = await instance("b", { pollIntervalMs: 300 });
    const asked = await ask(a.registry);
    await copyOf(b, asked.requestId);
    expect(b.mirrored).toEqual([asked.requestId]);
  });

  it("a copy never times out by itself, however far ahead its host's clock; held for its run, it does", async () => {
    const a = await instance("a");
    // b's clock runs ten minutes ahead: by it, a's one-minute question is long overdue.
    const b = await instance("b", { now: () => Date.now() + 600_000 });
    const asked = await ask(a.registry, 60_000);
    const waiting = a.registry.waitForAnswer(asked.requestId);
    await copyOf(b, asked.requestId);
    // A timer of b's would have fired at once (its delay is below zero); a moment later nothing has moved.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await statusOf(a, asked.requestId)).toBe("pending");
    expect(b.settled).toEqual([]);
    // b adopts the run (a takeover): the ask is b's to time out from now on, by b's clock.
    await b.registry.holdRun("run-1");
    await expect(waiting).resolves.toEqual({ kind: "timeout" });
    expect(await statusOf(a, asked.requestId)).toBe("timeout");
  });

  it("延长 on the instance holding a copy moves the deadline where the call waits, by the wake-up", async () => {
    const a = await instance("a");
    const b = await instance("b");
    const asked = await ask(a.registry, 60_000);
    // `asked` is a's own ask, moved in place: its first deadline is kept apart.
    const deadline = asked.expiresAt;
    await copyOf(b, asked.requestId);
    const moved = await b.registry.extend(asked.requestId, 600_000, 3_600_000);
    expect(moved?.expiresAt).toBe(deadline + 600_000);
    await until(() => a.extended.length === 1, "a to hear of the extension");
    expect(a.extended).toEqual([deadline + 600_000]);
    expect(a.registry.get(asked.requestId)?.extendedMs).toBe(600_000);
  });

  it("延长 whose wake-up is lost still holds: the deadline reads the row before it times out", async () => {
    const a = await instance("a");
    const b = await instance("b", { notifyChannel: "nobody_listens" });
    const asked = await ask(a.registry, 1_000);
    const deadline = asked.expiresAt;
    const waiting = a.registry.waitForAnswer(asked.requestId);
    await copyOf(b, asked.requestId);
    expect(await b.registry.extend(asked.requestId, 600_000, 3_600_000)).toBeDefined();
    // a never hears of it until its own deadline, a second after asking: it reads the row then.
    await until(() => a.extended.length === 1, "a to find the extension at its deadline", 5_000);
    expect(a.extended).toEqual([deadline + 600_000]);
    expect(await statusOf(a, asked.requestId)).toBe("pending");
    expect(a.registry.get(asked.requestId)).toBeDefined();
    expect(await Promise.race([waiting, Promise.resolve("still waiting")])).toBe("still waiting");
  });

  it("a lost wake-up costs one poll interval, nothing more", async () => {
    const a = await instance("a", { pollIntervalMs: 300 });
    // b's wake-ups go to a channel nobody listens on: a learns of the answer only by polling.
    const b = await instance("b", { notifyChannel: "nobody_listens" });
    const asked = await ask(a.registry);
    const other = await ask(a.registry);
    const waiting = a.registry.waitForAnswer(asked.requestId);
    expect(
      (await b.registry.complete("s1", asked.requestId, ANSWERS, { surface: "page", userId: "ou_a" })).ok,
    ).toBe(true);
    await expect(waiting).resolves.toMatchObject({ kind: "answered", surface: "page" });
    // The poll settled only what the rows say is settled.
    expect(a.registry.get(other.requestId)).toBeDefined();
  });

  it("both instances answering at once: one wins, the waiting call gets the winner's answer", async () => {
    const a = await instance("a");
    const b = await instance("b");
    const asked = await ask(a.registry);
    const waiting = a.registry.waitForAnswer(asked.requestId);
    const [onA, onB] = await Promise.all([
      a.registry.complete("s1", asked.requestId, [{ ...ANSWERS[0]!, customInput: "from a" }], {
        surface: "feishu",
        userId: "ou_a",
      }),
      b.registry.complete("s1", asked.requestId, [{ ...ANSWERS[0]!, customInput: "from b" }], {
        surface: "page",
        userId: "ou_a",
      }),
    ]);
    expect([onA.ok, onB.ok].filter(Boolean)).toHaveLength(1);
    const outcome = await waiting;
    expect(outcome).toMatchObject({ kind: "answered", surface: onA.ok ? "feishu" : "page" });
    await until(() => a.settled.length === 1, "a's settled event");
    expect(a.settled).toHaveLength(1);
  });
});
