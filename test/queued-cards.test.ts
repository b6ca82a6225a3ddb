import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Card } from "../src/cards/model.ts";
import { IGNORED_SLOT } from "../src/feishu/limits.ts";
import { QueuedCards } from "../src/feishu/queued-cards.ts";
import { createLogger } from "../src/logger.ts";
import { openDatabase } from "../src/store/db.ts";
import { FeishuStore } from "../src/store/feishu.ts";

/** The queued-message cards against a real store and a messenger whose reply the test lets through by hand. */

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function rig() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-queued-cards-"));
  dirs.push(dir);
  const db = openDatabase(path.join(dir, "bot.sqlite"));
  const store = FeishuStore.onFile(db, Date.now);
  let letReplyThrough: () => void = () => {};
  const replyGate = new Promise<void>((resolve) => {
    letReplyThrough = resolve;
  });
  const patches: { messageId: string; card: Card }[] = [];
  const cards = new QueuedCards({
    store,
    runner: { queued: async () => [], getSession: async () => undefined },
    messenger: {
      replyCard: async () => {
        await replyGate;
        return { messageId: "om_queued_card" };
      },
      patchCard: async (messageId, card) => {
        patches.push({ messageId, card });
      },
    },
    appLimiter: (fn) => fn(IGNORED_SLOT),
    logger: createLogger({ level: "silent" }),
  });
  return { cards, store, patches, letReplyThrough, close: () => db.close() };
}

const message = { id: "q1", sessionId: "s1", senderId: "ou_alice", text: "/quick", createdAt: 0 };

describe("queued-message cards", () => {
  it("a run that starts while its queued card's reply is still on its way still marks that card started", async () => {
    const { cards, store, patches, letReplyThrough, close } = rig();
    const posting = cards.post(message, 1, { sourceMessageId: "om_user", chatId: "oc_1" });
    // The task ahead ends before the reply comes back: the queued message's run starts now.
    const starting = cards.started("q1", { senderId: "ou_alice", text: "/quick", sessionId: "s1" });
    letReplyThrough();
    await Promise.all([posting, starting]);
    expect(patches.map((p) => [p.messageId, p.card.header?.template])).toEqual([["om_queued_card", "blue"]]);
    expect(await store.queuedCard("q1")).toBeUndefined(); // retired, not left to be reordered as 排队中
    close();
  });
});
