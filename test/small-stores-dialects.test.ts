import fs from "node:fs";
import { IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import express from "express";
import { afterEach, describe, expect, it } from "vitest";
import { checkToken, signLinkToken, signToken } from "../src/auth/token.ts";
import { CardKitTransport } from "../src/feishu/cardkit/transport.ts";
import { createLogger } from "../src/logger.ts";
import { AskStore } from "../src/store/asks.ts";
import { auditForSession } from "../src/store/audit.ts";
import { CardEntityStore } from "../src/store/cardkit.ts";
import { openDatabase } from "../src/store/db.ts";
import { ensureStoreSchema, STORE_PG_TYPES } from "../src/store/pg-schema.ts";
import { postgresSql, type StoreSql, sqliteSql } from "../src/store/sql.ts";
import { StoreTokenRevocations } from "../src/store/token-revocations.ts";
import { strings } from "../src/strings/index.ts";
import { mountAuth } from "../src/web/auth.ts";
import type { Connection } from "../src/ws/connections.ts";
import { admit, tokensHolding } from "../src/ws/upgrade.ts";
import { sampleAsk } from "./fixtures.ts";
import { usePostgres } from "./helpers/postgres.ts";

/**
 * Issue 27's small repositories on both dialects: sign-in (revocations, spent links), the audit and CardKit
 * entities, one suite run on the SQLite file and on a real Postgres. Two "instances" are two handles on one
 * database (two connections to the file, two pools on the server): what one writes, the other reads.
 */

const pg = usePostgres();
const logger = createLogger({ level: "silent" });
const SECRET = "small-stores-dialects-secret-0123";
const ALICE = "ou_alice";
const dirs: string[] = [];
const closers: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** Opens `count` handles on one fresh database of `dialect`, and a way to make the first unreadable. */
async function handles(
  dialect: "sqlite" | "postgres",
  count = 2,
): Promise<{ sql: StoreSql[]; cut: () => void }> {
  if (dialect === "sqlite") {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-small-stores-"));
    dirs.push(dir);
    const dbs = Array.from({ length: count }, () => openDatabase(path.join(dir, "bot.sqlite")));
    closers.push(() => {
      for (const db of dbs) if (db.open) db.close();
    });
    return { sql: dbs.map(sqliteSql), cut: () => dbs[0]?.close() };
  }
  const pools = Array.from({ length: count }, () => pg().pool({ types: STORE_PG_TYPES }));
  await ensureStoreSchema(pools[0]!);
  return { sql: pools.map(postgresSql), cut: () => void pools[0]?.end() };
}

describe.each(["sqlite", "postgres"] as const)("sign-in on %s", (dialect) => {
  it("keeps a revocation for every instance: not-before and generation read back, each revocation one generation on", async () => {
    const {
      sql: [a, b],
    } = await handles(dialect);
    const [one, two] = [new StoreTokenRevocations(a!), new StoreTokenRevocations(b!)];
    expect(await two.revocation(ALICE)).toBeUndefined();
    expect(await two.generation(ALICE)).toBe(0);
    expect(await one.revoke(ALICE, 1_000)).toBe(1_001);
    expect(await two.revocation(ALICE)).toEqual({ notBefore: 1_001, generation: 1 });
    expect(await two.revoke(ALICE, 5_000)).toBe(5_001);
    expect(await one.revocation(ALICE)).toEqual({ notBefore: 5_001, generation: 2 });
    expect(await one.revocation("ou_bob")).toBeUndefined();
    // Ten revocations at once from both handles: none is lost.
    await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? one : two).revoke(ALICE, 6_000 + i)));
    expect((await one.revocation(ALICE))?.generation).toBe(12);
  });

  it("refuses, on the other instance, a token issued before the revocation or minted in an earlier generation", async () => {
    const {
      sql: [a, b],
    } = await handles(dialect);
    const [one, two] = [new StoreTokenRevocations(a!), new StoreTokenRevocations(b!)];
    const old = signToken(SECRET, ALICE, 100_000, 1_000, 0);
    const legacy = signToken(SECRET, ALICE, 100_000, 1_000); // no generation: the iat rule
    expect((await checkToken(SECRET, old, 2_000, two)).ok).toBe(true);
    await one.revoke(ALICE, 2_000);
    expect(await checkToken(SECRET, old, 3_000, two)).toEqual({ ok: false, reason: "token revoked" });
    expect(await checkToken(SECRET, legacy, 3_000, two)).toEqual({ ok: false, reason: "token revoked" });
    const fresh = signToken(SECRET, ALICE, 100_000, 3_000, await two.generation(ALICE));
    expect(await checkToken(SECRET, fresh, 3_000, one)).toMatchObject({
      ok: true,
      userId: ALICE,
      generation: 1,
    });
  });

  it("spends a link once on any instance: twenty at once from two handles, exactly one winner", async () => {
    const {
      sql: [a, b],
    } = await handles(dialect);
    const stores = [new StoreTokenRevocations(a!), new StoreTokenRevocations(b!)];
    const spent = await Promise.all(
      Array.from({ length: 20 }, (_, i) => stores[i % 2]!.spendLink("hash-1", 10_000, 1_000 + i)),
    );
    expect(spent.filter(Boolean)).toHaveLength(1);
    expect(await stores[0]!.spendLink("hash-1", 10_000, 2_000)).toBe(false);
    expect(await stores[1]!.spendLink("hash-2", 10_000, 2_000)).toBe(true);
    // Kept until it would have expired; after that its row is gone (the link itself is refused as expired).
    expect(await stores[1]!.spendLink("hash-3", 10_001, 10_001)).toBe(true);
    expect(await stores[0]!.spendLink("hash-1", 10_000, 10_001)).toBe(true);
  });

  it("opens a sign-in link once across two instances' /auth/link, and the cookie it set ends at a revocation", async () => {
    const {
      sql: [a, b],
    } = await handles(dialect);
    const [one, two] = [new StoreTokenRevocations(a!), new StoreTokenRevocations(b!)];
    const base = async (revocations: StoreTokenRevocations) => {
      const app = express();
      mountAuth(app, { authSecret: SECRET, now: Date.now, logger, revocations });
      const server = app.listen(0);
      closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
      await new Promise((resolve) => server.once("listening", resolve));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    };
    const [first, second] = [await base(one), await base(two)];
    const link = signLinkToken(SECRET, ALICE, Date.now() + 60_000, Date.now(), 0);
    const open = (at: string) =>
      fetch(`${at}/auth/link?token=${encodeURIComponent(link)}`, { redirect: "manual" });
    const opened = await open(first);
    expect(opened.status).toBe(303);
    const again = await open(second);
    expect(again.status).toBe(401);
    expect(await again.text()).toContain(strings.signIn.linkUsed);
    const cookie = /fpb_session=([^;]+)/.exec(opened.headers.get("set-cookie") ?? "")?.[1] ?? "";
    const me = () => fetch(`${second}/auth/me`, { headers: { cookie: `fpb_session=${cookie}` } });
    expect((await me()).status).toBe(200);
    await one.revoke(ALICE, Date.now());
    expect((await me()).status).toBe(401);
  });

  it("lets the socket in, and keeps it at each heartbeat, only while its token holds; a store it cannot read lets nobody in and closes nobody", async () => {
    const {
      sql: [a, b],
      cut,
    } = await handles(dialect);
    const [one, two] = [new StoreTokenRevocations(a!), new StoreTokenRevocations(b!)];
    const deps = { authSecret: SECRET, now: Date.now, logger, revocations: one };
    const token = signToken(SECRET, ALICE, Date.now() + 60_000, Date.now(), 0);
    const request = new IncomingMessage(new Socket());
    request.headers = { authorization: `Bearer ${token}` };
    const url = new URL("http://localhost/ws");
    const admitted = await admit(request, url, deps);
    expect(admitted).toMatchObject({ ok: true, userId: ALICE, token: { generation: 0 } });
    if (!admitted.ok) return;
    const connection: Connection = {
      id: 1,
      userId: ALICE,
      socket: { send: () => undefined, close: () => undefined, readyState: 1 },
      subscriptions: new Set(),
      closed: false,
      token: admitted.token,
    };
    expect((await tokensHolding(deps, [ALICE]))(connection)).toBe(true);
    await two.revoke(ALICE, Date.now());
    expect((await tokensHolding(deps, [ALICE]))(connection)).toBe(false);
    expect(await admit(request, url, deps)).toEqual({ ok: false, status: 401, text: "Unauthorized" });
    // The store goes away: the upgrade rejects (the hub answers 503), the heartbeat keeps what it cannot check.
    const unrevoked = signToken(SECRET, "ou_bob", Date.now() + 60_000, Date.now(), 0);
    request.headers = { authorization: `Bearer ${unrevoked}` };
    cut();
    await expect(admit(request, url, deps)).rejects.toThrow();
    expect((await tokensHolding(deps, [ALICE]))(connection)).toBe(true);
  });
});

