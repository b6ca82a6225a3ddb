import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AskRegistry } from "../src/asks/registry.ts";
import { type ToolContext, ToolDispatcher } from "../src/harness/dispatcher.ts";
import { createLogger } from "../src/logger.ts";
import { AskStore } from "../src/store/asks.ts";
import { auditForSession } from "../src/store/audit.ts";
import { type Db, migrate, openDatabase } from "../src/store/db.ts";
import { MIGRATIONS } from "../src/store/migrations.ts";
import { sqliteSql } from "../src/store/sql.ts";
import { sampleAsk } from "./fixtures.ts";
import { fakeSurface, privateSession, tempDir } from "./helpers/core.ts";
import { until } from "./helpers/wait.ts";

/** Durable asks (issue 16): rows from register on, compare-and-set settles, restore after a restart. */

const TIMEOUT_MS = 900_000;
const answers = [
  {
    question: "Which framework should we use for the new module?",
    selectedLabels: ["React"],
    customInput: null,
  },
];

let id = 0;
function registryOn(db: Db) {
  return new AskRegistry({
    timeoutMs: TIMEOUT_MS,
    now: () => Date.now(),
    newId: () => `req-${++id}`,
    onListenerError: (error) => {
      throw error;
    },
    store: new AskStore(sqliteSql(db)),
  });
}

const ask = (registry: AskRegistry, toolCallId = "call-1") =>
  registry.register({
    sessionId: "s1",
    runId: "run-1",
    answererId: "ou_a",
    questions: sampleAsk().questions,
    metadata: { m: 1 },
    surfaces: ["feishu"],
    toolCallId,
  });

describe("durable asks", () => {
  const open: Db[] = [];
  const file = () => path.join(tempDir(), "bot.sqlite");
  const db = (at: string) => {
    const opened = openDatabase(at);
    open.push(opened);
    return opened;
  };
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(new Date("2026-12-01T07:00:00Z"));
  });
  afterEach(() => {
    vi.useRealTimers();
    for (const d of open.splice(0)) d.close();
  });

  it("writes the row at register and settles it once: the second answer, from another process, loses", async () => {
    const at = file();
    const [a, b] = [registryOn(db(at)), registryOn(db(at))];
    const asked = await ask(a);
    expect((await b.restore()).map((r) => r.requestId)).toEqual([asked.requestId]);
    // Two processes on one file (a restart that overlapped the old one): the row decides, not memory.
    expect(
      await b.complete("s1", asked.requestId, answers, { surface: "websocket", userId: "ou_a" }),
    ).toEqual({
      ok: true,
    });
    expect(await a.complete("s1", asked.requestId, answers, { surface: "feishu", userId: "ou_a" })).toEqual({
      ok: false,
      reason: "gone",
    });
    const state = await a.state(asked.requestId);
    expect(state).toMatchObject({ status: "answered", outcome: { kind: "answered", surface: "websocket" } });
    const [row] = await auditForSession(sqliteSql(open[0]!), "s1");
    expect(row).toMatchObject({
      outcome: "answered",
      answeredVia: "websocket",
      answeredBy: "ou_a",
      questions: sampleAsk().questions.length,
    });
  });

  it("the loser's waiting call still gets the winner's answer", async () => {
    const at = file();
    const [a, b] = [registryOn(db(at)), registryOn(db(at))];
    const asked = await ask(a);
    await b.restore();
    await b.complete("s1", asked.requestId, answers, { surface: "websocket", userId: "ou_a" });
    const waiting = a.waitForAnswer(asked.requestId);
    await a.cancel(asked.requestId, "Session cancelled");
    await vi.runOnlyPendingTimersAsync();
    await expect(waiting).resolves.toMatchObject({ kind: "answered", answers });
  });

  it("restores a pending ask after a restart with its request id, tool call and deadline", async () => {
    const at = file();
    const first = registryOn(db(at));
    const asked = await ask(first);
    vi.advanceTimersByTime(10 * 60_000);
    const second = registryOn(db(at));
    const [restored] = await second.restore();
    expect(restored).toMatchObject({
      requestId: asked.requestId,
      toolCallId: "call-1",
      expiresAt: asked.expiresAt,
      questions: asked.questions,
      metadata: { m: 1 },
    });
    expect((await second.forToolCall("run-1", "call-1"))?.ask.requestId).toBe(asked.requestId);
    const outcome = second.waitForAnswer(asked.requestId);
    // The deadline counts from the moment of asking: 5 more minutes, not 15.
    vi.advanceTimersByTime(5 * 60_000 - 1);
    expect(second.get(asked.requestId)).toBeDefined();
    vi.advanceTimersByTime(1);
    await vi.runOnlyPendingTimersAsync();
    await expect(outcome).resolves.toEqual({ kind: "timeout" });
    expect((await second.state(asked.requestId))?.status).toBe("timeout");
  });

  it("times out at once an ask whose deadline passed while the process was down", async () => {
    const at = file();
    const asked = await ask(registryOn(db(at)));
    vi.advanceTimersByTime(TIMEOUT_MS + 1);
    const second = registryOn(db(at));
    await second.restore();
    await vi.runOnlyPendingTimersAsync();
    expect((await second.state(asked.requestId))?.status).toBe("timeout");
  });

  it("answers a waiting call at once with an outcome settled before the restart", async () => {
    const at = file();
    const first = registryOn(db(at));
    const asked = await ask(first);
    await first.complete("s1", asked.requestId, answers, { surface: "feishu", userId: "ou_a" });
    const second = registryOn(db(at));
    expect(await second.restore()).toEqual([]);
    await expect(second.waitForAnswer(asked.requestId)).resolves.toMatchObject({ kind: "answered", answers });
  });

  it("extends a deadline by 15 minutes at a time, bounded, and survives a restart with it", async () => {
    const at = file();
    const registry = registryOn(db(at));
    const asked = await ask(registry);
    const quarter = 15 * 60_000;
    expect((await registry.extend(asked.requestId, quarter, 2 * quarter))?.expiresAt).toBe(
      asked.createdAt + TIMEOUT_MS + quarter,
    );
    expect(await registry.extend(asked.requestId, quarter, 2 * quarter)).toBeDefined();
    expect(await registry.extend(asked.requestId, quarter, 2 * quarter)).toBeUndefined();
    const [restored] = await registryOn(db(at)).restore();
    expect(restored?.expiresAt).toBe(asked.createdAt + TIMEOUT_MS + 2 * quarter);
    expect(restored?.extendedMs).toBe(2 * quarter);
  });

  it("records superseded asks as such", async () => {
    const d = db(file());
    const registry = registryOn(d);
    const asked = await ask(registry);
    expect(await registry.supersede("s1", "Session cancelled")).toBe(1);
    expect((await registry.state(asked.requestId))?.status).toBe("superseded");
    expect((await auditForSession(sqliteSql(d), "s1"))[0]?.outcome).toBe("superseded");
  });

  it("keeps the audit rows of an older file as ask rows (one that had no outcome died with its process)", async () => {
    const raw = new Database(":memory:");
    raw.exec(MIGRATIONS.slice(0, 4).join(";\n"));
    raw.pragma("user_version = 4");
    raw.exec(`INSERT INTO ask_audit VALUES ('r1','s1','run','ou_a',2,'["feishu"]',5,'answered','ou_a','feishu',9);
              INSERT INTO ask_audit VALUES ('r2','s1','run','ou_a',1,'[]',6,NULL,NULL,NULL,NULL);`);
    migrate(raw);
    expect(
      (await auditForSession(sqliteSql(raw), "s1")).map((r) => [r.requestId, r.outcome, r.questions]),
    ).toEqual([
      ["r1", "answered", 2],
      ["r2", "cancelled", 1],
    ]);
    expect(await new AskStore(sqliteSql(raw)).pending()).toEqual([]);
    raw.close();
  });
});

