import { afterEach, describe, expect, it } from "vitest";
import { personalLink } from "../src/auth/link.ts";
import { SIGN_IN_LINK_TTL_MS, verifyToken } from "../src/auth/token.ts";
import { type FeishuRig, startFeishuRig } from "./helpers/feishu.ts";

/**
 * /login: how a Feishu user gets onto the session pages. The personal link comes in the private chat only;
 * in a group the bot says where to ask, and nothing in the group carries anyone's token.
 */

const ALICE = "ou_alice000000000000000000000000000";
const SECRET = "sign-in-command-secret-0123";
const PUBLIC_URL = "https://bot.example.com";

const rigs: FeishuRig[] = [];
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
});

async function rig(): Promise<FeishuRig> {
  const started = await startFeishuRig({
    signInLink: async (userId) =>
      personalLink({ publicUrl: PUBLIC_URL, authSecret: SECRET, userId, now: Date.now() }),
  });
  rigs.push(started);
  return started;
}

const repliesTo = (r: FeishuRig, messageId: string) =>
  r.emulator.messages.listMessages().filter((m) => m.senderType === "app" && m.parentId === messageId);

describe("/login", () => {
  it("answers in a private chat with a personal link for the sender, on a line of its own, and starts no task", async () => {
    const r = await rig();
    const messageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: " /login " });
    const reply = await r.until(() => repliesTo(r, messageId)[0], "the reply");
    expect(reply.msgType).toBe("text");
    const text = String(JSON.parse(reply.content).text);
    expect(text).toContain(`${Math.floor(SIGN_IN_LINK_TTL_MS / 86_400_000)} 天内有效，只能打开一次`);
    const line = text.split("\n").find((l) => l.startsWith(`${PUBLIC_URL}/auth/link?token=`));
    expect(line, text).toBeDefined();
    const token = new URL(line ?? "").searchParams.get("token") ?? "";
    expect(verifyToken(SECRET, token, Date.now(), { allowLink: true })).toMatchObject({
      ok: true,
      userId: ALICE,
      link: true,
    });
    // A link token is no bearer token for the socket or the pages.
    expect(verifyToken(SECRET, token, Date.now())).toEqual({
      ok: false,
      reason: "a sign-in link is not a token",
    });
    await r.channel.idle();
    expect(repliesTo(r, messageId).map((m) => m.msgType)).toEqual(["text"]);
    expect(await r.core.runner.getSession(`feishu-${r.emulator.appId}-private-${ALICE}`)).toBeUndefined();
  });

  it("in a group, says to ask in the private chat, and posts no link", async () => {
    const r = await rig();
    const messageId = await r.send({
      chatType: "group",
      chatId: "oc_team",
      senderOpenId: ALICE,
      text: "/login",
      mentionBot: true,
    });
    const reply = await r.until(() => repliesTo(r, messageId)[0], "the reply");
    const text = String(JSON.parse(reply.content).text);
    expect(text).toBe("个人登录链接只在私聊中发送：请在与我的私聊中发送 /login。");
    expect(text).not.toContain("token=");
  });
});
