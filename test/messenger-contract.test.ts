import { afterEach, describe, expect, it } from "vitest";
import type { Card } from "../src/cards/model.ts";
import { FeishuApiError } from "../src/feishu/messenger.ts";
import { withThreadFallback } from "../src/feishu/thread-fallback.ts";
import { createLogger } from "../src/logger.ts";
import {
  emulatorPlatform,
  fakePlatform,
  type Platform,
  type PlatformOptions,
  TIMEOUT_MS,
} from "./helpers/messenger-platforms.ts";

/**
 * One contract, two implementations: the fake messenger (src/testing/fake-messenger.ts) and the SDK
 * messenger talking HTTP to the emulator. Every case runs against both with the same expectations, written
 * out here (not derived from either side), so the channel tests that run on the fake test what the SDK
 * path would do. The emulator is the reference: when a case fails on the fake only, fix the fake.
 */

const card = (text: string): Card => ({
  schema: "2.0",
  config: { update_multi: true },
  body: { elements: [{ tag: "markdown", content: text }] },
});
const ALICE = "ou_alice000000000000000000000000000";
const DAY_MS = 86_400_000;

async function failure(promise: Promise<unknown>): Promise<FeishuApiError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof FeishuApiError) return error;
    throw error;
  }
  throw new Error("expected a FeishuApiError");
}

/** What the channel acts on, and what callers see of the AppError it is. */
function shape(error: FeishuApiError) {
  return {
    code: error.code,
    status: error.status,
    method: error.method,
    feishuCode: error.feishuCode,
    httpStatus: error.httpStatus,
    retryAfterMs: error.retryAfterMs,
    rateLimited: error.rateLimited,
    transient: error.transient,
    messageGone: error.messageGone,
    messageRemoved: error.messageRemoved,
    cardRefused: error.cardRefused,
  };
}

/** A business error as both platforms report it: HTTP 400 carrying Feishu's code. */
const business = (method: string, feishuCode: number) => ({
  code: "INTERNAL",
  status: 502,
  method,
  feishuCode,
  httpStatus: 400,
  retryAfterMs: undefined,
  rateLimited: feishuCode === 230020,
  transient: false,
  messageGone: [230031, 230011, 230110].includes(feishuCode),
  messageRemoved: [230011, 230110].includes(feishuCode),
  cardRefused: [230099, 230025].includes(feishuCode),
});

const platforms: Platform[] = [];
afterEach(async () => {
  for (const p of platforms.splice(0)) await p.close();
});

