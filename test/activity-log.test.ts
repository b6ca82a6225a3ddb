import { Writable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { sdkLogger } from "../src/feishu/lark-messenger.ts";
import { createLogger, type Logger } from "../src/logger.ts";
import { eachTransport, type FakeChannelRig, startFakeChannel } from "./helpers/fake-channel.ts";
import { formsOn, requestIdsOn } from "./helpers/feishu.ts";

/**
 * What an operator reads at LOG_LEVEL=info (issue 25): one line per task started, question asked, question
 * answered (by whom, on which surface, after how long) and task finished (status, duration); sign-in lines
 * and the SDK's chatter only at debug. The service's own logger, its JSON lines captured.
 */

const ALICE = "ou_alice000000000000000000000000000";

type Line = Record<string, unknown> & { level: number; msg: string };

function capture(level: string): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      for (const text of String(chunk).split("\n")) if (text.trim()) lines.push(JSON.parse(text));
      callback();
    },
  });
  return { logger: createLogger({ level, destination }), lines };
}

const rigs: FakeChannelRig[] = [];
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
  vi.useRealTimers();
});

eachTransport(() => {
  describe("the activity log", () => {
    it("at info: a task's start, its question asked and answered (by whom, where, after how long), its end", async () => {
      const { logger, lines } = capture("info");
      const r = await startFakeChannel({ logger });
      rigs.push(r);
      const userMessageId = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "帮我部署" });
      const cardId = await r.progressCard(userMessageId);
      const card = await r.until(() => formsOn(r.cardOf(cardId)).length > 0 && r.cardOf(cardId), "the form");
      const requestId = requestIdsOn(card)[0] ?? "";
      const ask = r.core.registry.get(requestId);
      vi.advanceTimersByTime(4_000);
      await r.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value: { kind: "feishu_ask", act: "submit", sessionId: ask?.sessionId, requestId, sender: ALICE },
        name: "ask0_submit",
        formValue: { ask0_q0: "1", ask0_c0: "", ask0_q1: ["0"], ask0_c1: "" },
      });
      await r.until(() => lines.some((line) => line.msg === "task finished"), "the finished line");

      const named = (msg: string) => lines.filter((line) => line.msg === msg && line.level === 30);
      const runId = ask?.runId;
      expect(named("task started")).toEqual([
        expect.objectContaining({ runId, sessionId: ask?.sessionId, senderId: ALICE, channel: "feishu" }),
      ]);
      expect(named("question asked")).toEqual([
        expect.objectContaining({ requestId, runId, answererId: ALICE, questions: 2 }),
      ]);
      const [answered] = named("question answered");
      expect(answered).toMatchObject({ requestId, runId, by: ALICE, surface: "feishu" });
      expect(answered?.waitedMs).toBeGreaterThanOrEqual(4_000);
      const [finished] = named("task finished");
      expect(finished).toMatchObject({ runId, status: "completed" });
      expect(finished?.durationMs).toBeGreaterThanOrEqual(4_000);
      // Ids, not what was asked or answered.
      expect(JSON.stringify(lines)).not.toContain("Kubernetes");
    });

    it("writes sign-in lines at debug only", async () => {
      for (const level of ["info", "debug"]) {
        const { logger, lines } = capture(level);
        const r = await startFakeChannel({
          logger,
          signInLink: async () => ({
            url: "https://bot.example.com/auth/link?token=x",
            expiresAt: Date.now() + 60_000,
          }),
        });
        rigs.push(r);
        r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/login" });
        await r.until(() => r.fromBot().length > 0, "the link");
        const signIn = lines.filter((line) => line.msg === "sign-in link requested");
        expect(signIn.map((line) => line.level)).toEqual(level === "debug" ? [20] : []);
        expect(lines.filter((line) => line.msg === "feishu channel ready" && line.level > 20)).toEqual([]);
      }
    });

    it("writes the SDK's info lines (its developer-console hint) at debug; its warnings stay warnings", () => {
      const { logger, lines } = capture("debug");
      const sdk = sdkLogger(logger);
      sdk.info(["[ws]", "receive events or callbacks through persistent connection only available in …"]);
      sdk.warn(["[ws]", "reconnecting"]);
      expect(lines.map((line) => [line.level, line.msg])).toEqual([
        [20, "lark sdk"],
        [40, "lark sdk"],
      ]);
    });
  });
});
