import { randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { createClusterPool } from "../src/cluster/pool.ts";
import { type Emulator, encryptBody, signBody, startEmulator } from "../src/local/emulator/index.ts";
import { type MainProcess, startMain } from "../test/helpers/main-process.ts";
import { clock, sleep } from "./common.ts";
import type { PreparedRequest } from "./http-burst-worker.ts";

/**
 * The instances benchmark's world: the real entry point (`npm start` = `tsx src/main.ts`) as child processes in
 * feishu mode behind one app of the emulator, webhook transport, on one SQLite file or one Postgres database,
 * as test/instances-process.test.ts runs them; the tasks they hold, and the store's rows read from outside.
 */

export const ENCRYPT_KEY = "bench-instances-encrypt-key";
const AUTH_SECRET = "bench-instances-secret-0123456789abcdef";

export type StoreKind = { kind: "sqlite" } | { kind: "postgres"; url: string };

/** The store's rows as the benchmark reads them, on either dialect (plain SQL valid on both). */
export interface Rows {
  all(sql: string): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

export interface Fleet {
  emulator: Emulator;
  bots: MainProcess[];
  rows: Rows;
  /** The instances not killed. */
  alive(): MainProcess[];
  /** One more instance, as the others were started (a replacement); in `bots` once it listens. */
  add(): Promise<MainProcess>;
  close(): Promise<void>;
}

export const hookOf = (bot: MainProcess) => `http://127.0.0.1:${bot.port}/feishu/events`;
export const pidOf = (holder: string) => Number(holder.split(":")[1]);

export async function startFleet(options: {
  count: number;
  store: StoreKind;
  cardPatchIntervalMs: number;
  leaseMs?: number;
}): Promise<Fleet> {
  const emulator = await startEmulator({ encryptKey: ENCRYPT_KEY });
  const dirs: string[] = [];
  const start = () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-bench-instance-"));
    dirs.push(dataDir);
    return startMain({
      startMs: 180_000,
      env: {
        LOG_LEVEL: "warn",
        DATA_DIR: dataDir,
        ...(options.store.kind === "postgres" ? { DATABASE_URL: options.store.url } : {}),
        ...(options.leaseMs ? { INSTANCE_LEASE_MS: String(options.leaseMs) } : {}),
        FEISHU_APP_ID: emulator.appId,
        FEISHU_APP_SECRET: emulator.appSecret,
        FEISHU_DOMAIN: emulator.url,
        FEISHU_TRANSPORT: "webhook",
        FEISHU_ENCRYPT_KEY: ENCRYPT_KEY,
        AUTH_SECRET,
        DEMO_STEP_MS: "10",
        CARD_PATCH_INTERVAL_MS: String(options.cardPatchIntervalMs),
        // The question's ping is a message of its own per ask: not what is measured here.
        FEISHU_ASK_PING: "off",
        // Feishu's callbacks come from many addresses; the benchmark's client is one (as in bench/callbacks.ts).
        MAX_CONNECTIONS_PER_ADDRESS: "4096",
      },
    });
  };
  const bots = await Promise.all(Array.from({ length: options.count }, start)).catch(async (error) => {
    await emulator.close();
    throw error;
  });
  const rows =
    options.store.kind === "postgres"
      ? postgresRows(options.store.url)
      : sqliteRows(path.join(dirs[0] ?? "", "bot.sqlite"));
  return {
    emulator,
    bots,
    rows,
    alive: () => bots.filter((bot) => bot.child.exitCode === null && bot.child.signalCode === null),
    async add() {
      const bot = await start();
      bots.push(bot);
      return bot;
    },
    async close() {
      await Promise.all(bots.map((bot) => bot.kill()));
      await rows.close();
      await emulator.close();
      for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

function postgresRows(url: string): Rows {
  const pool = createClusterPool({ connectionString: url });
  return {
    all: async (sql) => (await pool.query<Record<string, unknown>>(sql)).rows,
    close: () => pool.end(),
  };
}

/** Read-only beside the bot's own handle: WAL lets a reader see every committed row without blocking it. */
function sqliteRows(file: string): Rows {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  return {
    all: async (sql) => db.prepare(sql).all() as Record<string, unknown>[],
    close: async () => void db.close(),
  };
}

/** A database of its own on the server, so that every row starts from an empty store. */
export async function freshDatabase(serverUrl: string, name: string): Promise<string> {
  const admin = createClusterPool({ connectionString: serverUrl });
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export interface Task {
  user: string;
  messageId: string;
  cardId: string;
  requestId: string;
  sessionId: string;
  runId: string;
}

export const cardsOf = (emulator: Emulator, messageId: string) =>
  emulator.messages.listMessages().filter((m) => m.parentId === messageId && m.msgType === "interactive");

/**
 * `count` people each send the demo agent a message (delivered to the instance `pick` names), and each task
 * waits on its question: resolves once every card shows its form. Setup, not measured: 20 messages at a time,
 * so that each is acknowledged within the platform's 3 s on a busy machine.
 */
export async function openTasks(
  fleet: Fleet,
  count: number,
  tag: string,
  pick: () => MainProcess,
): Promise<Task[]> {
  const { emulator } = fleet;
  const messages: { user: string; messageId: string }[] = [];
  for (let start = 0; start < count; start += 20) {
    const batch = Array.from({ length: Math.min(20, count - start) }, (_, i) => start + i);
    await Promise.all(
      batch.map(async (i) => {
        const user = `ou_${tag}x${i}x`.padEnd(35, "0");
        const message = emulator.userMessage({ chatType: "p2p", senderOpenId: user, text: "帮我部署" });
        const answer = await emulator.deliverWebhook(hookOf(pick()), message, { timeoutMs: 30_000 });
        if (answer.status !== 200) throw new Error(`message ${i} refused: HTTP ${answer.status}`);
        messages.push({ user, messageId: message.event.message.message_id });
      }),
    );
  }
  // A guard, not a measure: a newcomer among live instances may wait for its budget share before it sends.
  const deadline = clock() + count * 400 + 180_000;
  const tasks = new Map<string, Task>();
  while (tasks.size < count) {
    for (const { user, messageId } of messages) {
      if (tasks.has(messageId)) continue;
      const card = cardsOf(emulator, messageId)[0];
      const content = card?.content ?? "";
      if (!card || !content.includes('"tag":"form"')) continue;
      const grab = (key: string) => new RegExp(`"${key}":"([^"]+)"`).exec(content)?.[1] ?? "";
      const task = { user, messageId, cardId: card.messageId, requestId: grab("requestId") };
      tasks.set(messageId, { ...task, sessionId: grab("sessionId"), runId: grab("runId") });
    }
    if (clock() > deadline) throw new Error(`only ${tasks.size} of ${count} cards showed their form`);
    if (tasks.size < count) await sleep(200);
  }
  return [...tasks.values()];
}

/** The card submit of a task's form: the demo's two questions answered (部署方式 Docker, 附加功能 the third). */
export function submitOf(emulator: Emulator, task: Task, operator = task.user) {
  return emulator.cardAction({
    messageId: task.cardId,
    operatorOpenId: operator,
    name: "ask0_submit",
    value: {
      kind: "feishu_ask",
      act: "submit",
      sessionId: task.sessionId,
      requestId: task.requestId,
      sender: task.user,
    },
    formValue: { ask0_q0: "0", ask0_q1: ["2"] },
  });
}

/** A POST as Feishu sends it (encrypted, signed), for the worker thread to fire (bench/http-burst-worker.ts). */
export function signedPost(emulator: Emulator, url: string, payload: unknown): PreparedRequest {
  const timestamp = String(Math.floor(emulator.clock.now() / 1000));
  const nonce = randomBytes(8).toString("hex");
  const body = JSON.stringify({ encrypt: encryptBody(ENCRYPT_KEY, JSON.stringify(payload)) });
  return {
    url,
    headers: {
      "content-type": "application/json; charset=utf-8",
      "x-lark-request-timestamp": timestamp,
      "x-lark-request-nonce": nonce,
      "x-lark-signature": signBody(ENCRYPT_KEY, timestamp, nonce, body),
    },
    body,
  };
}

export interface Outcome {
  /** Runs whose row says completed. */
  completed: number;
  /** Tasks whose question was not answered exactly once: its ask not `answered`, or other than one tool result. */
  notOnce: number;
  /** Messages with other than one card. */
  cardsNotOne: number;
  /** Cards showing the completed state (green). */
  green: number;
}

/** What became of the tasks, from the store's rows and the emulator's messages. */
export async function outcomeOf(fleet: Fleet, tasks: readonly Task[]): Promise<Outcome> {
  const runs = new Map(
    (await fleet.rows.all("SELECT id, status FROM runs")).map((r) => [String(r.id), String(r.status)]),
  );
  const asks = new Map(
    (await fleet.rows.all("SELECT request_id, status FROM asks")).map((r) => [
      String(r.request_id),
      String(r.status),
    ]),
  );
  const results = new Map(
    (
      await fleet.rows.all(
        "SELECT run_id, count(*) AS n FROM messages WHERE tool_name = 'ask_user_questions' GROUP BY run_id",
      )
    ).map((r) => [String(r.run_id), Number(r.n)]),
  );
  const content = (task: Task) => fleet.emulator.messages.getMessage(task.cardId)?.content ?? "";
  return {
    completed: tasks.filter((t) => runs.get(t.runId) === "completed").length,
    notOnce: tasks.filter((t) => asks.get(t.requestId) !== "answered" || results.get(t.runId) !== 1).length,
    cardsNotOne: tasks.filter((t) => cardsOf(fleet.emulator, t.messageId).length !== 1).length,
    green: tasks.filter((t) => content(t).includes('"template":"green"')).length,
  };
}

/** Waits until every task's run is completed and its card green, or `ms` passed; the outcome either way. */
export async function settled(fleet: Fleet, tasks: readonly Task[], ms: number): Promise<Outcome> {
  const deadline = clock() + ms;
  for (;;) {
    const outcome = await outcomeOf(fleet, tasks);
    const done = outcome.completed === tasks.length && outcome.green === tasks.length;
    if (done || clock() > deadline) return outcome;
    await sleep(250);
  }
}
