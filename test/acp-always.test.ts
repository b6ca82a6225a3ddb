import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { signToken } from "../src/auth/token.ts";
import { createLogger } from "../src/logger.ts";
import { type Db, openDatabase } from "../src/store/db.ts";
import { StoreStandingPermissions } from "../src/store/permissions.ts";
import { sqliteSql } from "../src/store/sql.ts";
import { SESSION_COOKIE } from "../src/web/cookie.ts";
import { mountSessionPages } from "../src/web/session-page.ts";
import { fixtureAgent } from "./helpers/acp.ts";
import { ALICE, ask, BOB, GROUP, settled, stepsIn } from "./helpers/acp-rig.ts";
import { cardText, type FeishuRig, formsOn, requestIdsOn, startFeishuRig } from "./helpers/feishu.ts";

/**
 * "Always allow" (issue 30) end to end: the scripted ACP agent asks twice for the same kind (`/perm-twice`:
 * an `Edit` of a.md, then of b.md); the person's allow_always on the first form answers the second, after a
 * restart too, until it is revoked on the session page (its HTTP route, by its chooser only).
 */

const SECRET = "test-secret-0123456789";
const closers: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** The rig with the ACP fixture, its standing permissions in the rig's own SQLite file, and the session pages. */
async function start(dataDir: string): Promise<{ r: FeishuRig; db: Db }> {
  const db = openDatabase(path.join(dataDir, "bot.sqlite"));
  const standing = new StoreStandingPermissions(sqliteSql(db));
  const agent = fixtureAgent({ standing });
  const r = await startFeishuRig({
    agent,
    tools: [],
    dataDir,
    routes: ({ core }) => [
      (app) =>
        mountSessionPages(app, {
          runs: core.runs,
          authSecret: SECRET,
          now: Date.now,
          logger: createLogger({ level: "silent" }),
          standing,
        }),
    ],
  });
  closers.push(() => {
    db.close();
  });
  closers.push(() => agent.close());
  closers.push(() => r.stop());
  return { r, db };
}

const stopAll = async () => {
  for (const close of closers.splice(0).reverse()) await close();
};

/** Waits for a form not answered yet and picks option `index` on it as `who`. */
async function pick(r: FeishuRig, cardId: string, index: number, seen: Set<string>, who = ALICE) {
  const requestId = await r.until(
    () => requestIdsOn(r.cardOf(cardId)).find((id) => !seen.has(id)),
    "a new permission form",
  );
  seen.add(requestId);
  const sessionId = r.core.registry.get(requestId)?.sessionId ?? "";
  return r.click({
    messageId: cardId,
    operatorOpenId: who,
    value: { kind: "feishu_ask", act: "submit", sessionId, requestId, sender: who },
    name: "ask0_submit",
    formValue: { ask0_q0: String(index), ask0_c0: "" },
  });
}

const cookie = (userId: string) => `${SESSION_COOKIE}=${signToken(SECRET, userId, Date.now() + 60_000)}`;

async function api(r: FeishuRig, userId: string, sessionId: string, revoke?: string) {
  const base = `${r.httpUrl}/api/sessions/${encodeURIComponent(sessionId)}/permissions`;
  const response = await fetch(revoke ? `${base}/${revoke}/revoke` : base, {
    method: revoke ? "POST" : "GET",
    headers: { cookie: cookie(userId) },
  });
  // biome-ignore lint/suspicious/noExplicitAny: the route's JSON, read field by field by the assertions
  const body: any = await response.json();
  return { status: response.status, body };
}

