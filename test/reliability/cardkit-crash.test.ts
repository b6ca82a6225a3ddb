import { describe, expect, it } from "vitest";
import type { RecordedCall } from "../../src/local/emulator/types.ts";
import { type ScriptedModel, startScriptedModel } from "../helpers/openai-server.ts";
import { cardOf, cardsReplyingTo, checkDatabase, tempDataDir } from "./helpers/bot-process.ts";
import { useCrashRig } from "./helpers/crash-rig.ts";
import { timeoutMs, until } from "./helpers/env.ts";
import { ALICE, isCompleted } from "./helpers/stack.ts";

/**
 * kill -9 while a CardKit card's answer streams (issue 29), through the real entry point with
 * FEISHU_CARD_TRANSPORT=cardkit and a scripted OpenAI model typing the answer out. After the restart on the
 * same DATA_DIR the same entity goes on above every sequence reserved before the kill (0 × 300317), the run's
 * final state lands on it by a full update, and the run has one card: no second entity, no second message.
 */

const { emulator, bot, deliver, onCleanup } = useCrashRig();

const pieces = (text: string, n: number) =>
  Array.from({ length: n }, (_, i) =>
    text.slice(Math.floor((text.length * i) / n), Math.floor((text.length * (i + 1)) / n)),
  );
const FIRST = "先检查配置，再构建镜像，然后逐台滚动发布，最后核对监控。".repeat(4);
const SECOND = "恢复后重新作答：配置无误，镜像已构建，发布完成，监控正常。";
const isContent = (c: RecordedCall) => c.path.includes("/elements/");
const isFull = (c: RecordedCall) => c.method === "PUT" && /\/cards\/[^/]+$/.test(c.path);
const sequenceOf = (c: RecordedCall) => (c.requestBody as { sequence?: number } | undefined)?.sequence ?? 0;

describe("kill -9 mid-stream on a CardKit card", () => {
  it(
    "continues the same entity above every sequence used before the kill and lands the final state on it: one card, 0 × 300317",
    async () => {
      const model: ScriptedModel = await startScriptedModel();
      onCleanup(() => model.close());
      // The answer types out for about 6 s: the kill comes while it streams.
      model.script({ text: pieces(FIRST, 60), delayMs: 100 });
      const env = {
        AGENT: "openai",
        OPENAI_BASE_URL: model.baseUrl,
        OPENAI_MODEL: "scripted",
        FEISHU_CARD_TRANSPORT: "cardkit",
      };
      const emu = await emulator();
      const dataDir = tempDataDir();
      const first = await bot({ emulator: emu, dataDir, env });
      const payload = emu.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "发布新版本" });
      const userMessageId = payload.event.message.message_id;
      await deliver(first, emu, payload);
      const messageId = await until(() => cardsReplyingTo(emu, userMessageId)[0], "the card", 20_000);
      const cardkit = () => emu.calls.filter((c) => c.path.startsWith("/open-apis/cardkit/v1/cards"));
      await until(
        () => cardkit().filter((c) => isContent(c) && c.code === 0).length >= 3,
        "the answer streaming into the card",
        20_000,
      );
      await first.kill();
      expect(checkDatabase(dataDir)).toEqual({ integrity: "ok", foreignKeyViolations: 0 });
      const beforeKill = cardkit();
      const created = beforeKill[0]!;
      expect(created.method).toBe("POST");
      const cardId = (created.responseBody as { data: { card_id: string } }).data.card_id;
      const highest = Math.max(...beforeKill.map(sequenceOf));

      model.script({ text: pieces(SECOND, 10), delayMs: 50 });
      const second = await bot({ emulator: emu, dataDir, env });
      await until(() => isCompleted(cardOf(emu, messageId)), "the completed card", 30_000);
      await until(
        () => {
          const last = cardkit().at(-1);
          return (
            last !== undefined && isFull(last) && JSON.stringify(last.requestBody).includes("恢复后重新作答")
          );
        },
        "the final state as a full update",
        10_000,
      );
      await second.stop();

      const calls = cardkit();
      const afterKill = calls.slice(beforeKill.length);
      // One entity, one message: the restart did not create or send another card.
      expect(calls.filter((c) => c.method === "POST")).toHaveLength(1);
      expect(cardsReplyingTo(emu, userMessageId)).toEqual([messageId]);
      expect(emu.messages.listMessages().filter((m) => m.senderType === "app")).toHaveLength(1);
      // The same entity, every sequence above those reserved before the kill; no operation refused.
      expect(afterKill.length).toBeGreaterThan(0);
      expect(afterKill.every((c) => c.path.startsWith(`/open-apis/cardkit/v1/cards/${cardId}`))).toBe(true);
      expect(Math.min(...afterKill.map(sequenceOf))).toBeGreaterThan(highest);
      expect(calls.map((c) => c.code).filter((code) => code !== 0)).toEqual([]);
      // The card's state came back by a full update first, then the resumed answer streamed again.
      expect(isFull(afterKill[0]!)).toBe(true);
      expect(afterKill.some(isContent)).toBe(true);
      const patches = emu.calls.filter((c) => c.method === "PATCH" && c.path.includes(messageId));
      expect(patches).toEqual([]); // CardKit did not fall back
      expect(JSON.stringify(cardOf(emu, messageId))).toContain("恢复后重新作答");
      expect(model.requests).toHaveLength(2);
    },
    timeoutMs(60_000, 60_000),
  );
});
