import { afterEach, describe, expect, it, vi } from "vitest";
import type { AskOutcome } from "../src/asks/pending.ts";
import { askNotice } from "../src/cards/ask-extras.ts";
import { formatDeadline as formatDeadlineIn, goneNoticeText } from "../src/cards/ask-words.ts";
import type { Card } from "../src/cards/model.ts";
import { DEFAULT_ASK_TIMES, extendedText, formatDeadline, goneQuestion } from "../src/feishu/ask-deadline.ts";
import { catalogues, strings } from "../src/strings/index.ts";
import { eachTransport, type FakeChannelRig, startFakeChannel } from "./helpers/fake-channel.ts";
import { type FeishuRig, requestIdsOn, startFeishuRig } from "./helpers/feishu.ts";
import { shownIn } from "./helpers/local-datetime.ts";

/**
 * Deadlines people can see (issue 16), on fake time: the absolute deadline on the card, one reminder before it
 * (short in private chats, an @-mention in groups), 延长 15 分钟 within its bound, and what the card says once
 * the question timed out, was answered elsewhere, or a queued message replaced the run. The card's side runs
 * on the fake messenger; what the session page sees goes through the SDK, the emulator and the WebSocket hub.
 */

const ALICE = "ou_alice000000000000000000000000000";
const BOB = "ou_bob00000000000000000000000000000";
const GROUP = "oc_team";
const MIN = 60_000;
const FIFTEEN_HUNDRED = new Date("2026-12-01T07:00:00Z"); // 15:00 in Asia/Shanghai

const rigs: FeishuRig[] = [];
const fakeRigs: FakeChannelRig[] = [];
afterEach(async () => {
  for (const r of fakeRigs.splice(0)) await r.stop();
  // Stopping waits for the cards' last PATCHes, which wait on fake timers (the settle delay after a click).
  for (const r of rigs.splice(0)) {
    let done = false;
    const stopped = r.stop().then(() => {
      done = true;
    });
    for (let second = 0; second < 60 && !done; second += 1) await vi.advanceTimersByTimeAsync(1000);
    await stopped;
  }
  vi.useRealTimers();
});
/** Over the emulator, for the session page: only the clock and timeouts are fake, sockets still work. */
async function rig(options: Parameters<typeof startFeishuRig>[0] = {}): Promise<FeishuRig> {
  vi.useFakeTimers({ shouldAdvanceTime: true, toFake: ["setTimeout", "clearTimeout", "Date"] });
  vi.setSystemTime(FIFTEEN_HUNDRED);
  const started = await startFeishuRig({ askTimeoutMs: 15 * MIN, askPing: false, ...options });
  rigs.push(started);
  return started;
}
/** The card's side on the fake messenger: all timers fake, time moves only when the test moves it. */
async function fakeRig(options: { askPing?: boolean } = {}): Promise<FakeChannelRig> {
  vi.useFakeTimers();
  vi.setSystemTime(FIFTEEN_HUNDRED);
  const started = await startFakeChannel({ askTimeoutMs: 15 * MIN, askPing: false, ...options });
  fakeRigs.push(started);
  return started;
}

type AnyRig = Pick<FeishuRig, "progressCard" | "cardOf" | "core"> & {
  send(input: Parameters<FeishuRig["send"]>[0]): string | Promise<string>;
  until: FakeChannelRig["until"];
};

// The card as a reader in Shanghai sees it: <local_datetime> tags shown in that zone.
const textOf = (card: Card) => shownIn(JSON.stringify(card), "Asia/Shanghai");
const botTexts = (r: FakeChannelRig) => r.fromBot().filter((m) => m.msgType === "text");

async function waiting(r: AnyRig, chatType: "p2p" | "group" = "p2p", text = "帮我部署") {
  const group = chatType === "group";
  const userMessageId = await r.send({
    chatType,
    senderOpenId: ALICE,
    text,
    ...(group ? { chatId: GROUP, mentionBot: true } : {}),
  });
  const cardId = await r.progressCard(userMessageId);
  const requestId = await r.until(() => requestIdsOn(r.cardOf(cardId))[0], "a form");
  const ask = r.core.registry.get(requestId)!;
  return { cardId, requestId, ask, sessionId: ask.sessionId };
}

