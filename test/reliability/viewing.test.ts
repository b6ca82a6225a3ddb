import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { createCore } from "../../src/core.ts";
import { canViewSession, VIEW_MEMBERSHIP_MS } from "../../src/domain/access.ts";
import type { Agent } from "../../src/harness/agents/agent.ts";
import { createLogger } from "../../src/logger.ts";
import { migrate } from "../../src/store/db.ts";
import { MIGRATIONS } from "../../src/store/migrations.ts";
import { SESSION_COOKIE } from "../../src/web/cookie.ts";
import { record } from "./helpers/env.ts";
import { ALICE, BOB, CAROL, GROUP_CHAT, type Stack, stacksForEachTest } from "./helpers/stack.ts";

/**
 * Issue 14 item 11: the viewing rule (src/domain/access.ts), on the session page and the socket alike.
 * The expected table is written out by hand below; the test asks both surfaces for every person.
 */

/** Each run answers at once: the chat gets a finished card per message. */
const quickAgent: Agent = { name: "quick", run: async (ctx) => ({ text: `done: ${ctx.input}` }) };

const { stack } = stacksForEachTest({ agent: quickAgent, tools: [] });

/** What each surface says about `userId` viewing `sessionId`: true = may view. */
async function views(s: Stack, userId: string, sessionId: string) {
  const page = await fetch(`${s.httpUrl}/api/sessions/${encodeURIComponent(sessionId)}`, {
    headers: { cookie: `${SESSION_COOKIE}=${s.tokenFor(userId)}` },
  });
  const client = await s.connect(userId);
  client.send({ type: "subscribe", sessionId });
  const answer = await Promise.race([
    client.next("subscribed").then(() => true),
    client.next("error").then((frame) => (frame.data.code === "forbidden" ? false : frame.data.code)),
  ]);
  await client.close();
  return { page: page.status === 200 ? true : page.status === 403 ? false : page.status, socket: answer };
}

async function mention(s: Stack, userId: string, text: string) {
  const { messageId } = await s.say({
    chatType: "group",
    chatId: GROUP_CHAT,
    senderOpenId: userId,
    text,
    mentionBot: true,
  });
  const cardId = await s.progressCard(messageId);
  await s.core.runner.idle();
  await s.channel.idle();
  return cardId;
}

describe("who may view a group's runs", () => {
  it("every member the bot has seen in the chat, whoever started the run; nobody else", async () => {
    const s = await stack();
    const group = s.groupSessionId();
    await mention(s, ALICE, "第一个任务"); // Alice mentioned the bot first
    await mention(s, BOB, "Bob 的任务");
    const aliceCard = await mention(s, ALICE, "Alice 又一个任务"); // the current run is Alice's again

    const both = { page: true, socket: true };
    const neither = { page: false, socket: false };
    expect(await views(s, ALICE, group)).toEqual(both);
    // Bob wrote in the chat: he may still view it now that Alice's run is the latest.
    expect(await views(s, BOB, group)).toEqual(both);
    // Carol never wrote to the bot nor clicked its cards there.
    expect(await views(s, CAROL, group)).toEqual(neither);

    // A click on a card in the chat (even one she may not perform) shows Carol is in it.
    const runId = (await s.core.runner.currentRun(group))?.id;
    const click = await s.click({
      messageId: aliceCard,
      operatorOpenId: CAROL,
      value: { kind: "progress", act: "retry", sessionId: group, runId, sender: ALICE },
    });
    expect(click.toast?.content).toBe("仅消息发送者可操作");
    expect(await views(s, CAROL, group)).toEqual(both);

    // A private chat stays its owner's.
    const { messageId } = await s.say({ chatType: "p2p", senderOpenId: ALICE, text: "私聊任务" });
    await s.progressCard(messageId);
    await s.core.runner.idle();
    expect(await views(s, ALICE, s.privateSessionId(ALICE))).toEqual(both);
    expect(await views(s, BOB, s.privateSessionId(ALICE))).toEqual(neither);
    record("viewing: group members on page and socket", { checked: 6, surfaces: 2 });
  }, 30_000);
});

describe("membership of a group", () => {
  async function coreAt(clock: { nowMs: number }, db = new Database(":memory:")) {
    migrate(db);
    const core = await createCore({
      db,
      logger: createLogger({ level: "silent" }),
      agent: quickAgent,
      tools: [],
      askTimeoutMs: 60_000,
      authSecret: "x".repeat(32),
      now: () => clock.nowMs,
    });
    const session = await core.runner.ensureSession({
      id: "feishu-app-group-oc_1",
      channel: "feishu",
      chatType: "group",
      chatId: "oc_1",
      workspace: "/tmp/feishu-chat/oc_1",
      ownerId: ALICE,
      title: "飞书群聊",
    });
    return { core, session, db };
  }

  it("lapses for someone not seen in the chat for 30 days, the first sender included", async () => {
    const clock = { nowMs: 1_800_000_000_000 };
    const { core, session } = await coreAt(clock);
    await core.runner.noteInChat(session.id, ALICE);
    await core.runner.noteInChat(session.id, BOB);
    clock.nowMs += VIEW_MEMBERSHIP_MS;
    expect(await canViewSession(core.runner, ALICE, session.id)).toBe(true);
    await core.runner.noteInChat(session.id, BOB); // Bob writes again
    clock.nowMs += 1;
    expect(await canViewSession(core.runner, ALICE, session.id)).toBe(false);
    expect(await canViewSession(core.runner, BOB, session.id)).toBe(true);
  });

  it("starts, after the upgrade, with everyone who had started a run in the chat", async () => {
    const db = new Database(":memory:");
    const before = MIGRATIONS.findIndex((sql) => sql.includes("session_members"));
    for (const sql of MIGRATIONS.slice(0, before)) db.exec(sql);
    db.pragma(`user_version = ${before}`);
    const at = 1_800_000_000_000;
    db.prepare(
      "INSERT INTO sessions (id, channel, chat_type, chat_id, workspace, owner_id, title, created_at, updated_at) VALUES ('feishu-app-group-oc_1','feishu','group','oc_1','/w',?,'g',?,?)",
    ).run(ALICE, at, at);
    db.prepare(
      "INSERT INTO runs (id, session_id, sender_id, input, status, started_at) VALUES ('r1','feishu-app-group-oc_1',?,'x','completed',?)",
    ).run(BOB, at);
    const { core, session } = await coreAt({ nowMs: at + 1000 }, db);
    expect(await canViewSession(core.runner, BOB, session.id)).toBe(true);
    expect(await canViewSession(core.runner, CAROL, session.id)).toBe(false);
  });
});
