import path from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { openDatabase } from "../src/store/db.ts";
import { FeishuStore } from "../src/store/feishu.ts";
import { MIGRATIONS } from "../src/store/migrations.ts";
import { Store } from "../src/store/repos.ts";
import { sqliteSql } from "../src/store/sql.ts";
import { tempDir } from "./helpers/core.ts";

describe("SQLite store", () => {
  it("creates the file under DATA_DIR and records the schema version", () => {
    const file = path.join(tempDir(), "nested", "bot.sqlite");
    const db = openDatabase(file);
    expect(db.pragma("user_version", { simple: true })).toBe(MIGRATIONS.length);
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .pluck()
      .all();
    expect(tables).toEqual(expect.arrayContaining(["messages", "queued_messages", "runs", "sessions"]));
    db.close();
  });

  it("re-opens an existing file without re-running migrations and keeps its rows", () => {
    const file = path.join(tempDir(), "bot.sqlite");
    const first = openDatabase(file);
    first
      .prepare(
        `INSERT INTO sessions (id, channel, chat_type, chat_id, workspace, owner_id, title, created_at, updated_at) VALUES ('s', 'web', 'none', NULL, '/w', 'u', 't', 1, 1)`,
      )
      .run();
    first.close();
    const second = openDatabase(file);
    expect(second.prepare("SELECT COUNT(*) FROM sessions").pluck().get()).toBe(1);
    second.close();
    const raw = new Database(file);
    expect(raw.pragma("integrity_check", { simple: true })).toBe("ok");
    raw.close();
  });

  it("upgrades a file from an earlier version in place: old runs keep their rows, new runs keep their source", async () => {
    const file = path.join(tempDir(), "bot.sqlite");
    const old = new Database(file);
    for (const sql of MIGRATIONS.slice(0, 2)) old.exec(sql);
    old.pragma("user_version = 2");
    old.prepare("INSERT INTO sessions VALUES ('s', 'feishu', 'p2p', 'oc_1', '/w', 'u', 't', 1, 1)").run();
    old
      .prepare(
        "INSERT INTO runs (id, session_id, sender_id, input, status, started_at) VALUES ('r0', 's', 'u', 'hi', 'running', 1)",
      )
      .run();
    old.close();
    const db = openDatabase(file);
    expect(db.pragma("user_version", { simple: true })).toBe(MIGRATIONS.length);
    const store = new Store(sqliteSql(db), () => 2);
    expect((await store.getRun("r0"))?.input).toBe("hi");
    expect(await store.runSource("r0")).toBeUndefined();
    const run = {
      id: "r1",
      sessionId: "s",
      senderId: "u",
      input: "go",
      status: "running" as const,
      steps: [],
      startedAt: 2,
    };
    await store.insertRun(run, { channel: "feishu", chatId: "oc_1", messageId: "om_1" });
    expect(await store.runSource("r1")).toEqual({ channel: "feishu", chatId: "oc_1", messageId: "om_1" });
    db.close();
  });

  it("keeps a step's words in every language across a reopen, and reads steps saved without them", async () => {
    const file = path.join(tempDir(), "bot.sqlite");
    const db = openDatabase(file);
    db.prepare(
      "INSERT INTO sessions (id, channel, chat_type, chat_id, workspace, owner_id, title, created_at, updated_at) VALUES ('s', 'feishu', 'group', 'oc_1', '/w', 'u', 't', 1, 1)",
    ).run();
    const words = {
      title: { zh_cn: "等待你的回答", en_us: "Waiting for your answer" },
      summary: { zh_cn: "回答了 1 个问题", en_us: "Answered 1 question" },
    };
    const steps = [
      {
        id: "a",
        tool: "ask_user_questions",
        title: "等待你的回答",
        status: "done" as const,
        words,
        startedAt: 1,
      },
      { id: "b", tool: "read", title: "Read the schema", status: "done" as const, startedAt: 1 },
    ];
    await new Store(sqliteSql(db), () => 2).insertRun({
      id: "r1",
      sessionId: "s",
      senderId: "u",
      input: "go",
      status: "running",
      steps,
      startedAt: 1,
    });
    db.close();
    const reopened = openDatabase(file);
    const store = new Store(sqliteSql(reopened), () => 3);
    expect((await store.getRun("r1"))?.steps).toEqual(steps);
    // A failed run's error keeps its words in every language; a run without them reads none.
    const errorWords = { zh_cn: "模型服务限流", en_us: "The model service is rate limiting" };
    const run = await store.getRun("r1");
    if (!run) throw new Error("run r1 was not saved");
    await store.saveRun({ ...run, status: "failed", error: "模型服务限流", errorWords, endedAt: 2 });
    expect(await store.getRun("r1")).toMatchObject({ error: "模型服务限流", errorWords });
    await store.saveRun({ ...run, status: "failed", error: "boom", endedAt: 2 });
    expect((await store.getRun("r1"))?.errorWords).toBeUndefined();
    reopened.close();
  });

  it("gives outside agents' tables to a fresh file and to one at the previous version, even if made ad hoc", () => {
    const agentTables = (db: Database.Database) =>
      db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'agent_%' ORDER BY name")
        .pluck()
        .all();
    const fresh = openDatabase(path.join(tempDir(), "fresh.sqlite"));
    expect(agentTables(fresh)).toEqual(["agent_asks", "agent_tasks"]);
    fresh.close();

    const file = path.join(tempDir(), "previous.sqlite");
    const old = new Database(file);
    // The version before the migration that made the agents' tables (later ones may follow it).
    const previous = MIGRATIONS.findIndex((sql) => sql.includes("CREATE TABLE IF NOT EXISTS agent_tasks"));
    expect(previous).toBeGreaterThan(0);
    for (const sql of MIGRATIONS.slice(0, previous)) old.exec(sql);
    old.pragma(`user_version = ${previous}`);
    expect(agentTables(old)).toEqual([]);
    old.close();
    const upgraded = openDatabase(file);
    expect(upgraded.pragma("user_version", { simple: true })).toBe(MIGRATIONS.length);
    expect(agentTables(upgraded)).toEqual(["agent_asks", "agent_tasks"]);
    upgraded.close();

    // A file from a build that created the tables itself on start, with a task row already in it.
    const adHocFile = path.join(tempDir(), "adhoc.sqlite");
    const adHoc = new Database(adHocFile);
    for (const sql of MIGRATIONS.slice(0, previous)) adHoc.exec(sql);
    adHoc.pragma(`user_version = ${previous}`);
    adHoc.exec(MIGRATIONS[previous] ?? "");
    adHoc
      .prepare("INSERT INTO agent_tasks VALUES ('t1', 'ci', 'ou_1', 'private', 0, '{}', 'running', 1)")
      .run();
    adHoc.close();
    const kept = openDatabase(adHocFile);
    expect(kept.pragma("user_version", { simple: true })).toBe(MIGRATIONS.length);
    expect(kept.prepare("SELECT id FROM agent_tasks").pluck().all()).toEqual(["t1"]);
    kept.close();
  });
});

