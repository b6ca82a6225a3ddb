import { randomUUID } from "node:crypto";
import express from "express";
import { describe, expect, it } from "vitest";
import { mountAgentHttpApi } from "../src/agents-api/http.ts";
import { AgentTasks } from "../src/agents-api/service.ts";
import { AgentStore, type StoredTask } from "../src/agents-api/store.ts";
import { checkAgentToken, signAgentToken } from "../src/agents-api/token.ts";
import { AgentTokenStore } from "../src/agents-api/token-store.ts";
import type { AskOutcome } from "../src/asks/pending.ts";
import { AskRegistry } from "../src/asks/registry.ts";
import { DatabaseUnavailableError } from "../src/cluster/errors.ts";
import { createClusterPool } from "../src/cluster/pool.ts";
import type { RunView } from "../src/domain/types.ts";
import { STORE_PG_TYPES } from "../src/store/pg-schema.ts";
import { postgresSql, type StoreSql } from "../src/store/sql.ts";
import { type Dialect, useStoreHandles } from "./helpers/store-handles.ts";

/**
 * The outside agents' rows on both dialects (issue 27): one suite, run on the SQLite file and on a real
 * Postgres, so AgentStore (tasks, asks) and AgentTokenStore (issued and revoked tokens) behave the same on
 * either. Two "instances" are two handles on one database (two connections to the file, two pools on the
 * server): a revocation written by one is what the other's next check reads.
 */

const store = useStoreHandles();
const handles = (dialect: Dialect, count = 2) => store.handles(dialect, count);

/**
 * Two handles for writers racing a transaction (revokeAgent). On Postgres, two pools. On the file, one handle:
 * there the other writer is another process (the bot beside `npm run token`), which waits for the lock
 * (busy_timeout) while the transaction's process goes on; a second handle in this process would wait
 * synchronously, holding the event loop the transaction needs to finish. One Kysely orders them instead.
 */
function racers(dialect: "sqlite" | "postgres", [a, b]: StoreSql[]): [StoreSql, StoreSql] {
  return dialect === "sqlite" ? [a!, a!] : [a!, b!];
}

const T0 = 1_700_000_000_000;
const SECRET = "dialects-secret-0123456789-0123456789";

function run(id: string, over: Partial<RunView> = {}): RunView {
  return {
    id,
    sessionId: `agent:CI bot:ou_alice`,
    senderId: "ou_alice",
    input: "Release 1.2",
    status: "running",
    steps: [{ id: "s1", tool: "agent", title: "Build", status: "done", startedAt: T0, endedAt: T0 + 5 }],
    startedAt: T0,
    agent: "CI bot",
    ...over,
  };
}

function task(
  id: string,
  over: Partial<StoredTask & { status: string }> = {},
): StoredTask & { status: string } {
  return {
    id,
    agent: "CI bot",
    tokenId: "at_owner000000",
    to: "ou_alice",
    chatType: "private",
    implicit: false,
    run: run(id),
    status: "running",
    ...over,
  };
}

const ANSWERED: AskOutcome = {
  kind: "answered",
  answers: [{ question: "Which database?", selectedLabels: ["Postgres"], customInput: null }],
  surface: "feishu",
  userId: "ou_alice",
};

/** A store whose write of a task's first step is slow, as behind a busy pooled connection. */
class SlowFirstStep extends AgentStore {
  override async saveTask(task: StoredTask & { status: string }, now: number): Promise<void> {
    const { steps } = task.run as RunView;
    if (steps.length === 1 && steps[0]?.title === "step 0")
      await new Promise((resolve) => setTimeout(resolve, 30));
    return super.saveTask(task, now);
  }
}

const principal = (agent: string, tokenId: string, issuedAt: number) => ({ agent, tokenId, issuedAt });

