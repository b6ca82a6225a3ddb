import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  feishuGroupSessionId,
  feishuPrivateSessionId,
  feishuSession,
  isFeishuSession,
  type SessionKey,
  sessionIdOf,
} from "../src/domain/session-id.ts";

// The ids and paths earlier versions stored (rows, workspaces on disk, links on sent cards), written out
// literally here so a change to the builder cannot pass by changing the expectation with it.
describe("session identity", () => {
  const where = { workspacesDir: "/data/workspaces", ownerId: "ou_alice", title: "t" };

  it("builds a private chat's id and workspace exactly as stored before", () => {
    const key: SessionKey = { kind: "feishu-private", appId: "cli_a1", openId: "ou_alice" };
    expect(sessionIdOf(key)).toBe("feishu-cli_a1-private-ou_alice");
    expect(feishuPrivateSessionId("cli_a1", "ou_alice")).toBe("feishu-cli_a1-private-ou_alice");
    expect(feishuSession(key, { ...where, chatId: "oc_p2p" })).toEqual({
      id: "feishu-cli_a1-private-ou_alice",
      channel: "feishu",
      chatType: "private",
      chatId: "oc_p2p",
      workspace: path.join("/data", "workspaces", "feishu-private", "ou_alice"),
      ownerId: "ou_alice",
      title: "t",
    });
  });

  it("builds a group chat's id and workspace exactly as stored before", () => {
    const key: SessionKey = { kind: "feishu-group", appId: "cli_a1", chatId: "oc_team" };
    expect(sessionIdOf(key)).toBe("feishu-cli_a1-group-oc_team");
    expect(feishuGroupSessionId("cli_a1", "oc_team")).toBe("feishu-cli_a1-group-oc_team");
    expect(feishuSession(key, { ...where, chatId: "oc_team" })).toMatchObject({
      chatType: "group",
      workspace: path.join("/data", "workspaces", "feishu-chat", "oc_team"),
    });
  });

  it("tells a Feishu session by its channel field alone", () => {
    expect(isFeishuSession({ channel: "feishu" })).toBe(true);
    // An id that looks like a Feishu one does not make a web session a Feishu one.
    expect(isFeishuSession({ channel: "web" })).toBe(false);
  });
});
