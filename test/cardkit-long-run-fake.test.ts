import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Agent } from "../src/harness/agents/agent.ts";
import { replaying } from "../src/harness/agents/demo.ts";
import { FakeCardKit, type FakeCardKitCall } from "../src/testing/fake-cardkit.ts";
import { FakeMessenger } from "../src/testing/fake-messenger.ts";
import { type FakeChannelRig, startFakeChannel } from "./helpers/fake-channel.ts";
import { cardText, formsOn, requestIdsOn } from "./helpers/feishu.ts";

/**
 * Issue 29's long run on fake time across the whole rig (test/cardkit-long-run.test.ts runs it on the
 * emulator's moved clock, where the bot's own timers stay real and never reach 9 minutes): every timer — the
 * agent's, the publisher's, the transport's reopen timer, the platform's 600 s close — runs on vitest's clock,
 * so a 50-minute task with three questions and a kill -9 in the middle runs in a second. It ends with the final
 * card landed on the one card, 0 × 300317, at most one 300309/200850 followed by exactly one recovery full
 * update, nothing sent while a form is open, and streaming reopened by its timer before Feishu's 10 minutes
 * while the card was quiet (nothing else was sent then to reopen it).
 */

const ALICE = "ou_alice000000000000000000000000000";
const MINUTE = 60_000;
const QUESTIONS = ["部署到哪个环境？", "数据库要迁移吗？", "通知哪些人？"];

const rigs: FakeChannelRig[] = [];
beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
  vi.useRealTimers();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** As the rig's `until`, in steps of a second: a run of fifty minutes in 10 ms ticks would take long. */
async function until<T>(probe: () => T | undefined | false, what: string, limitMs = 30 * MINUTE): Promise<T> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await vi.advanceTimersByTimeAsync(1000);
  }
}

/** When the agent was silent (no text, no step) for long: only the reopen timer may touch the card then. */
interface Quiet {
  from: number;
  to: number;
}

/**
 * Four passages (a piece a minute) with a question between each two; after the first passage it works 11
 * minutes without a word. On its first run it waits six pieces into the second passage until it is killed;
 * resumed, it takes the first answer from history and types the second passage from its start.
 */
function longRun(state: { parked: boolean; quiet: Quiet[] }): Agent {
  return {
    name: "long-run",
    async run(context) {
      const ctx = { ...context, callTool: replaying(context) };
      const passage = async (label: string, pieces: number, park?: number) => {
        for (let i = 1; i <= pieces; i += 1) {
          ctx.reportText(`${label}：${"进展顺利，继续处理下一部分。".repeat(i)}`);
          await sleep(MINUTE);
          if (i === park && !ctx.resumed) {
            state.parked = true;
            await new Promise(() => undefined); // killed here
          }
        }
      };
      const ask = (question: string) =>
        ctx.callTool("ask_user_questions", {
          questions: [
            {
              question,
              header: "确认",
              multiSelect: false,
              options: [
                { label: "是", description: "照此办理" },
                { label: "否", description: "先不做" },
              ],
            },
          ],
        });
      if (!ctx.resumed) {
        await passage("第一段", 12);
        const from = Date.now();
        await sleep(11 * MINUTE);
        state.quiet.push({ from, to: Date.now() });
      }
      await ask(QUESTIONS[0]!);
      await passage("第二段", 12, 6);
      await ask(QUESTIONS[1]!);
      await passage("第三段", 5);
      await ask(QUESTIONS[2]!);
      await passage("第四段", 8);
      return { text: "全部完成：三个问题都已确认，四段工作都已处理。" };
    },
  };
}

const opened = (c: FakeCardKitCall) =>
  (c.op === "settings" && c.body?.streaming_mode === true) ||
  (c.op === "update" &&
    (c.body?.config as { streaming_mode?: boolean } | undefined)?.streaming_mode === true);

