import { afterEach, describe, expect, it } from "vitest";
import type { Agent } from "../src/harness/agents/agent.ts";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";
import type { RecordedCall } from "../src/local/emulator/types.ts";
import { CardEntityStore } from "../src/store/cardkit.ts";
import { openDatabase } from "../src/store/db.ts";
import { sqliteSql } from "../src/store/sql.ts";
import { cardReplyingTo, cardText, type FeishuRig, startFeishuRig } from "./helpers/feishu.ts";

/**
 * The last rung of a CardKit card's lifetime (issue 29): streaming closed (200850/300309), the one recovery
 * full update refused, and the IM PATCH of the same message refused too (whether IM PATCH works on a message
 * sent by card_id is UNCONFIRMED, docs/feishu-platform.md §3.5). Nothing more is sent to the card, never in a
 * loop; the final state goes as one new card message in the same place, and a restart does not send it again.
 */

const ALICE = "ou_alice000000000000000000000000000";
const ANSWER = "部署完成：服务已上线，监控正常，回滚脚本已就绪。".repeat(2);
const rigs: FeishuRig[] = [];
const emus: Emulator[] = [];
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
  for (const e of emus.splice(0)) await e.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const cardkitCalls = (emu: Emulator): RecordedCall[] =>
  emu.calls.filter((c) => c.path.startsWith("/open-apis/cardkit/v1/cards"));
const patchesOf = (emu: Emulator, messageId: string): RecordedCall[] =>
  emu.calls.filter((c) => c.method === "PATCH" && c.path === `/open-apis/im/v1/messages/${messageId}`);
const fromBot = (emu: Emulator, userMessageId: string) =>
  emu.messages
    .listMessages()
    .filter((m) => m.parentId === userMessageId && m.senderType === "app" && m.msgType === "interactive");

/**
 * Types the answer out; halfway, on its first run only, `midway` is called, and two pieces later the run waits
 * until the process stops (the resumed run types it all).
 */
function typist(midway: () => void): Agent {
  return {
    name: "typist",
    async run(ctx) {
      for (let i = 1; i <= 12; i += 1) {
        ctx.reportText(ANSWER.slice(0, Math.ceil((ANSWER.length * i) / 12)));
        await sleep(80);
        if (i === 6 && !ctx.resumed) midway();
        if (i === 8 && !ctx.resumed) {
          await new Promise((_, reject) => {
            ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true });
          });
        }
      }
      return { text: ANSWER };
    },
  };
}

describe("CardKit's static fallback", () => {
  it("after streaming closed and both the recovery PUT and the IM PATCH were refused, sends the final state once as a new message, across a restart", async () => {
    const emulator = await startEmulator();
    emus.push(emulator);
    const agent = typist(() => {
      // Ten minutes pass on the platform (the bot's clock does not see them): its streaming closes itself.
      emulator.clock.advance(600_000);
      // The recovery full update is refused, and so is an IM PATCH of the entity's message.
      emulator.injectFault({
        match: { method: "PUT", path: /^\/open-apis\/cardkit\/v1\/cards\/[^/]+$/ },
        times: 5,
        response: { httpStatus: 400, code: 11310, msg: "cardid is invalid" },
      });
      emulator.injectFault({
        match: { method: "PATCH", path: /^\/open-apis\/im\/v1\/messages\// },
        times: 5,
        response: { httpStatus: 400, code: 230001, msg: "this message cannot be patched" },
      });
    });
    const first = await startFeishuRig({ cardTransport: "cardkit", agent, emulator });
    rigs.push(first);
    const userMessageId = await first.send({ chatType: "p2p", senderOpenId: ALICE, text: "部署" });
    const messageId = await first.progressCard(userMessageId);
    // The agent waits halfway; the bot streams into the card until it finds streaming closed.
    await first.until(() => patchesOf(emulator, messageId).length > 0, "the IM PATCH after the refused PUT");
    await first.channel.idle();
    await sleep(600); // more text updates would have gone by now
    const calls = cardkitCalls(emulator);
    const closed = calls.findIndex((c) => c.code === 200850 || c.code === 300309);
    expect(closed).toBeGreaterThan(0);
    // One recovery PUT after it, refused; then nothing more on the entity.
    expect(calls.slice(closed + 1).map((c) => [c.method, c.code])).toEqual([["PUT", 11310]]);
    expect(patchesOf(emulator, messageId).map((c) => c.code)).toEqual([230001]);
    expect(fromBot(emulator, userMessageId)).toHaveLength(1); // not final yet: no new message
    await first.stop();
    rigs.splice(rigs.indexOf(first), 1);

    // The restart resumes the run: the card stays as it was; the final state is the one new message.
    const second = await startFeishuRig({
      cardTransport: "cardkit",
      agent,
      emulator,
      dataDir: first.dataDir,
      recover: true,
    });
    rigs.push(second);
    const final = await second.until(() => {
      const extra = fromBot(emulator, userMessageId).find((m) => m.messageId !== messageId);
      return extra && JSON.parse(extra.content);
    }, "the static message with the final state");
    await second.core.runner.idle();
    await second.channel.idle();
    expect(final.header?.template).toBe("green");
    expect(cardText(final)).toContain("回滚脚本已就绪");
    expect(JSON.stringify(final)).not.toContain("card_id"); // a card of its own, not the entity again
    expect(cardReplyingTo(emulator, userMessageId)).toBe(messageId); // the progress card is still the first
    expect(cardkitCalls(emulator)).toHaveLength(calls.length); // CardKit never tried again
    expect(patchesOf(emulator, messageId)).toHaveLength(1); // IM PATCH never tried again
    expect(second.cardOf(messageId).header?.template).not.toBe("green");
    const db = openDatabase(second.dbFile);
    const row = await new CardEntityStore(sqliteSql(db)).byMessage(messageId);
    db.close();
    expect(row).toMatchObject({ fallback: true, static: true });
    expect(row?.staticMessageId).toBe(fromBot(emulator, userMessageId)[1]?.messageId);
    await second.stop();
    rigs.splice(rigs.indexOf(second), 1);

    // Another restart: the run ended and its final state went; nothing is sent again.
    const third = await startFeishuRig({
      cardTransport: "cardkit",
      agent,
      emulator,
      dataDir: first.dataDir,
      recover: true,
    });
    rigs.push(third);
    await third.channel.idle();
    await sleep(300);
    expect(fromBot(emulator, userMessageId)).toHaveLength(2);
    expect(cardkitCalls(emulator)).toHaveLength(calls.length);
    expect(patchesOf(emulator, messageId)).toHaveLength(1);
  });
});