const QUESTIONS = sampleAsk().questions;
const ask = (requestId: string, createdAt: number) => ({
  requestId,
  sessionId: "s1",
  runId: "run-1",
  toolCallId: "call-1",
  answererId: ALICE,
  questions: QUESTIONS,
  surfaces: ["feishu", "websocket"],
  createdAt,
  expiresAt: createdAt + 900_000,
});

describe.each(["sqlite", "postgres"] as const)("the audit on %s", (dialect) => {
  it("shows each ask of a session as asked and as it ended, every field, ties on the clock in the order asked", async () => {
    const {
      sql: [a, b],
    } = await handles(dialect);
    const asks = new AskStore(a!);
    for (const id of ["r3", "r1", "r2"]) await asks.insert(ask(id, id === "r2" ? 7_000 : 5_000));
    await asks.insert({ ...ask("other", 1_000), sessionId: "s2" });
    await asks.settle("r1", { status: "answered", answers: [], via: "feishu", by: "ou_bob", at: 6_000 });
    await asks.settle("r2", { status: "cancelled", at: 8_000 });
    const shared = { sessionId: "s1", runId: "run-1", answererId: ALICE, surfaces: ["feishu", "websocket"] };
    expect(await auditForSession(b!, "s1")).toEqual([
      {
        ...shared,
        requestId: "r3",
        questions: QUESTIONS.length,
        askedAt: 5_000,
        outcome: null,
        answeredBy: null,
        answeredVia: null,
        settledAt: null,
      },
      {
        ...shared,
        requestId: "r1",
        questions: QUESTIONS.length,
        askedAt: 5_000,
        outcome: "answered",
        answeredBy: "ou_bob",
        answeredVia: "feishu",
        settledAt: 6_000,
      },
      {
        ...shared,
        requestId: "r2",
        questions: QUESTIONS.length,
        askedAt: 7_000,
        outcome: "cancelled",
        answeredBy: null,
        answeredVia: null,
        settledAt: 8_000,
      },
    ]);
    expect(await auditForSession(b!, "nobody")).toEqual([]);
  });

  it("refuses a row edited by hand, with a message", async () => {
    const {
      sql: [a],
    } = await handles(dialect, 1);
    await new AskStore(a!).insert(ask("r1", 5_000));
    await a!.db.updateTable("asks").set({ surfaces: '{"feishu":true}' }).execute();
    await expect(auditForSession(a!, "s1")).rejects.toThrow(/expected array/i);
  });
});

