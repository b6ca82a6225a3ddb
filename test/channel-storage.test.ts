import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { feishuPrivateSessionId } from "../src/domain/session-id.ts";
import type { Agent } from "../src/harness/agents/agent.ts";
import { FeishuStore } from "../src/store/feishu.ts";
import { sqliteSql } from "../src/store/sql.ts";
import { eachTransport, type FakeChannelRig, startFakeChannel } from "./helpers/fake-channel.ts";
import { cardText, requestIdsOn } from "./helpers/feishu.ts";
import { holdWriteLock } from "./helpers/write-lock.ts";

/**
 * A card the platform took while the database refused to record it (another process holding the write
 * lock, a full disk): the card is in the chat, so it is still published to its final state, and its record
 * lands once the database takes writes again. On fake time, so the order of the race is the test's.
 */

const ALICE = "ou_alice000000000000000000000000000";
const MIN = 60_000;

const rigs: FakeChannelRig[] = [];
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
  vi.useRealTimers();
});

/** An agent whose run ends when the test says so. */
function gatedAgent() {
  let open: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const agent: Agent = {
    name: "gated",
    async run() {
      await gate;
      return { text: "done" };
    },
  };
  return { agent, open: () => open() };
}

eachTransport(() => {
  describe("a card the database refused to record", () => {
    it("is still published to its final state, and its record lands once the lock is gone", async () => {
      const { agent, open } = gatedAgent();
      const r = await startFakeChannel({ agent });
      rigs.push(r);
      // The card's reply takes a while; the database is locked before the platform answers it.
      r.fake.fail({ method: "replyCard", response: { delayMs: 500 } });
      // Recorded (the transport's ack), then the database is locked.
      const { messageId: userMessageId, data } = r.message({
        chatType: "p2p",
        senderOpenId: ALICE,
        text: "开始",
      });
      await r.deliver(data);
      const lock = holdWriteLock(r.dbFile);
      const cardId = await r.progressCard(userMessageId);
      const runId = r.core.runner.activeRun(feishuPrivateSessionId(r.fake.appId, ALICE))?.id ?? "";
      expect(runId).not.toBe("");
      const store = new FeishuStore(sqliteSql(new Database(r.dbFile, { readonly: true })), Date.now);
      // Sent, not recorded yet: the write met the lock.
      await r.until(() => r.fake.message(cardId) !== undefined, "the card in the chat");
      await vi.advanceTimersByTimeAsync(50);
      expect(await store.cardForRun(runId)).toBeUndefined();

      // The run ends while the database is still locked: its answer cannot be saved, so it fails, and the
      // card — which the bot had no record of — says so.
      open();
      const final = await r.until(() => {
        const text = cardText(r.cardOf(cardId));
        return text.includes("无法写入数据库") && text;
      }, "the card at its final state");
      expect(final).toContain("失败");
      expect(final).not.toContain("执行中");
      // The failure is the bot's words: an English reader of the card gets them in English.
      expect(final).toContain("Could not write to the database (");

      lock.release();
      await r.until(
        async () => (await store.cardForRun(runId))?.messageId === cardId,
        "the card's record, once the lock is gone",
      );
    });

    it("still sends the reminder before a deadline when the database refuses to mark it sent", async () => {
      // The demo agent asks at once; its question expires after 15 minutes, the reminder is due 5 before.
      const r = await startFakeChannel({ askTimeoutMs: 15 * MIN, askPing: false });
      rigs.push(r);
      const userMessageId = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "帮我部署" });
      const cardId = await r.progressCard(userMessageId);
      await r.until(() => requestIdsOn(r.cardOf(cardId)).length > 0, "the question's form");
      const lock = holdWriteLock(r.dbFile);
      // The reminder's timer meets the lock: it must neither throw out of the timer nor stay silent.
      await vi.advanceTimersByTimeAsync(10 * MIN + 1_000);
      const texts = r.fromBot().filter((m) => m.msgType === "text");
      expect(texts).toHaveLength(1);
      expect(texts[0]?.content).toContain("将于");
      lock.release();
    });

    it("a submit the database refuses leaves the card free to update: the next submit completes it", async () => {
      const r = await startFakeChannel({ askPing: false });
      rigs.push(r);
      const userMessageId = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "帮我部署" });
      const cardId = await r.progressCard(userMessageId);
      const requestId = await r.until(() => requestIdsOn(r.cardOf(cardId))[0], "the question's form");
      const ask = r.core.registry.get(requestId);
      const submit = {
        messageId: cardId,
        operatorOpenId: ALICE,
        value: {
          kind: "feishu_ask",
          act: "submit",
          sessionId: ask?.sessionId ?? "",
          requestId,
          sender: ALICE,
        },
        name: "ask0_submit",
        formValue: { ask0_q0: "1", ask0_c0: "", ask0_q1: ["0"], ask0_c1: "" },
      };
      const lock = holdWriteLock(r.dbFile);
      // The answer cannot be saved: the click fails, and the question stays open.
      const refused = await r.click(submit);
      expect(refused.toast?.type).toBe("error");
      expect(r.core.registry.get(requestId)).toBeDefined();
      lock.release();
      const answered = await r.click(submit);
      expect(answered.toast).toEqual({ type: "success", content: "已提交" });
      const final = await r.until(() => {
        const card = r.cardOf(cardId);
        return card.header?.template === "green" && card;
      }, "the completed card");
      expect(cardText(final)).toContain("Kubernetes");
      // Nothing is left holding the card: the channel goes idle (shutdown waits for exactly this).
      await r.idle();
    });
  });
});