describe.each(["sqlite", "postgres"] as const)("the outside agents' rows on %s", (dialect) => {
  it("read a task back field for field; a later save changes its run and status only", async () => {
    const [a, b] = await handles(dialect);
    const writer = new AgentStore(a!);
    const reader = new AgentStore(b!);
    const group = task("t-group", { to: "oc_team", chatType: "group", implicit: true });
    await writer.saveTask(group, T0);
    const { status: _status, ...stored } = group;
    expect(await reader.task("t-group")).toEqual(stored);
    // A row from before token ids reads back without one.
    await writer.saveTask(task("t-old", { tokenId: undefined }), T0);
    expect(await reader.task("t-old")).not.toHaveProperty("tokenId");
    expect(await reader.task("nobody")).toBeUndefined();

    const ended = run("t-group", { status: "completed", endedAt: T0 + 60_000, text: "shipped" });
    await writer.saveTask(
      { ...group, agent: "Impostor", to: "ou_mallory", run: ended, status: "completed" },
      T0 + 1,
    );
    expect(await reader.task("t-group")).toEqual({ ...stored, run: ended });
    expect((await reader.runningTasks()).map((t) => t.id)).toEqual(["t-old"]);
  });

  it("order running tasks by their last write, ties by insertion; ended ones newest first, within the bound", async () => {
    const [sql] = await handles(dialect, 1);
    const store = new AgentStore(sql!);
    for (const id of ["zz", "aa", "mm"]) await store.saveTask(task(id), T0);
    expect((await store.runningTasks()).map((t) => t.id)).toEqual(["zz", "aa", "mm"]);
    // Written again later: last.
    await store.saveTask(task("zz"), T0 + 10);
    expect((await store.runningTasks()).map((t) => t.id)).toEqual(["aa", "mm", "zz"]);

    for (const id of ["e1", "e2", "e3"]) await store.saveTask(task(id, { status: "completed" }), T0 + 100);
    await store.saveTask(task("e-old", { status: "failed" }), T0 - 1);
    await store.saveTask(task("e-new", { status: "cancelled" }), T0 + 200);
    expect((await store.endedTasks(T0, 10)).map((t) => t.id)).toEqual(["e-new", "e3", "e2", "e1"]);
    expect((await store.endedTasks(T0, 2)).map((t) => t.id)).toEqual(["e-new", "e3"]);
    expect((await store.endedTasks(T0 - 1, 10)).map((t) => t.id)).toContain("e-old");
    expect((await store.runningTasks()).map((t) => t.id)).toEqual(["aa", "mm", "zz"]);
  });

  it("record an ask once and keep its first outcome: of twenty settles from two handles, one wins", async () => {
    const [a, b] = await handles(dialect);
    const stores = [new AgentStore(a!), new AgentStore(b!)];
    const ask = {
      askId: "ask-1",
      agent: "CI bot",
      tokenId: "at_owner000000",
      taskId: "t1",
      answererId: "ou_alice",
      createdAt: T0,
      expiresAt: T0 + 900_000,
    };
    await stores[0]!.saveAsk(ask);
    // A second save of the same id (a retry) changes nothing.
    await stores[1]!.saveAsk({ ...ask, agent: "Impostor", expiresAt: 1 });
    const { askId: _id, ...fields } = ask;
    expect(await stores[1]!.ask("ask-1")).toEqual(fields);
    expect(await stores[1]!.ask("nobody")).toBeUndefined();

    const outcomes: AskOutcome[] = Array.from({ length: 20 }, (_, i) =>
      i % 2 === 0 ? { ...ANSWERED, userId: `ou_${i}` } : { kind: "cancelled", reason: `writer ${i}` },
    );
    const won = await Promise.all(outcomes.map((o, i) => stores[i % 2]!.settleAsk("ask-1", o, T0 + i)));
    expect(won.filter(Boolean)).toHaveLength(1);
    const winner = won.indexOf(true);
    expect(await stores[0]!.ask("ask-1")).toEqual({
      ...fields,
      outcome: outcomes[winner],
      settledAt: T0 + winner,
    });
    expect(await stores[0]!.settleAsk("nobody", ANSWERED, T0)).toBe(false);
  });

  it("read an outcome edited by hand as none, the ask itself still there", async () => {
    const [sql] = await handles(dialect, 1);
    const store = new AgentStore(sql!);
    const ask = {
      askId: "ask-x",
      agent: "CI bot",
      taskId: "t1",
      answererId: "ou_a",
      createdAt: 1,
      expiresAt: 2,
    };
    await store.saveAsk(ask);
    await sql!.db
      .updateTable("agent_asks")
      .set({ outcome_json: '{"kind":"answered"}', settled_at: 3 })
      .execute();
    expect(await store.ask("ask-x")).toEqual({
      agent: "CI bot",
      taskId: "t1",
      answererId: "ou_a",
      createdAt: 1,
      expiresAt: 2,
      settledAt: 3,
    });
    await sql!.db.updateTable("agent_asks").set({ outcome_json: "not json" }).execute();
    expect((await store.ask("ask-x"))?.outcome).toBeUndefined();
  });

  it("read a token back field for field, its tokens in order of issue (ties by record), names sorted alike", async () => {
    const [a, b] = await handles(dialect);
    const writer = new AgentTokenStore(a!);
    const reader = new AgentTokenStore(b!);
    const token = {
      tokenId: "at_zzzz00000000",
      agent: "CI bot",
      mayAsk: ["ou_alice", "oc_team"],
      issuedAt: T0,
      expiresAt: T0 + 86_400_000,
    };
    await writer.record(token);
    await writer.record({ ...token, agent: "Impostor", mayAsk: [] });
    expect(await reader.token(token.tokenId)).toEqual({ ...token, revokedAt: undefined });
    expect(await reader.token("at_nobody0000000")).toBeUndefined();
    await writer.record({ ...token, tokenId: "at_aaaa00000000" });
    await writer.record({ ...token, tokenId: "at_early0000000", issuedAt: T0 - 1 });
    expect((await reader.tokensOf("CI bot")).map((t) => t.tokenId)).toEqual([
      "at_early0000000",
      "at_zzzz00000000",
      "at_aaaa00000000",
    ]);
    expect(await reader.tokensOf("Nobody")).toEqual([]);
    // Collations differ (Postgres may put "b" before "C"): code units, on either.
    for (const agent of ["b bot", "C bot", "a bot", "B bot"])
      await writer.record({ ...token, tokenId: `at_${agent.replace(" ", "")}00000000`, agent });
    expect(await reader.agents()).toEqual(["B bot", "C bot", "CI bot", "a bot", "b bot"]);
    // An allow-list edited by hand is shown as unreadable, not a crash.
    await a!.db
      .updateTable("issued_agent_tokens")
      .set({ may_json: "[oops" })
      .where("token_id", "=", token.tokenId)
      .execute();
    expect((await reader.token(token.tokenId))?.mayAsk).toEqual(["(unreadable: SyntaxError)"]);
  });

  it("see a revocation written on one handle at the next check on the other, and admit no revoked token", async () => {
    const [a, b] = await handles(dialect);
    const cli = new AgentTokenStore(a!);
    const server = new AgentTokenStore(b!);
    const now = Date.now();
    const mint = async (tokenId: string) => {
      await cli.record({
        tokenId,
        agent: "CI bot",
        mayAsk: ["ou_alice"],
        issuedAt: now,
        expiresAt: now + 60_000,
      });
      return signAgentToken(SECRET, {
        agent: "CI bot",
        mayAsk: ["ou_alice"],
        expiresAt: now + 60_000,
        issuedAt: now,
        tokenId,
      });
    };
    const first = await mint("at_first0000000");
    const second = await mint("at_second000000");
    expect(await checkAgentToken(SECRET, first, now, server)).toMatchObject({ ok: true });
    expect(await cli.revokeToken("at_first0000000", now + 1)).toBe(true);
    expect(await checkAgentToken(SECRET, first, now + 2, server)).toEqual({
      ok: false,
      reason: "token revoked",
    });
    expect(await checkAgentToken(SECRET, second, now + 2, server)).toMatchObject({ ok: true });
    expect((await server.token("at_first0000000"))?.revokedAt).toBe(now + 1);
    // Already revoked, or never recorded: nothing to revoke.
    expect(await cli.revokeToken("at_first0000000", now + 3)).toBe(false);
    expect(await cli.revokeToken("at_nobody0000000", now + 3)).toBe(false);
    // The name: every token of it issued until now, recorded or not (the console's are not).
    const unrecorded = signAgentToken(SECRET, {
      agent: "CI bot",
      mayAsk: [],
      expiresAt: now + 60_000,
      issuedAt: now + 5,
    });
    const revoked = await cli.revokeAgent("CI bot", now + 5);
    expect(revoked.map((t) => [t.tokenId, t.revokedAt])).toEqual([["at_second000000", now + 5]]);
    expect(await checkAgentToken(SECRET, second, now + 6, server)).toEqual({
      ok: false,
      reason: "token revoked",
    });
    // Issued in the revocation's own millisecond: refused too.
    expect(await checkAgentToken(SECRET, unrecorded, now + 6, server)).toEqual({
      ok: false,
      reason: "token revoked",
    });
    const later = signAgentToken(SECRET, {
      agent: "CI bot",
      mayAsk: [],
      expiresAt: now + 60_000,
      issuedAt: now + 6,
    });
    expect(await checkAgentToken(SECRET, later, now + 7, server)).toMatchObject({ ok: true });
    expect(await server.isRevoked(principal("Other bot", "at_other0000000", 0))).toBe(false);
  });

  it("revoke a token once of twenty writers at once, and a name's tokens once between two revocations", async () => {
    const [a, b] = await handles(dialect);
    const stores = [new AgentTokenStore(a!), new AgentTokenStore(b!)];
    const [c, d] = racers(dialect, [a!, b!]);
    const revokers = [new AgentTokenStore(c), new AgentTokenStore(d)];
    const base = { agent: "CI bot", mayAsk: [], issuedAt: T0, expiresAt: T0 + 86_400_000 };
    await stores[0]!.record({ ...base, tokenId: "at_contested000" });
    const won = await Promise.all(
      Array.from({ length: 20 }, (_, i) => stores[i % 2]!.revokeToken("at_contested000", T0 + i)),
    );
    expect(won.filter(Boolean)).toHaveLength(1);
    expect((await stores[1]!.token("at_contested000"))?.revokedAt).toBe(T0 + won.indexOf(true));

    const ids = Array.from({ length: 12 }, (_, i) => `at_live${String(i).padStart(8, "0")}`);
    for (const tokenId of ids) await stores[0]!.record({ ...base, tokenId });
    await stores[0]!.record({ ...base, tokenId: "at_expired00000", expiresAt: T0 + 10 });
    const [one, two] = await Promise.all([
      revokers[0]!.revokeAgent("CI bot", T0 + 100),
      revokers[1]!.revokeAgent("CI bot", T0 + 100),
    ]);
    const reported = [...one!, ...two!].map((t) => t.tokenId).sort();
    // Each live token reported by exactly one of them; the expired and the already revoked by neither.
    expect(reported).toEqual([...ids].sort());
  });

  it("never move a name's not-before back: an older revocation landing last lets no refused token in", async () => {
    const [a, b] = await handles(dialect);
    await new AgentTokenStore(a!).revokeAgent("CI bot", T0 + 2_000);
    await new AgentTokenStore(b!).revokeAgent("CI bot", T0 + 1_000);
    const reader = new AgentTokenStore(b!);
    expect(await reader.isRevoked(principal("CI bot", "at_between00000", T0 + 1_500))).toBe(true);
    expect(await reader.isRevoked(principal("CI bot", "at_after0000000", T0 + 2_001))).toBe(false);
    await new AgentTokenStore(a!).revokeAgent("CI bot", T0 + 3_000);
    expect(await reader.isRevoked(principal("CI bot", "at_after0000000", T0 + 2_001))).toBe(true);
  });

  it("refuse every token issued until a revocation that races its minting, and none issued after", async () => {
    const [a, b] = racers(dialect, await handles(dialect));
    const minter = new AgentTokenStore(a);
    const revoker = new AgentTokenStore(b);
    const at = T0 + 50;
    const minted = Array.from({ length: 100 }, (_, i) => ({
      tokenId: `at_race${String(i).padStart(8, "0")}`,
      agent: "CI bot",
      mayAsk: [],
      issuedAt: T0 + i,
      expiresAt: T0 + 86_400_000,
    }));
    const [revoked] = await Promise.all([
      revoker.revokeAgent("CI bot", at),
      ...minted.map((t) => minter.record(t)),
    ]);
    for (const t of minted) expect(await revoker.isRevoked(t), t.tokenId).toBe(t.issuedAt <= at);
    // What it reports it revoked were recorded and live when it ran: never one issued after it.
    for (const t of revoked as Awaited<ReturnType<AgentTokenStore["revokeAgent"]>>)
      expect(t.issuedAt).toBeLessThanOrEqual(at);
  });

  it("keep a task's latest state through writes that race each other, and give it back after a restart", async () => {
    const [a, b] = await handles(dialect);
    const registry = () =>
      new AskRegistry({
        timeoutMs: 60_000,
        now: Date.now,
        newId: randomUUID,
        onListenerError: (error) => {
          throw error;
        },
      });
    const who = {
      agent: "CI bot",
      mayAsk: new Set(["ou_alice"]),
      expiresAt: Number.MAX_SAFE_INTEGER,
      tokenId: "at_owner000000",
      issuedAt: 0,
    };
    const tasks = new AgentTasks({
      registry: registry(),
      now: Date.now,
      askTimeoutMs: 60_000,
      store: new SlowFirstStep(a!),
      stepsCoalesceMs: 0,
    });
    const { task_id } = await tasks.startTask(who, { to: "ou_alice", title: "Release" });
    const done = await tasks.startTask(who, { to: "ou_alice", title: "Done already" });
    await tasks.finishTask(who, { task_id: done.task_id, status: "completed", text: "shipped" });
    // Fifty steps at once, the first one's write slow (a busy connection): the later ones must not overtake it.
    await Promise.all(
      Array.from({ length: 50 }, (_, i) => tasks.reportProgress(who, { task_id, step: `step ${i}` })),
    );
    const row = await new AgentStore(b!).task(task_id);
    expect((row?.run as RunView | undefined)?.steps.map((s) => s.title)).toEqual(
      Array.from({ length: 50 }, (_, i) => `step ${i}`),
    );

    // Another process on the same store: the running task comes back; the ended one is read for the card side.
    const restarted = new AgentTasks({
      registry: registry(),
      now: Date.now,
      askTimeoutMs: 60_000,
      store: new AgentStore(b!),
    });
    const started: string[] = [];
    restarted.feed.on("run_started", ({ run: r }) => void started.push(r.id));
    expect(await restarted.resume()).toBe(1);
    expect(started).toEqual([task_id]);
    expect((await restarted.feed.getRun(task_id))?.steps).toHaveLength(50);
    expect(await restarted.feed.getRun(done.task_id)).toMatchObject({
      status: "completed",
      text: "shipped",
      agent: "CI bot",
    });
    expect(await restarted.reportProgress(who, { task_id, step: "after the restart" })).toEqual({
      task_id,
      steps: 51,
    });
  });
});

