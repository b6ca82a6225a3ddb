import { describe, expect, it } from "vitest";
import { ASK_TOOL_NAME, type AskAnswer } from "../../src/asks/schema.ts";
import type { Card } from "../../src/cards/model.ts";
import type { AgentContext } from "../../src/harness/agents/agent.ts";
import { DEMO_QUESTIONS } from "../../src/harness/agents/demo.ts";
import { startEmulator } from "../../src/local/emulator/index.ts";
import { auditForSession } from "../../src/store/audit.ts";
import { sqliteSql } from "../../src/store/sql.ts";
import { strings } from "../../src/strings/index.ts";
import type { TestClient } from "../helpers/harness.ts";
import { testRandom } from "../helpers/random.ts";
import { loopingAskAgent } from "./helpers/agents.ts";
import { percentile, record, size, timeoutMs, until } from "./helpers/env.ts";
import { startSlowPath } from "./helpers/slow-path.ts";
import {
  ALICE,
  type CallbackBody,
  ENCRYPT_KEY,
  formsOn,
  isCompleted,
  requestIdsOn,
  stacksForEachTest,
  submitValue,
} from "./helpers/stack.ts";

/**
 * Races: the same question answered from two places at once (the card and a desktop client, two browser
 * tabs, two taps on the card), a submit while a PATCH is in flight, a cancel during a submit. Each round:
 * exactly one answer completes the question, the agent gets that answer, every loser is told.
 */

const { stack, closers } = stacksForEachTest({ askPing: false });
/** The callback races run over both transports, at the wire. */
const TRANSPORTS = ["webhook", "ws"] as const;

const QUESTIONS = [DEMO_QUESTIONS.deploy, DEMO_QUESTIONS.features];
/** Two different answers, so the tool result shows which surface won. */
const FORM_A = { ask0_q0: "0", ask0_q1: ["0"] };
const FORM_B = { ask0_q0: "1", ask0_q1: ["1"] };
const answersFor = (form: typeof FORM_A): AskAnswer[] =>
  QUESTIONS.map((q, j) => ({
    question: q.question,
    selectedLabels: [q.options[Number(j === 0 ? form.ask0_q0 : form.ask0_q1[0])]!.label],
    customInput: null,
  }));

type Contender = "card" | "ws";

interface RoundResult {
  winner: "feishu" | "websocket";
  ms: number;
}