describe.each([
  ["the fake messenger", fakePlatform],
  ["the SDK messenger over the emulator", emulatorPlatform],
] as const)("the messenger contract: %s", (_name, start) => {
  const open = async (options: PlatformOptions = {}) => {
    const p = await start(options);
    platforms.push(p);
    return p;
  };
  const fromAlice = (p: Platform) => p.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "hi" });
  const fromGroup = (p: Platform) =>
    p.userMessage({
      chatType: "group",
      chatId: "oc_team",
      senderOpenId: ALICE,
      text: "hi",
      mentionBot: true,
    });

  it("tells who the bot is", async () => {
    const p = await open();
    expect(await p.messenger.botInfo()).toEqual({ openId: p.botOpenId, name: p.botName });
  });

  it("replies with a card once per uuid within the hour, and again after it", async () => {
    const p = await open();
    const source = fromAlice(p);
    const first = await p.messenger.replyCard(source, card("one"), { uuid: "run-1" });
    const again = await p.messenger.replyCard(source, card("two"), { uuid: "run-1" });
    expect(again.messageId).toBe(first.messageId);
    expect(p.stored(first.messageId)).toMatchObject({
      parentId: source,
      chatId: `oc_p2p_${ALICE}`,
      msgType: "interactive",
      senderType: "app",
      content: JSON.stringify(card("one")),
      patches: 0,
    });
    p.advance(60 * 60_000);
    const later = await p.messenger.replyCard(source, card("three"), { uuid: "run-1" });
    expect(later.messageId).not.toBe(first.messageId);
    const tooLong = await failure(p.messenger.replyCard(source, card("x"), { uuid: "u".repeat(51) }));
    expect(tooLong.feishuCode).toBe(99992402);
  });

  it("sends cards and texts to a chat or a person, and refuses a malformed receive id", async () => {
    const p = await open();
    const toChat = await p.messenger.sendCard({ chatId: "oc_team" }, card("team"));
    expect(p.stored(toChat.messageId)).toMatchObject({
      chatId: "oc_team",
      chatType: "group",
      msgType: "interactive",
    });
    const toPerson = await p.messenger.sendText({ openId: ALICE }, "hello");
    expect(p.stored(toPerson.messageId)).toMatchObject({
      chatId: `oc_p2p_${ALICE}`,
      chatType: "p2p",
      msgType: "text",
      content: JSON.stringify({ text: "hello" }),
    });
    const bad = await failure(p.messenger.sendCard({ chatId: "team" }, card("x")));
    expect(shape(bad)).toEqual(business("im.message.create", 230034));
  });

  it("writes @-mentions into a text, replies with it, and refuses a reply to a recalled message", async () => {
    const p = await open();
    const source = fromAlice(p);
    const sent = await p.messenger.sendText({ chatId: `oc_p2p_${ALICE}` }, "请回答", {
      mentionOpenIds: [ALICE, 'ou_"b'],
      replyTo: source,
    });
    expect(p.stored(sent.messageId)).toMatchObject({
      parentId: source,
      msgType: "text",
      content: JSON.stringify({ text: `<at user_id="${ALICE}"></at> <at user_id="ou_b"></at> 请回答` }),
    });
    p.recall(source);
    const refused = await failure(p.messenger.sendText({ chatId: "oc_x" }, "again", { replyTo: source }));
    expect(shape(refused)).toEqual(business("im.message.reply", 230011));
    const cardRefused = await failure(p.messenger.replyCard(source, card("x")));
    expect(shape(cardRefused)).toEqual(business("im.message.reply", 230011));
    const huge = await failure(p.messenger.sendText({ chatId: "oc_x" }, "字".repeat(60_000)));
    expect(shape(huge)).toEqual(business("im.message.create", 230025));
  });

  it("patches a card, and refuses cards the platform would not show (230099, 230025) without storing them", async () => {
    const p = await open();
    const { messageId } = await p.messenger.replyCard(fromAlice(p), card("v1"));
    await p.messenger.patchCard(messageId, card("v2"));
    expect(p.stored(messageId)).toMatchObject({ content: JSON.stringify(card("v2")), patches: 1 });
    const notMulti = await failure(
      p.messenger.patchCard(messageId, { ...card("v3"), config: { update_multi: false } as never }),
    );
    expect(shape(notMulti)).toEqual(business("im.message.patch", 230099));
    const big = await failure(p.messenger.patchCard(messageId, card("长".repeat(12_000))));
    expect(shape(big)).toEqual(business("im.message.patch", 230025));
    const unknownTag: Card = { ...card("x"), body: { elements: [{ tag: "no_such_tag" } as never] } };
    const invalid = await failure(p.messenger.replyCard(fromAlice(p), unknownTag));
    expect(shape(invalid)).toEqual(business("im.message.reply", 230099));
    expect(p.stored(messageId)).toMatchObject({ content: JSON.stringify(card("v2")), patches: 1 });
  });

  it("refuses PATCHes of unknown, foreign, recalled and 14-day-old messages with the codes the channel acts on", async () => {
    const p = await open();
    const source = fromAlice(p);
    const unknown = await failure(p.messenger.patchCard("om_0000000000000000000000000000dead", card("x")));
    expect(shape(unknown)).toEqual(business("im.message.patch", 230001));
    const foreign = await failure(p.messenger.patchCard(source, card("x")));
    expect(shape(foreign)).toEqual(business("im.message.patch", 230001));
    const old = await p.messenger.replyCard(source, card("old"));
    const recalled = await p.messenger.replyCard(source, card("recalled"));
    p.recall(recalled.messageId);
    expect(shape(await failure(p.messenger.patchCard(recalled.messageId, card("x"))))).toEqual(
      business("im.message.patch", 230011),
    );
    p.advance(15 * DAY_MS);
    expect(shape(await failure(p.messenger.patchCard(old.messageId, card("x"))))).toEqual(
      business("im.message.patch", 230031),
    );
  });

  it("allows five PATCHes per second per message: the sixth is 230020, the next second is free again", async () => {
    const p = await open();
    const { messageId } = await p.messenger.replyCard(fromAlice(p), card("v0"));
    for (let i = 1; i <= 5; i += 1) await p.messenger.patchCard(messageId, card(`v${i}`));
    expect(shape(await failure(p.messenger.patchCard(messageId, card("v6"))))).toEqual(
      business("im.message.patch", 230020),
    );
    p.advance(1000);
    await p.messenger.patchCard(messageId, card("v7"));
    expect(p.stored(messageId)?.patches).toBe(6);
  });

  it("answers over the app-wide budget with 429 and the wait in whole seconds", async () => {
    const p = await open({ appCallsPerSecond: 3 });
    for (let i = 0; i < 3; i += 1) await p.messenger.botInfo();
    const limited = await failure(p.messenger.botInfo());
    expect(shape(limited)).toEqual({
      ...business("bot.info", 99991400),
      httpStatus: 429,
      retryAfterMs: 1000,
      rateLimited: true,
    });
    p.advance(1000);
    await expect(p.messenger.botInfo()).resolves.toMatchObject({ openId: p.botOpenId });
  });

  it("names a person in the app's contact scope, and fails for anyone else", async () => {
    const p = await open({ userNames: { [ALICE]: "Alice" } });
    expect(await p.messenger.userName(ALICE)).toBe("Alice");
    const stranger = await failure(p.messenger.userName("ou_stranger0000000000000000000000000"));
    expect(shape(stranger)).toEqual(business("contact.user.get", 41050));
  });

  it("recalls its own messages once, and looks messages up: live, recalled, unknown", async () => {
    const p = await open();
    const source = fromAlice(p);
    const { messageId } = await p.messenger.replyCard(source, card("x"));
    expect(await p.messenger.messageStatus(messageId)).toEqual({ deleted: false });
    await p.messenger.recall(messageId);
    expect(p.stored(messageId)?.recalled).toBe(true);
    expect(await p.messenger.messageStatus(messageId)).toEqual({ deleted: true });
    expect(shape(await failure(p.messenger.recall(messageId)))).toEqual(
      business("im.message.delete", 230011),
    );
    expect(shape(await failure(p.messenger.recall(source)))).toEqual(business("im.message.delete", 230001));
    const missing = await failure(p.messenger.messageStatus("om_0000000000000000000000000000dead"));
    expect(shape(missing)).toEqual(business("im.message.get", 230001));
    expect(await p.messenger.messageStatus(source)).toEqual({ deleted: false });
  });

  it("edits its own text messages in place, 20 times at most, and refuses cards, users' and recalled messages", async () => {
    const p = await open();
    const source = fromAlice(p);
    const { messageId } = await p.messenger.sendText({ chatId: "oc_team" }, "有 1 个问题等你回答", {
      mentionOpenIds: [ALICE],
    });
    await p.messenger.editText(messageId, "问题已回答", { mentionOpenIds: [ALICE] });
    expect(p.stored(messageId)).toMatchObject({
      msgType: "text",
      content: JSON.stringify({ text: `<at user_id="${ALICE}"></at> 问题已回答` }),
      edits: 1,
      patches: 0,
    });
    for (let i = 2; i <= 20; i += 1) await p.messenger.editText(messageId, `v${i}`);
    expect(shape(await failure(p.messenger.editText(messageId, "v21")))).toEqual(
      business("im.message.update", 230001),
    );
    expect(p.stored(messageId)).toMatchObject({ content: JSON.stringify({ text: "v20" }), edits: 20 });
    const aCard = await p.messenger.replyCard(source, card("x"));
    expect(shape(await failure(p.messenger.editText(aCard.messageId, "x")))).toEqual(
      business("im.message.update", 230001),
    );
    expect(shape(await failure(p.messenger.editText(source, "x")))).toEqual(
      business("im.message.update", 230001),
    );
    const recalled = await p.messenger.sendText({ chatId: "oc_team" }, "gone");
    p.recall(recalled.messageId);
    expect(shape(await failure(p.messenger.editText(recalled.messageId, "x")))).toEqual(
      business("im.message.update", 230011),
    );
  });

  it("refuses replies to a message it does not know, cards and texts alike, and creates nothing", async () => {
    const p = await open();
    const unknown = "om_0000000000000000000000000000dead";
    expect(shape(await failure(p.messenger.replyCard(unknown, card("x"), { uuid: "run-x" })))).toEqual(
      business("im.message.reply", 230001),
    );
    expect(shape(await failure(p.messenger.sendText({ chatId: "oc_x" }, "t", { replyTo: unknown })))).toEqual(
      business("im.message.reply", 230001),
    );
    // The refused uuid was not remembered: a reply with it to a real message creates that message.
    const source = fromAlice(p);
    const sent = await p.messenger.replyCard(source, card("y"), { uuid: "run-x" });
    expect(p.stored(sent.messageId)).toMatchObject({ parentId: source, content: JSON.stringify(card("y")) });
  });

  it("reports injected 230020, 230110, 429 with its reset, 5xx and an HTTP-200 error the same way", async () => {
    const p = await open();
    const { messageId } = await p.messenger.replyCard(fromAlice(p), card("v1"));
    p.fault("patchCard", { code: 230020, msg: "slow down" }, { messageId });
    expect(shape(await failure(p.messenger.patchCard(messageId, card("x"))))).toEqual(
      business("im.message.patch", 230020),
    );
    p.fault("patchCard", { code: 230110 });
    expect(shape(await failure(p.messenger.patchCard(messageId, card("x"))))).toEqual(
      business("im.message.patch", 230110),
    );
    p.fault("patchCard", { httpStatus: 429, code: 99991400, resetSeconds: 3 });
    const app = await failure(p.messenger.patchCard(messageId, card("x")));
    expect(shape(app)).toMatchObject({
      httpStatus: 429,
      retryAfterMs: 3000,
      rateLimited: true,
      transient: false,
    });
    p.fault("replyCard", { httpStatus: 502 });
    const gateway = await failure(p.messenger.replyCard(fromAlice(p), card("x")));
    expect(shape(gateway)).toMatchObject({ feishuCode: undefined, httpStatus: 502, transient: true });
    expect(gateway.message).toBe("im.message.reply failed: HTTP 502");
    p.fault("messageStatus", { httpStatus: 200, code: 230001, msg: "bad id" });
    const inEnvelope = await failure(p.messenger.messageStatus(messageId));
    expect(shape(inEnvelope)).toMatchObject({ feishuCode: 230001, httpStatus: 200, transient: false });
    expect(inEnvelope.message).toBe("im.message.get failed: bad id");
    // Faults took no slot and changed nothing: the card is as it was.
    expect(p.stored(messageId)).toMatchObject({ content: JSON.stringify(card("v1")), patches: 0 });
  });

  it("replies into a thread when asked: card and text in one new thread under the message, plain replies not", async () => {
    const p = await open();
    const source = fromGroup(p);
    const plain = await p.messenger.replyCard(source, card("plain"));
    const threaded = await p.messenger.replyCard(source, card("threaded"), { inThread: true, uuid: "run-t" });
    const thread = p.stored(threaded.messageId)?.threadId;
    expect(thread).toMatch(/^omt_/);
    expect(p.stored(plain.messageId)).toMatchObject({ parentId: source });
    expect(p.stored(plain.messageId)?.threadId).toBeUndefined();
    const text = await p.messenger.sendText({ chatId: "oc_team" }, "好", { replyTo: source, inThread: true });
    expect(p.stored(text.messageId)).toMatchObject({ parentId: source, threadId: thread, msgType: "text" });
    // A reply to a message already in the thread stays there, asked or not.
    const inside = await p.messenger.sendText({ chatId: "oc_team" }, "提醒", { replyTo: threaded.messageId });
    expect(p.stored(inside.messageId)).toMatchObject({ threadId: thread, rootId: source });
    // The uuid still de-duplicates a threaded reply.
    expect(
      (await p.messenger.replyCard(source, card("again"), { inThread: true, uuid: "run-t" })).messageId,
    ).toBe(threaded.messageId);
  });

  it("reports a refused thread reply as the platform's error, stores nothing, and sends no second reply", async () => {
    const p = await open();
    const source = fromGroup(p);
    p.fault("replyCard", { code: 230071, msg: "thread not allowed" }, { inThread: true });
    const refused = await failure(
      p.messenger.replyCard(source, card("x"), { inThread: true, uuid: "run-r" }),
    );
    expect(shape(refused)).toEqual(business("im.message.reply", 230071));
    p.fault("sendText", { code: 230071 }, { inThread: true });
    const text = await failure(
      p.messenger.sendText({ chatId: "oc_team" }, "t", { replyTo: source, inThread: true }),
    );
    expect(shape(text)).toEqual(business("im.message.reply", 230071));
    // A fault on thread replies leaves plain replies alone.
    p.fault("replyCard", { code: 230071 }, { inThread: true });
    const plain = await p.messenger.replyCard(source, card("plain"), { uuid: "run-r" });
    expect(p.stored(plain.messageId)).toMatchObject({ parentId: source });
    // Nothing opened a thread: the refused replies left no trace on the platform.
    expect(p.stored(plain.messageId)?.threadId).toBeUndefined();
    expect(p.stored(source)?.threadId).toBeUndefined();
  });

  it("under the channel's fallback, a refused thread reply lands once as a plain reply, keeping its uuid", async () => {
    const p = await open();
    const m = withThreadFallback(p.messenger, createLogger({ level: "silent" }));
    const source = fromGroup(p);
    p.fault("replyCard", { code: 230071 }, { inThread: true });
    const sent = await m.replyCard(source, card("x"), { inThread: true, uuid: "run-f" });
    expect(p.stored(sent.messageId)).toMatchObject({ parentId: source });
    expect(p.stored(sent.messageId)?.threadId).toBeUndefined();
    expect((await p.messenger.replyCard(source, card("y"), { uuid: "run-f" })).messageId).toBe(
      sent.messageId,
    );
    // A rate limit is not a refused thread: it surfaces, for the caller's back-off.
    p.fault("replyCard", { code: 230020 }, { inThread: true });
    expect(shape(await failure(m.replyCard(source, card("z"), { inThread: true })))).toEqual(
      business("im.message.reply", 230020),
    );
  });

  it("refuses only the calls whose content carries a marker, wherever it is in the card", async () => {
    const p = await open();
    const { messageId } = await p.messenger.replyCard(fromAlice(p), card("v1"));
    p.fault("patchCard", { code: 230099 }, { times: 5, bodyIncludes: ":NOSUCHEMOJI:" });
    await p.messenger.patchCard(messageId, card("plain"));
    const refused = await failure(p.messenger.patchCard(messageId, card("with :NOSUCHEMOJI: inside")));
    expect(shape(refused)).toEqual(business("im.message.patch", 230099));
    await p.messenger.patchCard(messageId, card("plain again"));
    expect(p.stored(messageId)).toMatchObject({ content: JSON.stringify(card("plain again")), patches: 2 });
  });

  it("times a slow call out as transient; it is lost, or lands later once the platform had read it", async () => {
    const p = await open();
    const { messageId } = await p.messenger.replyCard(fromAlice(p), card("v1"));
    p.fault("patchCard", { delayMs: TIMEOUT_MS + 200 });
    const lost = await failure(p.messenger.patchCard(messageId, card("lost")));
    expect(shape(lost)).toMatchObject({ httpStatus: undefined, feishuCode: undefined, transient: true });
    p.fault("patchCard", { delayMs: TIMEOUT_MS + 200, landsLate: true });
    const slow = await failure(p.messenger.patchCard(messageId, card("late")));
    expect(shape(slow)).toMatchObject({ httpStatus: undefined, feishuCode: undefined, transient: true });
    await expect
      .poll(() => p.stored(messageId)?.content, { timeout: 3000 })
      .toBe(JSON.stringify(card("late")));
    expect(p.stored(messageId)?.patches).toBe(1);
    p.fault("botInfo", { delayMs: 50 });
    await expect(p.messenger.botInfo()).resolves.toMatchObject({ openId: p.botOpenId });
  });

  it("fetches a fresh token once when the platform rejects the cached one; a second rejection surfaces", async () => {
    const p = await open();
    await p.messenger.botInfo();
    expect(p.tokenFetches()).toBe(1);
    p.expireTokens();
    await expect(p.messenger.botInfo()).resolves.toMatchObject({ openId: p.botOpenId });
    expect(p.tokenFetches()).toBe(2);
    p.fault("botInfo", { code: 99991663, httpStatus: 400 });
    await expect(p.messenger.botInfo()).resolves.toMatchObject({ openId: p.botOpenId });
    expect(p.tokenFetches()).toBe(3);
    p.fault("botInfo", { code: 99991663, httpStatus: 400 }, { times: 2 });
    expect(shape(await failure(p.messenger.botInfo()))).toMatchObject({
      feishuCode: 99991663,
      httpStatus: 400,
    });
  });
});