describe("progress cards' final state", () => {
  const HOUR_MS = 60 * 60 * 1000;
  const card = (runId: string, createdAt: number) =>
    `INSERT INTO progress_cards (run_id, session_id, message_id, chat_id, sender_id, source_message_id, created_at)
     VALUES ('${runId}', 's', 'om_${runId}', 'oc_1', 'ou_1', 'om_src', ${createdAt})`;
  const run = (id: string, status: string, endedAt: number | null) =>
    `INSERT INTO runs (id, session_id, sender_id, input, status, started_at, ended_at)
     VALUES ('${id}', 's', 'ou_1', 'x', '${status}', 1, ${endedAt ?? "NULL"})`;

  it("upgrades a file: cards of runs ended over an hour ago count as landed, recent and live ones do not", async () => {
    const file = path.join(tempDir(), "previous.sqlite");
    const old = new Database(file);
    const previous = MIGRATIONS.findIndex((sql) => sql.includes("final_landed_at"));
    expect(previous).toBeGreaterThan(0);
    for (const sql of MIGRATIONS.slice(0, previous)) old.exec(sql);
    old.pragma(`user_version = ${previous}`);
    const now = Date.now();
    old.exec("INSERT INTO sessions VALUES ('s', 'feishu', 'private', 'oc_1', '/w', 'ou_1', 't', 1, 1)");
    old.exec(`${run("old", "completed", now - 2 * HOUR_MS)};${card("old", now - 3 * HOUR_MS)}`);
    old.exec(`${run("recent", "failed", now - 60_000)};${card("recent", now - 120_000)}`);
    old.exec(`${run("live", "running", null)};${card("live", now - 60_000)}`);
    old.close();

    const db = openDatabase(file);
    const store = FeishuStore.onFile(db, () => now);
    expect((await store.cardForRun("old"))?.finalLandedAt).toBe(now - 3 * HOUR_MS);
    expect((await store.cardForRun("recent"))?.finalLandedAt).toBeUndefined();
    expect((await store.cardForRun("live"))?.finalLandedAt).toBeUndefined();
    // What a start may owe: not landed, not gone, young enough. Whether the run ended is the run feed's to say
    // (the lifecycle skips the live run, which is resumed): this table names no other area's.
    const runIds = async (since: number) => (await store.finalPending(since)).map((c) => c.runId);
    expect(await runIds(now - 14 * 24 * HOUR_MS)).toEqual(["recent", "live"]);
    expect(await runIds(now - 60_000)).toEqual(["live"]);
    await store.markFinalLanded("recent", now);
    expect(await runIds(0)).toEqual(["live"]);
    db.close();
  });

  it("forgets the mark when the card is sent again, and leaves gone cards out", async () => {
    const db = openDatabase(path.join(tempDir(), "bot.sqlite"));
    db.exec(
      `INSERT INTO sessions (id, channel, chat_type, chat_id, workspace, owner_id, title, created_at, updated_at) VALUES ('s', 'feishu', 'private', 'oc_1', '/w', 'ou_1', 't', 1, 1)`,
    );
    db.exec(`${run("a", "completed", 5)};${run("b", "cancelled", 5)}`);
    const store = FeishuStore.onFile(db, () => 10);
    const row = {
      sessionId: "s",
      chatId: "oc_1",
      senderId: "ou_1",
      sourceMessageId: "om_src",
      createdAt: 10,
    };
    await store.saveCard({ ...row, runId: "a", messageId: "om_a" });
    await store.saveCard({ ...row, runId: "b", messageId: "om_b" });
    await store.markCardGone("b");
    expect((await store.finalPending(0)).map((c) => c.runId)).toEqual(["a"]);
    await store.markFinalLanded("a", 11);
    await store.saveCard({ ...row, runId: "a", messageId: "om_a2" });
    expect((await store.finalPending(0)).map((c) => c.messageId)).toEqual(["om_a2"]);
    db.close();
  });
});

