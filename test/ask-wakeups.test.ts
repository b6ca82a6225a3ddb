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
 * Two instances on one real Postgres, each with its registry and its wake-up listener (issue 27): an answer
 * given on the instance that does not hold the ask resumes the tool call waiting on the other, by a NOTIFY;
 * when the wake-up is lost, by the waiting instance's next poll.
 */
const pg = usePostgres();
const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

const QUESTIONS = sampleAsk().questions;
const ANSWERS = [{ question: QUESTIONS[0]?.question ?? "", selectedLabels: ["React"], customInput: null }];
const log = createLogger({ level: "silent" });

async function instance(name: string, options: { notifyChannel?: string; pollIntervalMs?: number } = {}) {
  const pool = pg().pool({ types: STORE_PG_TYPES });
  await ensureStoreSchema(pool);
  let n = 0;
  const registry = new AskRegistry({
    timeoutMs: 900_000,
    now: Date.now,
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
  registry.on("settled", ({ outcome }) => settled.push(outcome));
  return { registry, settled };
}

const ask = (registry: AskRegistry) =>
  registry.register({ sessionId: "s1", runId: "run-1", answererId: "ou_a", questions: QUESTIONS });

describe("asks across instances", () => {
  it("an answer on another instance resumes the waiting call by a wake-up, and the card hears it once", async () => {
    const a = await instance("a");
    const b = await instance("b");
    const asked = await ask(a.registry);
    const waiting = a.registry.waitForAnswer(asked.requestId);
    expect(
      await b.registry.complete("s1", asked.requestId, ANSWERS, { surface: "page", userId: "ou_a" }),
    ).toEqual({
      ok: true,
    });
    await expect(waiting).resolves.toMatchObject({ kind: "answered", surface: "page", answers: ANSWERS });
    await until(() => a.settled.length === 1, "a's settled event");
    expect(a.registry.get(asked.requestId)).toBeUndefined();
    // The instance that answered held nothing, so it raised no settled event of its own.
    expect(b.settled).toEqual([]);
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