describe("拒绝回答 kept in the rows (issue 25)", () => {
  it("upgrades a file from before declines with its pending asks, and keeps `declinable` and a decline across a restart", async () => {
    const raw = new Database(":memory:");
    // The migration that added declines (later ones, e.g. issue 30's usage columns, apply on top).
    const before = MIGRATIONS.findIndex((sql) => sql.includes("CREATE TABLE asks_next"));
    raw.exec(MIGRATIONS.slice(0, before).join(";\n"));
    raw.pragma(`user_version = ${before}`);
    // A row as the older code wrote it (its insert knew no `declinable`).
    raw.exec(`INSERT INTO asks (request_id, session_id, run_id, answerer_id, questions, question_count,
                                surfaces, created_at, expires_at)
              VALUES ('r-old', 's1', 'run', 'ou_a', '${JSON.stringify(sampleAsk().questions)}', 2, '[]',
                      ${Date.now()}, ${Date.now() + TIMEOUT_MS})`);
    const waiting = { requestId: "r-old" };
    migrate(raw);
    expect(
      (await new AskStore(sqliteSql(raw)).pending()).map((row) => [row.requestId, row.declinable]),
    ).toEqual([[waiting.requestId, false]]);

    const first = registryOn(raw);
    await first.restore();
    const agents = await first.register({
      sessionId: "s2",
      runId: "task",
      answererId: "ou_a",
      questions: sampleAsk().questions,
      declinable: true,
    });
    // A restart: the ask comes back still declinable, and a decline lands as its own status.
    const second = registryOn(raw);
    await second.restore();
    expect(second.get(agents.requestId)?.declinable).toBe(true);
    expect(second.get(waiting.requestId)?.declinable).toBeUndefined();
    expect(await second.decline("s2", agents.requestId, { surface: "feishu", userId: "ou_a" })).toEqual({
      ok: true,
    });
    expect((await second.state(agents.requestId))?.outcome).toEqual({
      kind: "declined",
      surface: "feishu",
      userId: "ou_a",
    });
    expect((await auditForSession(sqliteSql(raw), "s2")).map((row) => row.outcome)).toEqual(["declined"]);
    raw.close();
  });
});