describe("two surfaces answering the same question at once", () => {
  it(
    `settles ${size(1000, 1000)} card-vs-WebSocket races, ${size(100, 1000)} two-tab races and ${size(50, 500)} double taps with exactly one winner each; every loser is told`,
    async () => {
      // Orders and jitter from a seeded PRNG: a failing run prints TEST_SEED to replay it with.
      const rng = testRandom();
      const agent = loopingAskAgent({ questions: QUESTIONS });
      const s = await stack({ agent });
      const tab1 = await s.connect(ALICE);
      const tab2 = await s.connect(ALICE);
      const { messageId } = await s.say({ chatType: "p2p", senderOpenId: ALICE, text: "go" });
      const cardId = await s.progressCard(messageId);
      const sessionId = s.privateSessionId(ALICE);
      let previous: string | undefined;

      /** One round: the contenders answer at the same moment (in a random order), then every outcome is checked. */
      const round = async (index: number, contenders: [Contender, Contender]): Promise<RoundResult> => {
        const ask = await until(
          () => s.core.registry.getPendingForSession(sessionId).find((a) => a.requestId !== previous),
          `question ${index}`,
          5000,
          1,
        );
        previous = ask.requestId;
        const resultsBefore = agent.results.length;
        const forms = [FORM_A, FORM_B] as const;
        const tabs: TestClient[] = [tab1, tab2];
        const started = performance.now();
        const order = rng.random() < 0.5 ? [0, 1] : [1, 0];
        let wsUsed = 0;
        const fire = async (who: number): Promise<{ who: number; won: boolean }> => {
          const form = forms[who]!;
          if (contenders[who] === "card") {
            const click = s.emulator.cardAction({
              messageId: cardId,
              operatorOpenId: ALICE,
              name: "ask0_submit",
              value: submitValue(sessionId, ask.requestId, ALICE),
              formValue: form,
            });
            return s.deliver(click).then((result) => {
              const body = result.body as CallbackBody;
              expect(result.status).toBe(200);
              const won = body.toast?.content === strings.feishu.submitted;
              // The loser is told the question is gone; either way the form leaves its card.
              if (!won)
                expect(body.toast).toMatchObject({ type: "warning", content: strings.feishu.askExpired });
              expect(requestIdsOn(body.card!.data)).not.toContain(ask.requestId);
              return { who, won };
            });
          }
          const tab = tabs[wsUsed++]!;
          const before = tab.received.length;
          tab.send({
            type: "ask_user_questions_result",
            sessionId,
            data: { requestId: ask.requestId, answers: answersFor(form) },
          });
          // The hub answers frames in order: once the pong is back, the answer's verdict has arrived.
          return tab.sync().then(() => {
            const verdict = tab.received
              .slice(before)
              .find(
                (f) =>
                  (f.type === "ask_user_questions_accepted" || f.type === "error") &&
                  f.data.requestId === ask.requestId,
              );
            if (verdict?.type === "error") expect(verdict.data.code).toBe("stale_request");
            expect(verdict, `round ${index}: no verdict for the answer`).toBeDefined();
            return { who, won: verdict?.type === "ask_user_questions_accepted" };
          });
        };
        // The second answer leaves 0–2 ms after the first: close enough that either may win.
        const first = fire(order[0]!);
        const jitterMs = rng.int(3);
        if (jitterMs > 0) await new Promise((resolve) => setTimeout(resolve, jitterMs));
        const outcomes = [first, fire(order[1]!)];
        const settled = await Promise.all(outcomes);
        const ms = performance.now() - started;
        const winners = settled.filter((o) => o.won);
        expect(winners, `round ${index}: ${JSON.stringify(settled)}`).toHaveLength(1);
        const winner = winners[0]!;
        // Every connection hears that the question is gone, with who answered it.
        const via = contenders[winner.who] === "card" ? "feishu" : "websocket";
        for (const tab of tabs) {
          const cancelled = await tab.next(
            "ask_user_questions_cancelled",
            (f) => f.data.requestId === ask.requestId,
          );
          expect(cancelled.data.reason).toBe(`answered via ${via}`);
        }
        // The agent got exactly the winner's answer, once.
        await until(() => agent.results.length > resultsBefore, "the tool result", 5000, 1);
        expect(agent.results.length).toBe(resultsBefore + 1);
        expect(JSON.parse(agent.results.at(-1)!)).toEqual({ answers: answersFor(forms[winner.who]!) });
        return { winner: via, ms };
      };

      const cardVsWs = size(1000, 1000);
      const twoTabs = size(100, 1000);
      const twoTaps = size(50, 500);
      const tally = { cardVsWs: { feishu: 0, websocket: 0 }, twoTabs: 0, twoTaps: 0 };
      const latencies: number[] = [];
      const started = performance.now();
      for (let i = 0; i < cardVsWs; i += 1) {
        const result = await round(i, ["card", "ws"]);
        tally.cardVsWs[result.winner] += 1;
        latencies.push(result.ms);
      }
      for (let i = 0; i < twoTabs; i += 1) {
        await round(cardVsWs + i, ["ws", "ws"]);
        tally.twoTabs += 1;
      }
      for (let i = 0; i < twoTaps; i += 1) {
        await round(cardVsWs + twoTabs + i, ["card", "card"]);
        tally.twoTaps += 1;
      }
      const durationMs = Math.round(performance.now() - started);

      // Both surfaces won some races (the race is real), and the audit agrees with every outcome.
      expect(tally.cardVsWs.feishu).toBeGreaterThan(0);
      expect(tally.cardVsWs.websocket).toBeGreaterThan(0);
      const audit = (await auditForSession(sqliteSql(s.db), sessionId)).filter((row) => row.outcome !== null);
      const answered = audit.filter((row) => row.outcome === "answered");
      expect(answered).toHaveLength(cardVsWs + twoTabs + twoTaps);
      expect(new Set(answered.map((row) => row.requestId)).size).toBe(answered.length);
      expect(answered.every((row) => row.answeredBy === ALICE)).toBe(true);
      expect(
        tab1.pending("error").filter((f) => f.type === "error" && f.data.code !== "stale_request"),
      ).toEqual([]);
      expect(s.errors()).toEqual([]);
      record("races: card vs websocket", {
        rounds: { cardVsWs, twoTabs, twoTaps },
        winners: tally.cardVsWs,
        durationMs,
        roundMs: { p50: Math.round(percentile(latencies, 50)), p99: Math.round(percentile(latencies, 99)) },
      });
      // The card still shows the question that is waiting now, and only that one.
      await s.channel.idle();
      const waiting = s.core.registry.getPendingForSession(sessionId).map((a) => a.requestId);
      await until(
        () => JSON.stringify(requestIdsOn(s.cardOf(cardId))) === JSON.stringify(waiting),
        "the card to show the open question",
      );
    },
    timeoutMs(120_000, 600_000),
  );
});