const progress = (act: string, sessionId: string, runId: string) => ({
  kind: "progress",
  act,
  sessionId,
  runId,
  sender: ALICE,
});

eachTransport(() => {
  describe("the deadline, written once", () => {
    it("is an absolute time in the zone, with the date when it is not today", () => {
      const at = Date.UTC(2026, 11, 1, 7, 42);
      expect(formatDeadline(at, "Asia/Shanghai", at)).toBe("15:42");
      expect(formatDeadline(at, "Europe/London", at)).toBe("07:42");
      expect(formatDeadline(Date.UTC(2026, 11, 1, 16, 30), "Asia/Shanghai", at)).toBe("12月2日 00:30");
    });

    it("writes the date in each language's own words", () => {
      const now = Date.UTC(2026, 11, 1, 7, 42);
      const tomorrow = Date.UTC(2026, 11, 1, 16, 30);
      expect(formatDeadlineIn(tomorrow, "Asia/Shanghai", now, catalogues.zh_cn)).toBe("12月2日 00:30");
      expect(formatDeadlineIn(tomorrow, "Asia/Shanghai", now, catalogues.en_us)).toBe("Dec 2 00:30");
      expect(formatDeadlineIn(now, "Asia/Shanghai", now, catalogues.en_us)).toBe("15:42");
      // The 延长 toast too: the operator's client picks its language from `i18n`, date and all; a toast is
      // plain text, so its time names the zone (issue 25).
      expect(extendedText(tomorrow, "Asia/Shanghai", now)).toEqual({
        zh_cn: "已延长，请在 12月2日 00:30（GMT+8） 前回答",
        en_us: catalogues.en_us.asks.extended("Dec 2 00:30 (GMT+8)"),
      });
    });

    it("keeps why a question is gone as a fact, and words it in one line per language", () => {
      expect(goneQuestion({ kind: "timeout" })).toEqual({ kind: "timeout" });
      expect(goneQuestion({ kind: "cancelled", reason: "x" })).toEqual({ kind: "cancelled" });
      const at = Date.UTC(2026, 11, 1, 7, 42);
      const answer: AskOutcome = { kind: "answered", answers: [], surface: "websocket", userId: ALICE };
      const web = goneQuestion(answer, at, "Asia/Shanghai");
      expect(web).toEqual({
        kind: "answered",
        surface: "websocket",
        userId: ALICE,
        at,
        timeZone: "Asia/Shanghai",
      });
      expect(
        goneQuestion({ kind: "answered", answers: [], surface: "feishu", userId: ALICE }),
      ).toBeUndefined();
      expect(goneNoticeText({ kind: "timeout" }, catalogues.zh_cn)).toContain("问题已失效：已超时");
      expect(goneNoticeText({ kind: "cancelled" }, catalogues.zh_cn)).toBe("问题已失效：已取消");
      // An answer on the session page is a success, with when and (in a group) who: never 问题已失效.
      expect(goneNoticeText(web!, catalogues.zh_cn)).toBe("✅ 已在网页端回答（15:42）");
      expect(goneNoticeText(web!, catalogues.zh_cn, "@Bob")).toBe("✅ @Bob 已在网页端回答（15:42）");
      expect(goneNoticeText(web!, catalogues.en_us, "@Bob")).toBe(
        "✅ Answered on the web page by @Bob at 15:42",
      );
      expect(goneNoticeText({ kind: "timeout" }, catalogues.en_us)).toMatch(
        /^The question is no longer open/,
      );
      // On the card, when it was answered is each viewer's own time (<local_datetime>), never a bare 15:42.
      const tag = `<local_datetime millisecond='${at}' format_type='time'></local_datetime>`;
      expect(askNotice({ notice: web! }, catalogues.zh_cn)).toEqual([
        { tag: "markdown", content: `✅ 已在网页端回答（${tag}）` },
      ]);
      expect(askNotice({ notice: web! }, catalogues.en_us, true)).toEqual([
        { tag: "markdown", content: `✅ Answered on the web page by <at id=${ALICE}></at> at ${tag}` },
      ]);
    });
  });

  describe("deadlines, reminders and 延长 on fake time", () => {
    it("private chat: 请在 15:15 前回答, one short reminder at 15:10, 延长 moves both, bounded", async () => {
      const r = await fakeRig();
      const { cardId, ask, sessionId } = await waiting(r);
      const deadline = formatDeadline(ask.expiresAt, "Asia/Shanghai");
      expect(deadline).toBe("15:15");
      await r.until(() => textOf(r.cardOf(cardId)).includes("请在 15:15 前回答"), "the deadline on the card");
      expect(textOf(r.cardOf(cardId))).toContain(strings.asks.extend(15));

      vi.advanceTimersByTime(10 * MIN - 1_000);
      expect(botTexts(r)).toHaveLength(0);
      vi.advanceTimersByTime(2_000);
      const reminder = await r.until(() => botTexts(r)[0], "the reminder");
      // A text reads the same for everyone: the time names its zone.
      expect(reminder.content).toContain("15:15（GMT+8）");
      expect(reminder.content).not.toContain("<at");

      const extended = await r.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value: progress("extend", sessionId, ask.runId),
      });
      expect(extended.toast).toEqual({ type: "success", content: strings.asks.extended("15:30（GMT+8）") });
      expect(r.core.registry.get(ask.requestId)?.expiresAt).toBe(ask.createdAt + 30 * MIN);
      await r.until(() => textOf(r.cardOf(cardId)).includes("请在 15:30 前回答"), "the new deadline");
      // Only the answerer may extend.
      const bob = await r.click({
        messageId: cardId,
        operatorOpenId: BOB,
        value: progress("extend", sessionId, ask.runId),
      });
      expect(bob.toast?.type).toBe("error");
      // Three more are within the default hour; the fifth is refused.
      for (let i = 0; i < 3; i += 1) {
        const more = await r.click({
          messageId: cardId,
          operatorOpenId: ALICE,
          value: progress("extend", sessionId, ask.runId),
        });
        expect(more.toast?.type).toBe("success");
      }
      const refused = await r.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value: progress("extend", sessionId, ask.runId),
      });
      expect(refused.toast).toEqual({ type: "warning", content: strings.asks.extendLimit });
      expect(r.core.registry.get(ask.requestId)?.expiresAt).toBe(
        ask.createdAt + 15 * MIN + DEFAULT_ASK_TIMES.extendMaxMs,
      );
      await r.until(
        () => !textOf(r.cardOf(cardId)).includes(strings.asks.extend(15)),
        "no 延长 once the bound is reached",
      );

      // The moved deadline gets its own reminder, five minutes before it (16:15 - 5 min).
      vi.advanceTimersByTime(ask.createdAt + 70 * MIN - Date.now() - 1_000);
      expect(botTexts(r)).toHaveLength(1);
      vi.advanceTimersByTime(2_000);
      await r.until(() => botTexts(r)[1], "the second reminder");
      expect(botTexts(r)[1]?.content).toContain("16:15");

      // Timeout: the form goes, the card says why and what the agent did instead.
      vi.advanceTimersByTime(ask.expiresAt + 60 * MIN - Date.now() + 1);
      await r.until(() => r.cardOf(cardId).header?.template === "green", "the finished card");
      const done = textOf(r.cardOf(cardId));
      expect(done).toContain("问题已失效：已超时");
      expect(done).toContain("没有收到你的回答");
      expect((await r.core.registry.state(ask.requestId))?.status).toBe("timeout");
      // Both reminders now say the question expired, edited in place: nothing was recalled.
      await r.until(
        () => botTexts(r).every((m) => m.content.includes("问题已失效：已超时")),
        "edited reminders",
      );
      expect(botTexts(r).map((m) => [m.edits, m.recalled])).toEqual([
        [1, false],
        [1, false],
      ]);
    });

    it("group chat: the @-ping and the reminder are edited to say who answered once the card took the answer", async () => {
      const r = await fakeRig({ askPing: true });
      const { cardId, requestId, ask, sessionId } = await waiting(r, "group");
      const ping = await r.until(() => botTexts(r)[0], "the @-ping");
      expect(ping.content).toContain(strings.feishu.askPing(ask.questions.length));
      vi.advanceTimersByTime(10 * MIN + 1_000);
      await r.until(() => botTexts(r)[1], "the reminder");
      const answered = await r.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        name: "ask0_submit",
        value: { kind: "feishu_ask", act: "submit", sessionId, requestId, sender: ALICE },
        formValue: { ask0_q0: "0", ask0_q1: ["0"] },
      });
      expect(answered.toast?.type).toBe("success");
      const said = JSON.stringify({ text: `问题已由 <at user_id="${ALICE}"></at> 回答` });
      await r.until(() => botTexts(r).every((m) => m.content === said), "both messages edited");
      expect(botTexts(r).map((m) => m.recalled)).toEqual([false, false]);
    });

    it("group chat: the expiry reminder @-mentions the sender", async () => {
      const r = await fakeRig();
      await waiting(r, "group");
      vi.advanceTimersByTime(10 * MIN + 1_000);
      const reminder = await r.until(() => botTexts(r)[0], "the reminder");
      expect(reminder.content).toContain(ALICE);
    });

    it("answered on the session page: the card's form goes and says 已在网页端回答; the old form's submit gets 问题已失效", async () => {
      const r = await rig({ withServer: true });
      const { cardId, requestId, ask, sessionId } = await waiting(r);
      const client = await r.connect(ALICE);
      client.send({ type: "subscribe", sessionId });
      await r.until(
        () => client.frames.find((f) => f.type === "ask_user_questions"),
        "the ask on the socket",
      );
      const answers = ask.questions.map((q) => ({
        question: q.question,
        selectedLabels: [q.options[0]!.label],
        customInput: null,
      }));
      client.send({ type: "ask_user_questions_result", sessionId, data: { requestId, answers } });
      await r.until(
        async () => (await r.core.registry.state(requestId))?.status === "answered",
        "the answer",
      );
      const stale = await r.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        name: "ask0_submit",
        value: { kind: "feishu_ask", act: "submit", sessionId, requestId, sender: ALICE },
        formValue: { ask0_q0: "0", ask0_q1: ["0"] },
      });
      expect(stale.toast).toEqual({ type: "warning", content: strings.feishu.askExpired });
      // A success, said as one (with when), not 问题已失效.
      await r.until(
        () => textOf(r.cardOf(cardId)).includes("✅ 已在网页端回答（15:0"),
        "the answer on the card",
      );
      expect(textOf(r.cardOf(cardId))).not.toContain("问题已失效");
      client.close();
    });

    it("延长 on the card tells the session page the new deadline", async () => {
      const r = await rig({ withServer: true });
      const { cardId, ask, sessionId } = await waiting(r);
      const client = await r.connect(ALICE);
      client.send({ type: "subscribe", sessionId });
      await r.until(
        () => client.frames.find((f) => f.type === "ask_user_questions"),
        "the ask on the socket",
      );
      // The registry's ask object moves with 延长: keep the deadline as it was.
      const before = ask.expiresAt;
      await r.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value: progress("extend", sessionId, ask.runId),
      });
      const moved = await r.until(
        () =>
          client.frames.find(
            (f) => f.type === "ask_user_questions" && f.data.expiresAt === before + 15 * MIN,
          ),
        "the ask with its new deadline",
      );
      expect(moved.data.requestId).toBe(ask.requestId);
      client.close();
    });

    it("a message behind the question: the card says so, and 取消并处理新消息 lets it replace the run", async () => {
      const r = await fakeRig();
      const { cardId, ask, sessionId } = await waiting(r);
      r.send({ chatType: "p2p", senderOpenId: ALICE, text: "/quick 新的需求" });
      await r.until(() => textOf(r.cardOf(cardId)).includes(strings.asks.queuedBehind(1)), "the queued note");
      expect(textOf(r.cardOf(cardId))).toContain(strings.asks.replace);
      const bob = await r.click({
        messageId: cardId,
        operatorOpenId: BOB,
        value: progress("replace", sessionId, ask.runId),
      });
      expect(bob.toast?.type).toBe("error");
      const replaced = await r.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        value: progress("replace", sessionId, ask.runId),
      });
      expect(replaced.toast).toEqual({ type: "success", content: strings.asks.replaced });
      await r.drive(r.core.runner.idle());
      expect((await r.core.registry.state(ask.requestId))?.status).toBe("superseded");
      const runs = (await r.core.runner.runs(sessionId, 5)).map((run) => [run.input, run.status]);
      expect(runs).toEqual([
        ["/quick 新的需求", "completed"],
        ["帮我部署", "cancelled"],
      ]);
    });
  });
});
