import { describe, expect, it } from "vitest";
import { feishuSource, ownsPlacement } from "../src/feishu/apps.ts";
import { placementOf } from "../src/harness/run-reads.ts";

/**
 * Several apps (issue 30): which app's channel shows a run's card. The rows each app's store sees (its own, the
 * first app claiming an earlier version's) are proved on both dialects in feishu-store-dialects.test.ts.
 */

const A = "cli_a000000000000001";
const B = "cli_b000000000000002";

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