describe("topic sessions", () => {
  const topic = {
    id: "feishu-cli_a1-group-oc_team-topic-om_root",
    channel: "feishu" as const,
    chatType: "group" as const,
    chatId: "oc_team",
    workspace: "/d/workspaces/feishu-chat/oc_team/topics/om_root",
    ownerId: "ou_a",
    title: "t",
  };

  it("stores the topic a session is and reads it back; other sessions have none", async () => {
    const store = new Store(sqliteSql(openDatabase(":memory:")), () => 1);
    const recorded = {
      ...topic,
      topic: { chatId: "oc_team", rootMessageId: "om_root", groupSessionId: "feishu-cli_a1-group-oc_team" },
    };
    await store.upsertSession(recorded);
    await store.upsertSession({ ...topic, id: "feishu-cli_a1-group-oc_team", workspace: "/d/w" });
    expect(await store.getSession(topic.id)).toEqual(recorded);
    expect((await store.getSession("feishu-cli_a1-group-oc_team"))?.topic).toBeUndefined();
    await expect(
      store.upsertSession({ ...recorded, id: "x", topic: { ...recorded.topic, chatId: "oc_b" } }),
    ).rejects.toThrow(/not its chat/);
  });

  it("back-fills topic rows of an earlier version once, by the row's own chat id", async () => {
    const file = path.join(tempDir(), "topics.sqlite");
    const old = new Database(file);
    const previous = MIGRATIONS.findIndex((sql) => sql.includes("topic_root_id"));
    expect(previous).toBeGreaterThan(0);
    for (const sql of MIGRATIONS.slice(0, previous)) old.exec(sql);
    old.pragma(`user_version = ${previous}`);
    const insert = old.prepare(
      "INSERT INTO sessions VALUES (@id, 'feishu', @chatType, @chatId, @workspace, 'ou_a', 't', 1, 1)",
    );
    insert.run({ id: topic.id, chatType: "group", chatId: "oc_team", workspace: topic.workspace });
    // A group whose chat id has '-topic-' in it (accepted then): its id reads like a topic of oc_x; it is none.
    insert.run({
      id: "feishu-cli_a1-group-oc_x-topic-om_y",
      chatType: "group",
      chatId: "oc_x-topic-om_y",
      workspace: "/d/workspaces/feishu-chat/oc_x-topic-om_y",
    });
    insert.run({
      id: "feishu-cli_a1-group-oc_team",
      chatType: "group",
      chatId: "oc_team",
      workspace: "/d/w",
    });
    insert.run({ id: "feishu-cli_a1-private-ou_a", chatType: "private", chatId: "oc_p", workspace: "/d/p" });
    old.close();

    const store = new Store(sqliteSql(openDatabase(file)), () => 2);
    expect((await store.getSession(topic.id))?.topic).toEqual({
      chatId: "oc_team",
      rootMessageId: "om_root",
      groupSessionId: "feishu-cli_a1-group-oc_team",
    });
    for (const id of [
      "feishu-cli_a1-group-oc_x-topic-om_y",
      "feishu-cli_a1-group-oc_team",
      "feishu-cli_a1-private-ou_a",
    ])
      expect((await store.getSession(id))?.topic).toBeUndefined();
  });
});