describe.each(TRANSPORTS)("over the %s transport", (transport) => {
  describe("a submit while a PATCH is in flight", () => {
    it("answers the callback at once, sends no PATCH until the answer is out, and lands the final card", async () => {
      const emulator = await startEmulator({ encryptKey: ENCRYPT_KEY });
      const path = await startSlowPath(emulator.url);
      closers.push(
        () => path.close(),
        () => emulator.close(),
      );
      const s = await stack({ emulator, apiUrl: path.url, stepMs: 20, transport });
      const desktop = await s.connect(ALICE);
      const { messageId } = await s.say({ chatType: "p2p", senderOpenId: ALICE, text: "/parallel" });
      const cardId = await s.progressCard(messageId);
      const sessionId = s.privateSessionId(ALICE);
      await until(() => requestIdsOn(s.cardOf(cardId)).length === 2, "two asks on the card");
      await s.channel.idle();
      const [first, second] = s.core.registry.getPendingForSession(sessionId);
      // Answering the second question on the desktop removes its form: that PATCH is held for 1.5 s on the way.
      const patchPath = new RegExp(`^/open-apis/im/v1/messages/${cardId}$`);
      path.hold({ method: "PATCH", path: patchPath }, 1500);
      const arrivedBefore = path.arrived.length;
      desktop.send({
        type: "ask_user_questions_result",
        sessionId,
        data: {
          requestId: second!.requestId,
          answers: second!.questions.map((q) => ({
            question: q.question,
            selectedLabels: [q.options[0]!.label],
            customInput: null,
          })),
        },
      });
      await desktop.next("ask_user_questions_accepted");
      await until(
        () => path.arrived.slice(arrivedBefore).some((r) => r.method === "PATCH"),
        "the PATCH to be in flight",
      );
      // Now the first question is submitted on the card, while that PATCH is still out.
      const callbackStarted = Date.now();
      const answer = await s.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        name: "ask0_submit",
        value: submitValue(sessionId, first!.requestId, ALICE),
        formValue: FORM_B,
      });
      const callbackEnded = Date.now();
      expect(answer.toast?.content).toBe(strings.feishu.submitted);
      expect(answer.durationMs).toBeLessThan(1000);
      expect(formsOn(answer.card!.data)).toEqual([]);
      // Feishu shows the callback's card; no PATCH of ours may reach it before the answer is out (§2.3: it would revert).
      s.emulator.applyCallbackCard(cardId, answer.card!.data, ALICE);
      const startedDuring = path.arrived.filter(
        (r) => r.method === "PATCH" && r.at > callbackStarted && r.at < callbackEnded,
      );
      expect(startedDuring).toEqual([]);
      // The held PATCH (with the first form still on it) lands late; the reconcile after it lands the final state.
      const final = await until(() => {
        const card = s.cardOf(cardId);
        return isCompleted(card) && card;
      }, "the completed card");
      expect(formsOn(final)).toEqual([]);
      expect(path.delivered).toHaveLength(1);
      const run = (await s.core.store.latestRun(sessionId))!;
      expect(run.text).toContain(DEMO_QUESTIONS.deploy.options[1]!.label);
    });
  });

  describe("a callback that ends the task", () => {
    // Found by this suite (a change held back by a callback counted as landed, so channel.idle() returned
    // before the final PATCH and a graceful shutdown left the card at 执行中); fixed in the publisher.
    it("keeps the card until its final state has landed: channel.idle() waits for it", async () => {
      const agent = {
        name: "asks-once",
        async run(ctx: AgentContext) {
          const result = await ctx.callTool(ASK_TOOL_NAME, { questions: QUESTIONS });
          return { text: `done: ${result.length}` };
        },
      };
      const s = await stack({ agent, transport });
      const { messageId } = await s.say({ chatType: "p2p", senderOpenId: ALICE, text: "问一次就结束" });
      const cardId = await s.progressCard(messageId);
      const sessionId = s.privateSessionId(ALICE);
      await until(() => formsOn(s.cardOf(cardId)).length > 0, "the form");
      await s.channel.idle();
      const ask = s.core.registry.getPendingForSession(sessionId)[0]!;
      const answer = await s.click({
        messageId: cardId,
        operatorOpenId: ALICE,
        name: "ask0_submit",
        value: submitValue(sessionId, ask.requestId, ALICE),
        formValue: FORM_A,
      });
      expect(answer.toast?.content).toBe(strings.feishu.submitted);
      s.emulator.applyCallbackCard(cardId, answer.card!.data, ALICE); // what Feishu shows on the answer
      await s.core.runner.idle();
      expect((await s.core.store.latestRun(sessionId))?.status).toBe("completed");
      await s.channel.idle(); // all a shutdown waits for
      expect(isCompleted(s.cardOf(cardId))).toBe(true);
    });
  });
});