describe("the outside agents' rows when Postgres is away", () => {
  it("fail with DatabaseUnavailableError, and a door checking a token answers 503, not 401 or 500", async () => {
    const pool = createClusterPool({
      connectionString: "postgres://nobody@127.0.0.1:1/none",
      connectTimeoutMs: 500,
      types: STORE_PG_TYPES,
    });
    try {
      const sql = postgresSql(pool);
      await expect(new AgentStore(sql).task("t1")).rejects.toBeInstanceOf(DatabaseUnavailableError);
      await expect(new AgentTokenStore(sql).revokeAgent("CI bot", T0)).rejects.toMatchObject({ status: 503 });
      const app = express();
      const registry = new AskRegistry({
        timeoutMs: 60_000,
        now: Date.now,
        newId: randomUUID,
        onListenerError: (error) => {
          throw error;
        },
      });
      mountAgentHttpApi(app, {
        tasks: new AgentTasks({ registry, now: Date.now, askTimeoutMs: 60_000 }),
        authSecret: SECRET,
        now: Date.now,
        revocations: new AgentTokenStore(sql),
      });
      app.use(
        (
          error: { status?: number },
          _req: express.Request,
          res: express.Response,
          _next: express.NextFunction,
        ) => {
          res.status(error.status ?? 500).json({});
        },
      );
      const listening = app.listen(0, "127.0.0.1");
      await new Promise<void>((resolve) => listening.once("listening", resolve));
      const address = listening.address();
      const port = typeof address === "object" && address ? address.port : 0;
      const token = signAgentToken(SECRET, {
        agent: "CI bot",
        mayAsk: ["ou_alice"],
        expiresAt: Date.now() + 60_000,
      });
      const response = await fetch(`http://127.0.0.1:${port}/api/tasks`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ to: "ou_alice", title: "Release" }),
      });
      expect(response.status).toBe(503);
      await new Promise<void>((resolve) => listening.close(() => resolve()));
    } finally {
      await pool.end();
    }
  });
});