describe.each(["sqlite", "postgres"] as const)("CardKit entities on %s", (dialect) => {
  it("read back every field as written, on the other instance too", async () => {
    const {
      sql: [a, b],
    } = await handles(dialect);
    const [one, two] = [new CardEntityStore(a!), new CardEntityStore(b!)];
    expect(await two.byKey("run-1")).toBeUndefined();
    await one.created("run-1", "card-1");
    await one.created("run-1", "card-2"); // a retried reply: the entity made first stays
    const fresh = {
      key: "run-1",
      cardId: "card-1",
      messageId: undefined,
      reserved: 0,
      streamingSince: undefined,
      fallback: false,
      static: false,
      staticMessageId: undefined,
    };
    expect(await two.byKey("run-1")).toEqual(fresh);
    await one.sent("run-1", "om_1");
    await one.streaming("run-1", 1_700_000_000_000);
    await one.reserve("run-1", 3);
    expect(await two.byMessage("om_1")).toEqual({
      ...fresh,
      messageId: "om_1",
      reserved: 3,
      streamingSince: 1_700_000_000_000,
    });
    await two.streaming("run-1", undefined);
    await two.fallback("run-1");
    expect(await one.byKey("run-1")).toMatchObject({
      streamingSince: undefined,
      fallback: true,
      static: false,
    });
    await two.toStatic("run-1");
    await two.staticSent("run-1", "om_static");
    expect(await one.byMessage("om_1")).toEqual({
      ...fresh,
      messageId: "om_1",
      reserved: 3,
      fallback: true,
      static: true,
      staticMessageId: "om_static",
    });
    expect(await one.byMessage("om_none")).toBeUndefined();
  });

  it("never lowers a reserved sequence: reservations out of order from two instances leave the highest", async () => {
    const {
      sql: [a, b],
    } = await handles(dialect);
    const stores = [new CardEntityStore(a!), new CardEntityStore(b!)];
    await stores[0]!.created("run-1", "card-1");
    const order = [7, 3, 12, 1, 9, 12, 5, 11, 2, 8];
    await Promise.all(order.map((upTo, i) => stores[i % 2]!.reserve("run-1", upTo)));
    expect((await stores[1]!.byKey("run-1"))?.reserved).toBe(12);
    await stores[1]!.reserve("run-1", 4);
    expect((await stores[0]!.byKey("run-1"))?.reserved).toBe(12);
  });

  it("a transport opened on another instance continues above every sequence reserved before", async () => {
    const {
      sql: [a, b],
    } = await handles(dialect);
    const [one, two] = [new CardEntityStore(a!), new CardEntityStore(b!)];
    await one.created("run-1", "card-1");
    await one.sent("run-1", "om_1");
    await one.reserve("run-1", 5);
    const sequences: number[] = [];
    const api = {
      create: async () => ({ cardId: "card-1" }),
      send: async () => ({ messageId: "om_1" }),
      update: async (_card: string, _json: object, sequence: number) => void sequences.push(sequence),
      settings: async (_card: string, _config: object, sequence: number) => void sequences.push(sequence),
      content: async (_card: string, _id: string, _text: string, sequence: number) =>
        void sequences.push(sequence),
    };
    const transport = await CardKitTransport.open(
      { api, store: two, log: logger, now: Date.now },
      { key: "run-1", cardId: "card-1", messageId: "om_1", messenger: { patchCard: async () => undefined } },
    );
    const card = {
      schema: "2.0",
      config: { update_multi: true },
      body: { elements: [{ tag: "markdown", content: "a" }] },
    };
    await transport.update(card as never, { key: "", formOpen: false, final: true });
    transport.close();
    expect(sequences).toEqual([6]);
    expect((await one.byKey("run-1"))?.reserved).toBe(6);
  });
});

describe("CardKit entities on a SQLite file of an earlier build", () => {
  it("gets the static fallback's columns added, its rows kept", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-small-stores-"));
    dirs.push(dir);
    const db = openDatabase(path.join(dir, "bot.sqlite"));
    closers.push(() => {
      db.close();
    });
    db.exec(`CREATE TABLE cardkit_entities (key TEXT PRIMARY KEY, card_id TEXT NOT NULL, message_id TEXT,
      reserved INTEGER NOT NULL DEFAULT 0, streaming_since INTEGER, fallback INTEGER NOT NULL DEFAULT 0);
      INSERT INTO cardkit_entities (key, card_id, message_id, reserved) VALUES ('run-1', 'card-1', 'om_1', 4);`);
    const store = new CardEntityStore(sqliteSql(db));
    expect(await store.byMessage("om_1")).toMatchObject({ key: "run-1", reserved: 4, static: false });
    await store.toStatic("run-1");
    await store.staticSent("run-1", "om_static");
    expect(await store.byKey("run-1")).toMatchObject({ static: true, staticMessageId: "om_static" });
  });
});