describe("always allow on an ACP permission form (scripted agent, emulator, SDK, SQLite)", () => {
  it("remembers allow_always for the session: the next request of the kind is answered without a form, after a restart too, until revoked", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-acp-always-"));
    const { r } = await start(dataDir);
    const sessionId = `feishu-${r.emulator.appId}-group-${GROUP}`;
    const cardId = await ask(r, "/perm-twice", true);
    const seen = new Set<string>();
    expect((await pick(r, cardId, 1, seen)).toast?.content).toBe("已提交");
    const card = await settled(r, cardId);
    const text = cardText(card);
    // The bot keeps the choice: the agent got its allow_once both times (never its allow_always, which it
    // would keep beyond the session); only one form was ever shown.
    expect(text).toContain("权限结果: a.md=allow b.md=allow");
    expect(seen.size).toBe(1);
    expect(text).toContain("以后本会话中的「编辑（Edit）」操作都将自动允许");
    expect(text).toContain("已按之前的选择自动允许：编辑 · Edit b.md");
    const english = stepsIn(card, "en_us");
    expect(english).toContain("From now on allowed in this session: edit (Edit)");
    expect(english).toContain("Allowed automatically, as chosen before: edit · Edit b.md");

    // A restart on the same DATA_DIR: a new agent process, the choice still stands.
    await stopAll();
    const again = await start(dataDir);
    const second = await ask(again.r, "/perm-twice", true);
    const secondText = cardText(await settled(again.r, second));
    expect(secondText).toContain("权限结果: a.md=allow b.md=allow");
    expect(secondText).toContain("已按之前的选择自动允许：编辑 · Edit a.md");
    expect(secondText).not.toContain("请求权限");
    expect(formsOn(again.r.cardOf(second))).toEqual([]);

    // Bob, a member of the group, sees the list but may not revoke Alice's choice.
    const bobsCard = await again.r.progressCard(
      await again.r.send({
        chatType: "group",
        senderOpenId: BOB,
        text: "/count",
        chatId: GROUP,
        mentionBot: true,
      }),
    );
    await settled(again.r, bobsCard);
    // Alice's "always" is hers: Bob's own task in the same group asks him on its form, both times.
    const bobsAsk = await again.r.progressCard(
      await again.r.send({
        chatType: "group",
        senderOpenId: BOB,
        text: "/perm-twice",
        chatId: GROUP,
        mentionBot: true,
      }),
    );
    const bobsForms = new Set<string>();
    await pick(again.r, bobsAsk, 0, bobsForms, BOB);
    await pick(again.r, bobsAsk, 0, bobsForms, BOB);
    const bobsText = cardText(await settled(again.r, bobsAsk));
    expect(bobsText).toContain("权限结果: a.md=allow b.md=allow");
    expect(bobsText).not.toContain("自动允许");
    const listed = await api(again.r, BOB, sessionId);
    expect(listed.status).toBe(200);
    expect(listed.body.permissions).toEqual([
      expect.objectContaining({
        decision: "allow",
        scope: "编辑（Edit）",
        title: "Edit a.md",
        canRevoke: false,
      }),
    ]);
    const id = listed.body.permissions[0].id;
    const refused = await api(again.r, BOB, sessionId, id);
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toBe(
      "only the person who started the task may revoke this permission",
    );
    // A stranger to the session learns nothing.
    expect((await api(again.r, "ou_stranger", sessionId)).status).toBe(403);

    // Alice revokes it: the next request shows the form again (and allow_once is not remembered).
    const mine = await api(again.r, ALICE, sessionId);
    expect(mine.body.permissions[0].canRevoke).toBe(true);
    expect(await api(again.r, ALICE, sessionId, id)).toEqual({ status: 200, body: { revoked: id } });
    expect((await api(again.r, ALICE, sessionId)).body.permissions).toEqual([]);
    const third = await ask(again.r, "/perm-twice", true);
    const forms = new Set<string>();
    await pick(again.r, third, 0, forms);
    await pick(again.r, third, 0, forms);
    const thirdText = cardText(await settled(again.r, third));
    expect(thirdText).toContain("权限结果: a.md=allow b.md=allow");
    expect(thirdText).not.toContain("自动允许");
  });

  it("names the tool from the earlier tool_call when the request carries the call's id alone, so 'always' covers it", async () => {
    const { r } = await start(fs.mkdtempSync(path.join(os.tmpdir(), "fpb-acp-bare-")));
    const cardId = await ask(r, "/perm-twice bare");
    const form = await r.until(() => {
      const card = r.cardOf(cardId);
      return requestIdsOn(card).length > 0 && card;
    }, "the first form");
    // The form says what the call is, as its tool_call said: kind, the agent's tool name, title.
    expect(cardText(form)).toContain("智能体想要编辑（Edit）：Edit a.md");
    const seen = new Set<string>();
    await pick(r, cardId, 1, seen);
    const text = cardText(await settled(r, cardId));
    expect(seen.size).toBe(1);
    expect(text).toContain("权限结果: a.md=allow b.md=allow");
    expect(text).toContain("以后本会话中的「编辑（Edit）」操作都将自动允许");
    expect(text).toContain("已按之前的选择自动允许：编辑 · Edit b.md");
    const sessionId = `feishu-${r.emulator.appId}-private-${ALICE}`;
    expect((await api(r, ALICE, sessionId)).body.permissions).toEqual([
      expect.objectContaining({ decision: "allow", scope: "编辑（Edit）", title: "Edit a.md" }),
    ]);
  });

  it("sends the agent its allow_always only when it offers no allow_once, and says revoking cannot undo the agent's own record", async () => {
    const { r } = await start(fs.mkdtempSync(path.join(os.tmpdir(), "fpb-acp-no-once-")));
    const cardId = await ask(r, "/perm-twice no-once");
    // The options are Always allow, Reject, Never: index 0 is the agent's allow_always.
    await pick(r, cardId, 0, new Set());
    const card = await settled(r, cardId);
    const text = cardText(card);
    // The agent keeps its allow_always itself (asks no more: `remembered`), as the card says.
    expect(text).toContain("权限结果: a.md=always b.md=remembered");
    expect(text).toContain(
      "以后本会话中的「编辑（Edit）」操作都将自动允许 · 智能体也会自己记住这个选择，在会话详情中撤销撤不回",
    );
    expect(stepsIn(card, "en_us")).toContain("The agent keeps it too: revoking here cannot undo that");
    const sessionId = `feishu-${r.emulator.appId}-private-${ALICE}`;
    expect((await api(r, ALICE, sessionId)).body.permissions).toEqual([
      expect.objectContaining({ decision: "allow", scope: "编辑（Edit）", agentKeeps: true }),
    ]);
  });

  it("counts an 'always' on a request that names no tool as this once: the agent gets allow_once, nothing is kept", async () => {
    const { r } = await start(fs.mkdtempSync(path.join(os.tmpdir(), "fpb-acp-unnamed-")));
    // `/perm`: an edit of notes.md, its tool unnamed (as Claude Code asks), options Allow, Always allow, Reject.
    const cardId = await ask(r, "/perm");
    await pick(r, cardId, 1, new Set());
    const card = await settled(r, cardId);
    expect(cardText(card)).toContain("权限结果: selected allow");
    expect(cardText(card)).toContain("请求未说明是哪个工具，无法记住：只按这一次处理，下次会再询问");
    const sessionId = `feishu-${r.emulator.appId}-private-${ALICE}`;
    expect((await api(r, ALICE, sessionId)).body.permissions).toEqual([]);
  });

  it("remembers reject_always the same way: the next request is refused without a form", async () => {
    const { r } = await start(fs.mkdtempSync(path.join(os.tmpdir(), "fpb-acp-never-")));
    const cardId = await ask(r, "/perm-twice");
    await pick(r, cardId, 3, new Set());
    const text = cardText(await settled(r, cardId));
    expect(text).toContain("权限结果: a.md=reject b.md=reject");
    expect(text).toContain("以后本会话中的「编辑（Edit）」操作都将自动拒绝");
    expect(text).toContain("已按之前的选择自动拒绝：编辑 · Edit b.md");
    // Neither the chooser's page nor anyone else's can be reached from another site.
    const sessionId = `feishu-${r.emulator.appId}-private-${ALICE}`;
    const id = (await api(r, ALICE, sessionId)).body.permissions[0].id;
    const foreign = await fetch(`${r.httpUrl}/api/sessions/${sessionId}/permissions/${id}/revoke`, {
      method: "POST",
      headers: { cookie: cookie(ALICE), origin: "https://evil.example" },
    });
    expect(foreign.status).toBe(403);
    expect((await api(r, ALICE, sessionId)).body.permissions).toHaveLength(1);
  });
});

