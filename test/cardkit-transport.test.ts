import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createLarkCardKit } from "../src/feishu/cardkit/api.ts";
import { entityCard } from "../src/feishu/cardkit/card-shape.ts";
import { sendEntity } from "../src/feishu/cardkit/send.ts";
import { CardKitTransport, STREAMING_REOPEN_MS } from "../src/feishu/cardkit/transport.ts";
import { createLarkMessenger } from "../src/feishu/lark-messenger.ts";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";
import type { RecordedCall } from "../src/local/emulator/types.ts";
import { createLogger } from "../src/logger.ts";
import { CardEntityStore } from "../src/store/cardkit.ts";
import { openDatabase } from "../src/store/db.ts";
import { sqliteSql } from "../src/store/sql.ts";
import { until } from "./helpers/wait.ts";

/**
 * The CardKit transport (src/feishu/cardkit/transport.ts) on its own, over HTTP to the emulator: the reopen
 * timer before Feishu's 10-minute close, and sequences that a restart never reuses. The channel end to end is
 * test/cardkit-channel.test.ts.
 */

const ALICE = "ou_alice000000000000000000000000000";
const emus: Emulator[] = [];
afterEach(async () => {
  for (const e of emus.splice(0)) await e.close();
});

const cardkitCalls = (emu: Emulator): RecordedCall[] =>
  emu.calls.filter((c) => c.path.startsWith("/open-apis/cardkit/v1/cards"));
const isContent = (c: RecordedCall) => c.path.includes("/elements/");
const isFull = (c: RecordedCall) => c.method === "PUT" && /\/cards\/[^/]+$/.test(c.path);
const isSettings = (c: RecordedCall) => c.path.endsWith("/settings");

describe("CardKit streaming lifetime", () => {
  it("reopens streaming on a timer at 9 minutes, before the platform closes it", async () => {
    const emulator = await startEmulator();
    emus.push(emulator);
    const db = openDatabase(path.join(fs.mkdtempSync(path.join(os.tmpdir(), "fpb-cardkit-")), "bot.sqlite"));
    const logger = createLogger({ level: "silent" });
    const app = { appId: emulator.appId, appSecret: emulator.appSecret, domain: emulator.url, logger };
    const store = new CardEntityStore(sqliteSql(db));
    const deps = { api: createLarkCardKit(app), store, log: logger, now: Date.now };
    const asked = emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "hi" });
    const card = {
      schema: "2.0" as const,
      config: { update_multi: true as const },
      body: { elements: [{ tag: "markdown" as const, content: "a" }] },
    };
    const sent = await sendEntity(deps, {
      key: "run-9",
      card,
      where: { replyTo: asked.event.message.message_id },
      uuid: "run-9",
      limit: (call) => call(),
    });
    // Streaming was opened 9 minutes less 100 ms ago (as the store says after a restart).
    await store.streaming("run-9", Date.now() - STREAMING_REOPEN_MS + 100);
    const row = (await store.byKey("run-9"))!;
    const transport = await CardKitTransport.open(deps, {
      key: "run-9",
      cardId: row.cardId,
      messageId: sent!.messageId,
      messenger: createLarkMessenger(app),
    });
    await until(() => cardkitCalls(emulator).filter(isSettings).length === 2, "the reopen", 5000);
    // The emulator records a call before its answer reaches the transport, which counts it then.
    await until(() => transport.stats.settings === 2, "the reopen answered", 5000);
    transport.close();
    const settings = cardkitCalls(emulator).filter(isSettings);
    expect(settings.map((c) => c.code)).toEqual([0, 0]);
    expect(transport.stats.settings).toBe(2);
    expect((await store.byKey("run-9"))!.streamingSince).toBeGreaterThan(Date.now() - 5000);
    db.close();
  });
});

describe("CardKit sequences across a restart", () => {
  it("a new transport over the same store continues above every sequence reserved before", async () => {
    const emulator = await startEmulator();
    emus.push(emulator);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-cardkit-"));
    const file = path.join(dir, "bot.sqlite");
    const logger = createLogger({ level: "silent" });
    const app = { appId: emulator.appId, appSecret: emulator.appSecret, domain: emulator.url, logger };
    const api = createLarkCardKit(app);
    const messenger = createLarkMessenger(app);
    const asked = emulator.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "hi" });
    const card = (text: string) => ({
      schema: "2.0" as const,
      config: { update_multi: true as const },
      body: { elements: [{ tag: "markdown" as const, content: text }] },
    });
    const first = openDatabase(file);
    const deps = { api, store: new CardEntityStore(sqliteSql(first)), log: logger, now: Date.now };
    const sent = await sendEntity(deps, {
      key: "run-1",
      card: card("a"),
      where: { replyTo: asked.event.message.message_id },
      uuid: "run-1",
      limit: (call) => call(),
    });
    expect(sent?.shown).toEqual(entityCard(card("a"), true));
    const row = (await deps.store.byKey("run-1"))!;
    const before = await CardKitTransport.open(deps, {
      key: "run-1",
      cardId: row.cardId,
      messageId: sent!.messageId,
      messenger,
      ...(sent?.shown ? { shown: sent.shown } : {}),
    });
    const running = { key: "running", formOpen: false };
    for (const text of ["ab", "abc", "abcd"]) await before.update(card(text) as never, running);
    before.close();
    // Killed after reserving a sequence it never sent: the reservation still counts.
    await deps.store.reserve("run-1", (await deps.store.byKey("run-1"))!.reserved + 1);
    const reserved = (await deps.store.byKey("run-1"))!.reserved;
    first.close();

    const second = openDatabase(file);
    const store = new CardEntityStore(sqliteSql(second));
    const after = await CardKitTransport.open(
      { ...deps, store },
      { key: "run-1", cardId: row.cardId, messageId: sent!.messageId, messenger },
    );
    await after.update(card("abcde") as never, running);
    await after.update(card("abcdef") as never, running);
    after.close();
    expect((await store.byKey("run-1"))!.reserved).toBe(reserved + 2);
    const calls = cardkitCalls(emulator);
    expect(calls.map((c) => c.code).filter((code) => code !== 0)).toEqual([]);
    // After the restart: a full update first (what the entity shows is not known), then the text streams.
    expect(isFull(calls.at(-2)!)).toBe(true);
    expect(isContent(calls.at(-1)!)).toBe(true);
    const shown = JSON.parse(emulator.messages.getMessage(sent!.messageId)!.content);
    expect(shown.body.elements[0].content).toBe("abcdef");
    second.close();
  });
});
