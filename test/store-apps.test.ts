import path from "node:path";
import { describe, expect, it } from "vitest";
import { feishuSource, ownsPlacement } from "../src/feishu/apps.ts";
import { placementOf } from "../src/harness/run-reads.ts";
import { openDatabase } from "../src/store/db.ts";
import { FeishuStore } from "../src/store/feishu.ts";
import { tempDir } from "./helpers/core.ts";

/**
 * The Feishu channel's rows with several apps (issue 30): each app's store sees its own cards, pings and
 * queued-message cards; rows of an earlier version (no app recorded) become the first app's; an inbound id is
 * seen once per app.
 */

const A = "cli_a000000000000001";
const B = "cli_b000000000000002";

function card(runId: string, messageId: string) {
  return {
    runId,
    messageId,
    sessionId: "s",
    chatId: "oc_1",
    senderId: "ou_1",
    sourceMessageId: "om_src",
    createdAt: 10,
  };
}

describe("FeishuStore with several apps", () => {
  it("shows each app its own rows, and gives rows written before apps were recorded to the first", () => {
    const db = openDatabase(path.join(tempDir(), "bot.sqlite"));
    // Written as by an earlier, one-app version: no app on the rows.
    const before = new FeishuStore(db, () => 10);
    before.saveCard(card("old", "om_old"));
    before.savePing({
      messageId: "om_ping",
      kind: "ping",
      runId: "old",
      requestIds: ["r1"],
      group: false,
      sentAt: 10,
    });
    before.saveQueuedCard({
      queueId: "q_old",
      sessionId: "s",
      messageId: "om_q",
      sourceMessageId: "om_s",
      chatId: "oc_1",
    });

    const a = new FeishuStore(db, () => 10, { appId: A, first: true });
    const b = new FeishuStore(db, () => 10, { appId: B, first: false });
    // Not claimed yet: neither app's store counts the old rows as its own.
    expect(a.finalPending(0)).toEqual([]);
    a.claimUnowned();
    b.claimUnowned(); // only the first app's runtime calls it; a second call finds nothing left to claim anyway
    expect(a.finalPending(0).map((row) => row.runId)).toEqual(["old"]);
    expect(a.pingsSince(0).map((row) => row.messageId)).toEqual(["om_ping"]);
    expect(a.queuedCard("q_old")?.messageId).toBe("om_q");

    b.saveCard(card("new", "om_new"));
    expect(b.finalPending(0).map((row) => row.runId)).toEqual(["new"]);
    expect(a.finalPending(0).map((row) => row.runId)).toEqual(["old"]);
    expect(b.cardForRun("old")).toBeUndefined();
    expect(b.cardByMessage("om_old")).toBeUndefined();
    expect(b.pingsSince(0)).toEqual([]);
    expect(b.queuedCard("q_old")).toBeUndefined();
    // A store of no app (tools, tests) sees every app's.
    expect(new FeishuStore(db, () => 10).finalPending(0).map((row) => row.runId)).toEqual(["old", "new"]);
    db.close();
  });

  it("sees an inbound message once per app, the first app keeping the ids earlier versions recorded", () => {
    const db = openDatabase(path.join(tempDir(), "bot.sqlite"));
    expect(new FeishuStore(db, () => 10).markInbound("om_1")).toBe(true); // before the upgrade
    const a = new FeishuStore(db, () => 10, { appId: A, first: true });
    const b = new FeishuStore(db, () => 10, { appId: B, first: false });
    expect(a.markInbound("om_1")).toBe(false); // a redelivery across the upgrade is still one
    expect(b.markInbound("om_1")).toBe(true); // the same message @-mentioning the second bot too
    expect(b.markInbound("om_1")).toBe(false);
    db.close();
  });
});

describe("which app's channel shows a run's card", () => {
  const first = { appId: A, first: true };
  const second = { appId: B, first: false };
  it("is the app the placement names; one that names none (an earlier version's run, an outside agent's task) is the first's", () => {
    const reply = { kind: "reply" as const, chatId: "oc_1", messageId: "om_1" };
    expect([
      ownsPlacement(first, { ...reply, appId: B }),
      ownsPlacement(second, { ...reply, appId: B }),
    ]).toEqual([false, true]);
    expect([ownsPlacement(first, reply), ownsPlacement(second, reply)]).toEqual([true, false]);
    const send = { kind: "send" as const, to: { chatId: "oc_1" }, chatType: "group" as const };
    expect([ownsPlacement(first, send), ownsPlacement(second, send)]).toEqual([true, false]);
    expect(ownsPlacement(first, undefined)).toBe(false);
  });

  it("resumes a run recorded before apps were (its source names none) on the first app's card", () => {
    expect(placementOf({ channel: "feishu", messageId: "om_1", chatId: "oc_1" })).toEqual({
      kind: "reply",
      chatId: "oc_1",
      messageId: "om_1",
    });
    expect(placementOf(feishuSource(B, "om_1", "oc_1"))).toMatchObject({ appId: B });
  });
});