/**
 * Claude Code's requests (its ACP adapter names a tool only in `_meta.claudeCode.toolName`, and its permission
 * request carries the call's id, rawInput and title alone): `/cc-calls` of the scripted agent, shaped so.
 * Options there: 0 Always Allow, 1 Allow, 2 Reject.
 */
describe("always allow with Claude Code's requests (the tool named only in _meta)", () => {
  it("'always' on Edit answers the next Edit without a form, not a Bash command; revoking brings the form back", async () => {
    const { r } = await start(fs.mkdtempSync(path.join(os.tmpdir(), "fpb-acp-cc-")));
    const sessionId = `feishu-${r.emulator.appId}-private-${ALICE}`;
    const cardId = await ask(r, "/cc-calls");
    const seen = new Set<string>();
    const first = await r.until(() => {
      const card = r.cardOf(cardId);
      return requestIdsOn(card).length > 0 && card;
    }, "the first form");
    expect(cardText(first)).toContain("智能体想要编辑（Edit）：Edit a.md");
    await pick(r, cardId, 0, seen);
    // Bash `ls`: the form names the tool; "always" on it counts this once (a tool-wide rule would allow every
    // command), so the second `ls` asks again.
    const bash = await r.until(() => {
      const card = r.cardOf(cardId);
      return requestIdsOn(card).some((id) => !seen.has(id)) && card;
    }, "the Bash form");
    expect(cardText(bash)).toContain("智能体想要执行命令（Bash）：&#96;ls&#96;");
    await pick(r, cardId, 0, seen);
    await pick(r, cardId, 1, seen);
    const card = await settled(r, cardId);
    const text = cardText(card);
    // The agent got its allow_once each time (the bot keeps the choice); three forms: a.md, ls-1, ls-2.
    expect(text).toContain("cc: a.md=allow b.md=allow ls-1=allow ls-2=allow");
    expect(seen.size).toBe(3);
    expect(text).toContain("以后本会话中的「编辑（Edit）」操作都将自动允许");
    expect(text).toContain("已按之前的选择自动允许：编辑 · Edit b.md");
    expect(text).toContain("「Bash」不按整个工具记住：只按这一次处理，下次会再询问");
    expect(stepsIn(card, "en_us")).toContain("Not kept for all of Bash: this once; you'll be asked again");
    const listed = (await api(r, ALICE, sessionId)).body.permissions;
    expect(listed).toEqual([
      expect.objectContaining({ decision: "allow", scope: "编辑（Edit）", title: "Edit a.md" }),
    ]);

    // Revoked: the next Edit asks again.
    expect((await api(r, ALICE, sessionId, listed[0].id)).status).toBe(200);
    const again = await ask(r, "/cc-calls");
    const forms = new Set<string>();
    for (let n = 0; n < 4; n += 1) await pick(r, again, 1, forms);
    const againText = cardText(await settled(r, again));
    expect(againText).toContain("cc: a.md=allow b.md=allow ls-1=allow ls-2=allow");
    expect(againText).not.toContain("自动允许");
  });

  it("passes a mode switch through as picked: 'auto-accept edits' on ExitPlanMode reaches Claude Code, nothing is kept", async () => {
    const { r } = await start(fs.mkdtempSync(path.join(os.tmpdir(), "fpb-acp-cc-plan-")));
    const cardId = await ask(r, "/cc-calls plan");
    const seen = new Set<string>();
    await pick(r, cardId, 0, seen);
    const text = cardText(await settled(r, cardId));
    expect(text).toContain("cc: mode=acceptEdits");
    expect(text).not.toContain("只按这一次处理");
    const sessionId = `feishu-${r.emulator.appId}-private-${ALICE}`;
    expect((await api(r, ALICE, sessionId)).body.permissions).toEqual([]);
  });

  it.each(["number", "huge", "odd", "object", "flat"])(
    "ignores a hostile _meta (%s): the edit counts as unnamed, 'always' is this once",
    async (variant) => {
      const { r } = await start(fs.mkdtempSync(path.join(os.tmpdir(), "fpb-acp-cc-meta-")));
      const cardId = await ask(r, `/cc-calls meta=${variant}`);
      const seen = new Set<string>();
      await pick(r, cardId, 0, seen);
      await pick(r, cardId, 1, seen);
      const text = cardText(await settled(r, cardId));
      expect(text).toContain("cc: a.md=allow b.md=allow");
      expect(seen.size).toBe(2);
      expect(text).toContain("请求未说明是哪个工具，无法记住：只按这一次处理，下次会再询问");
      expect(text).not.toContain("xxxxxxxxxx");
      const sessionId = `feishu-${r.emulator.appId}-private-${ALICE}`;
      expect((await api(r, ALICE, sessionId)).body.permissions).toEqual([]);
    },
  );
});