describe("a database that refuses the write", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("loses no answer: complete throws, the ask stays pending, and the next answer lands once", async () => {
    const db = openDatabase(":memory:");
    const store = new AskStore(sqliteSql(db));
    const errors: string[] = [];
    const registry = new AskRegistry({
      timeoutMs: TIMEOUT_MS,
      now: () => Date.now(),
      newId: () => `req-${++id}`,
      onListenerError: (_error, event) => errors.push(event),
      store,
    });
    const asked = await ask(registry);
    const settle = vi.spyOn(store, "settle").mockImplementationOnce(async () => {
      throw new Error("SQLITE_FULL: database or disk is full");
    });
    await expect(
      registry.complete("s1", asked.requestId, answers, { surface: "feishu", userId: "ou_a" }),
    ).rejects.toThrow("SQLITE_FULL");
    expect(registry.get(asked.requestId)).toBeDefined();
    const waiting = registry.waitForAnswer(asked.requestId);
    expect(
      await registry.complete("s1", asked.requestId, answers, { surface: "feishu", userId: "ou_a" }),
    ).toEqual({
      ok: true,
    });
    await vi.runOnlyPendingTimersAsync();
    await expect(waiting).resolves.toMatchObject({ kind: "answered", answers });
    expect(settle).toHaveBeenCalledTimes(2);
    db.close();
  });

  it("a timeout whose row cannot be written is tried again instead of crashing the timer", async () => {
    const db = openDatabase(":memory:");
    const store = new AskStore(sqliteSql(db));
    const errors: string[] = [];
    const registry = new AskRegistry({
      timeoutMs: 1_000,
      now: () => Date.now(),
      newId: () => `req-${++id}`,
      onListenerError: (_error, event) => errors.push(event),
      store,
    });
    const asked = await ask(registry);
    vi.spyOn(store, "settle").mockImplementationOnce(async () => {
      throw new Error("SQLITE_BUSY");
    });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(errors).toEqual(["timeout"]);
    expect(registry.get(asked.requestId)).toBeDefined();
    await vi.advanceTimersByTimeAsync(1_000);
    expect((await registry.state(asked.requestId))?.status).toBe("timeout");
    db.close();
  });
});

describe("the dispatcher over durable asks", () => {
  const dispatcherOn = (store: AskStore) => {
    const registry = new AskRegistry({
      timeoutMs: TIMEOUT_MS,
      now: Date.now,
      newId: () => `req-${++id}`,
      onListenerError: () => {},
      store,
    });
    const dispatcher = new ToolDispatcher({
      registry,
      tools: [],
      surfaces: [fakeSurface(true)],
      logger: createLogger({ level: "silent" }),
    });
    const ctx: ToolContext = {
      session: privateSession(),
      runId: "run1",
      senderId: "ou_a",
      signal: new AbortController().signal,
      toolCallId: "call-9",
    };
    return { registry, dispatcher, ctx };
  };

  it("does not ask a question whose row cannot be written, and tells the model why", async () => {
    const db = openDatabase(":memory:");
    const store = new AskStore(sqliteSql(db));
    vi.spyOn(store, "insert").mockImplementation(() => {
      throw new Error("SQLITE_READONLY: attempt to write a readonly database");
    });
    const { registry, dispatcher, ctx } = dispatcherOn(store);
    const result = JSON.parse((await dispatcher.dispatch("ask_user_questions", sampleAsk(), ctx)).content);
    expect(result.error).toContain("SQLITE_READONLY");
    expect(registry.size).toBe(0);
    db.close();
  });

  it("a resumed call waits on the ask it made before the restart instead of asking again", async () => {
    const db = openDatabase(":memory:");
    const first = dispatcherOn(new AskStore(sqliteSql(db)));
    void first.dispatcher.dispatch("ask_user_questions", sampleAsk(), first.ctx);
    const asked = await until(() => first.registry.getPendingForSession(first.ctx.session.id)[0], "the ask");
    const second = dispatcherOn(new AskStore(sqliteSql(db)));
    await second.registry.restore();
    const waiting = second.dispatcher.dispatch("ask_user_questions", sampleAsk(), {
      ...second.ctx,
      resuming: true,
    });
    expect(second.registry.size).toBe(1);
    await second.registry.complete(asked!.sessionId, asked!.requestId, answers.slice(0, 1), {
      surface: "feishu",
      userId: "ou_a",
    });
    expect(JSON.parse((await waiting).content)).toEqual({ answers: answers.slice(0, 1) });
    db.close();
  });
});