describe("a 50-minute CardKit run on fake time, kill -9 included", () => {
  it("lands the final card with no 300317, at most one closed stream recovered once, nothing sent while a form is open, streaming reopened by its timer", async () => {
    const startedAt = Date.now();
    const fake = new FakeMessenger({ timeoutMs: 5000 });
    const cardkit = new FakeCardKit(fake);
    const state = { parked: false, quiet: [] as Quiet[] };
    const options = {
      fake,
      cardkit,
      agent: longRun(state),
      askTimeoutMs: 4 * 60 * MINUTE,
      askPing: false,
      cardPatchIntervalMs: 1000,
      settleMs: 1000,
    };
    let r = await startFakeChannel(options);
    rigs.push(r);
    const userMessageId = r.send({ chatType: "p2p", senderOpenId: ALICE, text: "开始长任务" });
    const messageId = await r.progressCard(userMessageId);
    const cardId = cardkit.entityOf(messageId)!.cardId;
    const calls = () => cardkit.callsOn(cardId).filter((c) => c.op !== "create" && c.op !== "send");
    const answered = new Set<string>();
    const openForms: { question: string; shown: number; before: number }[] = [];

    const answerNext = async (question: string, thinkMs: number) => {
      const card = await until(() => {
        const c = r.cardOf(messageId);
        const id = requestIdsOn(c)[0];
        return id !== undefined && !answered.has(id) && cardText(c).includes(question) && c;
      }, `the form of ${question}`);
      await r.idle();
      const shown = calls().length;
      await vi.advanceTimersByTimeAsync(thinkMs); // the person takes their time; the card is left alone
      openForms.push({ question, shown, before: calls().length });
      const requestId = requestIdsOn(card)[0]!;
      answered.add(requestId);
      const ask = r.core.registry.get(requestId)!;
      const response = await r.click({
        messageId,
        operatorOpenId: ALICE,
        value: { kind: "feishu_ask", act: "submit", sessionId: ask.sessionId, requestId, sender: ALICE },
        name: "ask0_submit",
        formValue: { ask0_q0: "0", ask0_c0: "" },
      });
      expect(response.toast).toEqual({ type: "success", content: "已提交" });
    };

    await answerNext(QUESTIONS[0]!, 3 * MINUTE);
    await until(() => state.parked, "the second passage halfway");
    await vi.advanceTimersByTimeAsync(2000); // its last pieces on the card
    const beforeKill = calls().length;
    // kill -9 mid-stream: nothing flushed, every timer dropped; two minutes pass; the same data starts again.
    rigs.splice(rigs.indexOf(r), 1);
    await r.kill();
    vi.setSystemTime(Date.now() + 2 * MINUTE);
    r = await startFakeChannel({ ...options, dataDir: r.dataDir, recover: true });
    rigs.push(r);
    await answerNext(QUESTIONS[1]!, 2 * MINUTE);
    await answerNext(QUESTIONS[2]!, 2 * MINUTE);
    const final = await until(() => {
      const c = r.cardOf(messageId);
      return c.header?.template === "green" && c;
    }, "the completed card");
    await r.drive(r.core.runner.idle());
    await r.idle();

    // The final card landed on the run's one card, out of streaming, after more than 40 minutes.
    expect(cardText(final)).toContain("全部完成");
    expect((final as { config?: { streaming_mode?: boolean } }).config?.streaming_mode).toBe(false);
    expect(r.fromBot().map((m) => m.messageId)).toEqual([messageId]);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(40 * MINUTE);
    expect(fake.callsTo("patchCard")).toEqual([]); // never fell back to IM PATCH

    const all = calls();
    // 0 × 300317: every sequence grew, across the kill too.
    expect(all.filter((c) => c.code === 300317)).toEqual([]);
    const sequences = all.map((c) => c.sequence!);
    expect(sequences.every((s, i) => i === 0 || s > sequences[i - 1]!)).toBe(true);
    expect(all.length).toBeGreaterThan(beforeKill);
    // At most one closed stream, and exactly one full update right after it, which landed.
    const closed = all.flatMap((c, i) => (c.code === 300309 || c.code === 200850 ? [i] : []));
    expect(closed.length).toBeLessThanOrEqual(1);
    for (const i of closed) expect([all[i + 1]?.op, all[i + 1]?.code]).toEqual(["update", 0]);
    expect(all.filter((c, i) => c.code !== 0 && !closed.includes(i))).toEqual([]);
    // Reopened by its timer while the agent was silent: off and on again, nothing else sent then, before
    // Feishu's 10 minutes since streaming was last opened.
    expect(state.quiet).toHaveLength(1);
    const { from, to } = state.quiet[0]!;
    const during = all.filter((c) => c.at > from && c.at < to);
    expect(during.map((c) => [c.op, c.body?.streaming_mode])).toEqual([
      ["settings", false],
      ["settings", true],
    ]);
    const lastOpen = all.filter((c) => c.at <= from && opened(c)).at(-1)!;
    expect(during[1]!.at - lastOpen.at).toBeLessThan(10 * MINUTE);
    // No period of streaming ran past 10 minutes without a reopen (the platform would have closed it).
    const opens = all.filter(opened).map((c) => c.at);
    const streamedAt = all.filter((c) => c.op === "content" && c.code === 0).map((c) => c.at);
    for (const at of streamedAt) {
      const since = opens.filter((t) => t <= at).at(-1)!;
      expect(at - since).toBeLessThan(10 * MINUTE);
    }
    // 0 updates while a form was open; each form came by a full update that left streaming.
    expect(openForms).toHaveLength(3);
    for (const form of openForms) {
      expect(form.before).toBe(form.shown);
      const shownBy = all[form.shown - 1]!;
      expect(shownBy.op).toBe("update");
      expect(JSON.stringify(shownBy.body)).toContain(form.question);
      expect(formsOn(shownBy.body as never)).not.toEqual([]);
    }
  }, 60_000);
});