describe("a cancel during a submit", () => {
  it(
    `settles ${size(10, 300)} races of a card submit and a cancel: one outcome each, never an answer lost or half-applied`,
    async () => {
      const rng = testRandom();
      const s = await stack({ stepMs: 15 });
      const desktop = await s.connect(ALICE);
      const sessionId = s.privateSessionId(ALICE);
      const rounds = size(10, 300);
      const tally = { answeredThenCancelled: 0, cancelledFirst: 0, answeredAndCompleted: 0 };
      const started = performance.now();
      for (let i = 0; i < rounds; i += 1) {
        const { messageId } = await s.say({ chatType: "p2p", senderOpenId: ALICE, text: `帮我部署 ${i}` });
        const cardId = await s.progressCard(messageId);
        const ask = await until(() => s.core.registry.getPendingForSession(sessionId)[0], `question ${i}`);
        const runId = ask.runId;
        // The cancel comes from the card or the desktop, before or after the submit, 0–2 ms apart.
        const viaCard = i % 2 === 0;
        const submitFirst = i % 4 < 2;
        const fireSubmit = () =>
          s.click({
            messageId: cardId,
            operatorOpenId: ALICE,
            name: "ask0_submit",
            value: submitValue(sessionId, ask.requestId, ALICE),
            formValue: FORM_A,
          });
        const fireCancel = () =>
          viaCard
            ? s
                .click({
                  messageId: cardId,
                  operatorOpenId: ALICE,
                  value: { kind: "progress", act: "cancel", sessionId, runId, sender: ALICE },
                })
                .then((a) => a.toast?.content)
            : wsCancel(desktop, sessionId);
        const jitter = () => new Promise((resolve) => setTimeout(resolve, rng.int(3)));
        let submit: ReturnType<typeof fireSubmit>;
        let cancel: ReturnType<typeof fireCancel>;
        if (submitFirst) {
          submit = fireSubmit();
          await jitter();
          cancel = fireCancel();
        } else {
          cancel = fireCancel();
          await jitter();
          submit = fireSubmit();
        }
        const [submitted, cancelled] = await Promise.all([submit, cancel]);
        await s.core.runner.idle();
        const run = (await s.core.store.getRun(runId))!;
        const [row] = (await auditForSession(sqliteSql(s.db), sessionId)).filter(
          (r) => r.requestId === ask.requestId,
        );
        const won = submitted.toast?.content === strings.feishu.submitted;
        const context = `round ${i}: submit ${JSON.stringify(submitted.toast)}, cancel ${cancelled}, run ${run.status}, audit ${JSON.stringify(row)}`;
        // The toast tells the truth: "submitted" exactly when the answer completed the question.
        expect(row?.outcome, context).toBe(won ? "answered" : "cancelled");
        if (!won)
          expect(submitted.toast, context).toMatchObject({
            type: "warning",
            content: strings.feishu.askExpired,
          });
        expect(["cancelled", "completed"], context).toContain(run.status);
        if (run.status === "completed") expect(won, context).toBe(true);
        if (won && run.status === "cancelled") tally.answeredThenCancelled += 1;
        else if (won) tally.answeredAndCompleted += 1;
        else tally.cancelledFirst += 1;
        // Nothing left waiting; the card ends without a form, in the run's final state.
        expect(s.core.registry.size, context).toBe(0);
        const finalWord = run.status === "cancelled" ? "已取消" : "已完成";
        const card: Card = await until(() => {
          const shown = s.cardOf(cardId);
          return JSON.stringify(shown.header).includes(finalWord) && shown;
        }, `${context}: the final card`);
        expect(formsOn(card), context).toEqual([]);
      }
      expect(tally.answeredThenCancelled + tally.cancelledFirst + tally.answeredAndCompleted).toBe(rounds);
      expect(s.errors()).toEqual([]);
      record("races: cancel during submit", {
        rounds,
        ...tally,
        durationMs: Math.round(performance.now() - started),
      });
    },
    timeoutMs(60_000, 600_000),
  );
});

/** A cancel from the desktop client: "cancelled", or the hub's error code when nothing was running any more. */
async function wsCancel(desktop: TestClient, sessionId: string): Promise<string> {
  const before = desktop.received.length;
  desktop.send({ type: "cancel", sessionId });
  await desktop.sync();
  const answer = desktop.received.slice(before).find((f) => f.type === "cancelled" || f.type === "error");
  return answer?.type === "error" ? answer.data.code : (answer?.type ?? "no answer");
}
