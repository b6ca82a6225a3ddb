import path from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import WebSocket from "ws";
import { signToken } from "../../src/auth/token.ts";
import type { Card } from "../../src/cards/model.ts";
import { DEMO_QUESTIONS } from "../../src/harness/agents/demo.ts";
import type { Emulator } from "../../src/local/emulator/index.ts";
import { strings } from "../../src/strings/index.ts";
import { sampleAsk } from "../fixtures.ts";
import { type ScriptedModel, startScriptedModel } from "../helpers/openai-server.ts";
import {
  type BotProcess,
  cardOf,
  cardsReplyingTo,
  checkDatabase,
  query,
  tempDataDir,
} from "./helpers/bot-process.ts";
import { useCrashRig } from "./helpers/crash-rig.ts";
import { timeoutMs, until } from "./helpers/env.ts";
import { ALICE, AUTH_SECRET, isCompleted, requestIdsOn, submitValue } from "./helpers/stack.ts";

/**
 * Durable asks through the real entry point (issue 16): SIGKILL while a question waits, start again on the
 * same DATA_DIR, answer on the same card (or a socket) and the agent gets exactly that answer as the
 * original call's result; the turn's other calls are not repeated; nothing is applied twice.
 */

const { emulator, bot, deliver, onCleanup } = useCrashRig();

const sessionOf = (emu: Emulator) => `feishu-${emu.appId}-private-${ALICE}`;

/** Starts a task, waits for its form, SIGKILLs the bot: the card id, request id and the patches after. */
async function killMidAsk(emu: Emulator, dataDir: string, env: Record<string, string> = {}) {
  const first = await bot({ emulator: emu, dataDir, env });
  const payload = emu.userMessage({ chatType: "p2p", senderOpenId: ALICE, text: "帮我部署" });
  await deliver(first, emu, payload);
  const cardId = await until(
    () => cardsReplyingTo(emu, payload.event.message.message_id)[0],
    "the card",
    20_000,
  );
  const requestId = await until(() => requestIdsOn(cardOf(emu, cardId))[0], "a form", 20_000);
  await first.kill();
  expect(checkDatabase(dataDir)).toEqual({ integrity: "ok", foreignKeyViolations: 0 });
  const patches: string[] = [];
  emu.on("message_patched", ({ message }) => {
    if (message.messageId === cardId) patches.push(message.content);
  });
  return { cardId, requestId, patches };
}

function answerOnCard(target: BotProcess, emu: Emulator, cardId: string, requestId: string) {
  return deliver(
    target,
    emu,
    emu.cardAction({
      messageId: cardId,
      operatorOpenId: ALICE,
      name: "ask0_submit",
      value: submitValue(sessionOf(emu), requestId, ALICE),
      formValue: { ask0_q0: "1", ask0_q1: ["0"] },
    }),
  );
}

interface ToolRow {
  tool_name: string;
  content: string;
}
const toolResults = (dataDir: string) =>
  query<ToolRow>(dataDir, "SELECT tool_name, content FROM messages WHERE role = 'tool' ORDER BY id");

/** A WebSocket client of the bot, subscribed to Alice's session; collects frames. */
async function socket(target: BotProcess, sessionId: string) {
  const token = signToken(AUTH_SECRET, ALICE, Date.now() + 60_000);
  const ws = new WebSocket(`ws://127.0.0.1:${target.port}/ws?token=${encodeURIComponent(token)}`);
  onCleanup(async () => ws.close());
  const frames: { type: string; data: Record<string, unknown> }[] = [];
  ws.on("message", (raw) => frames.push(JSON.parse(String(raw))));
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  ws.send(JSON.stringify({ type: "subscribe", sessionId }));
  return { ws, frames };
}

describe("durable asks across kill -9", () => {
  it(
    "demo agent: the same form after the restart, the old card's answer is the original call's result",
    async () => {
      const emu = await emulator();
      const dataDir = tempDataDir();
      const { cardId, requestId, patches } = await killMidAsk(emu, dataDir);

      const second = await bot({ emulator: emu, dataDir });
      await until(() => patches.length > 0, "the first PATCH after the restart", 20_000);
      expect(requestIdsOn(JSON.parse(patches[0]!) as Card)).toEqual([requestId]);
      // WebSocket clients get the same ask again.
      const client = await socket(second, sessionOf(emu));
      const frame = await until(
        () => client.frames.find((f) => f.type === "ask_user_questions"),
        "the ask",
        10_000,
      );
      expect(frame.data.requestId).toBe(requestId);

      const answered = await answerOnCard(second, emu, cardId, requestId);
      expect(answered.toast).toMatchObject({ type: "success", content: strings.feishu.submitted });
      await until(() => isCompleted(cardOf(emu, cardId)), "the completed card", 20_000);
      await second.stop();

      const results = toolResults(dataDir);
      expect(results.filter((r) => r.tool_name === "scan_workspace")).toHaveLength(1);
      const asks = results.filter((r) => r.tool_name === "ask_user_questions");
      expect(asks.map((r) => JSON.parse(r.content).answers[0].selectedLabels)).toEqual([
        [DEMO_QUESTIONS.deploy.options[1]!.label],
      ]);
      const audit = query<{ request_id: string; outcome: string; answered_via: string }>(
        dataDir,
        "SELECT request_id, outcome, answered_via FROM ask_audit",
      );
      expect(audit).toEqual([{ request_id: requestId, outcome: "answered", answered_via: "feishu" }]);
      expect(query(dataDir, "SELECT * FROM pending_turns")).toEqual([]);
      expect(checkDatabase(dataDir)).toEqual({ integrity: "ok", foreignKeyViolations: 0 });
    },
    timeoutMs(60_000, 60_000),
  );

  it(
    "OpenAI agent: no repeated model request and no repeated sibling call; the answer reaches the model",
    async () => {
      const model: ScriptedModel = await startScriptedModel();
      onCleanup(() => model.close());
      const ask = sampleAsk();
      model.script(
        { toolCalls: [{ id: "c1", name: "current_time", arguments: {} }] },
        {
          text: ["先看时间,再问你:"],
          toolCalls: [
            { id: "c2", name: "current_time", arguments: { note: "sibling" } },
            { id: "c3", name: "ask_user_questions", arguments: ask },
          ],
        },
      );
      const env = { AGENT: "openai", OPENAI_BASE_URL: model.baseUrl, OPENAI_MODEL: "scripted" };
      const emu = await emulator();
      const dataDir = tempDataDir();
      const { cardId, requestId, patches } = await killMidAsk(emu, dataDir, env);
      expect(model.requests).toHaveLength(2);

      model.script({ text: ["好的,用 React。"] });
      const second = await bot({ emulator: emu, dataDir, env });
      await until(() => patches.length > 0, "the first PATCH after the restart", 20_000);
      expect(requestIdsOn(JSON.parse(patches[0]!) as Card)).toEqual([requestId]);
      const answered = await deliver(
        second,
        emu,
        emu.cardAction({
          messageId: cardId,
          operatorOpenId: ALICE,
          name: "ask0_submit",
          value: submitValue(sessionOf(emu), requestId, ALICE),
          formValue: { ask0_q0: "0", ask0_q1: ["1"] },
        }),
      );
      expect(answered.toast).toMatchObject({ type: "success", content: strings.feishu.submitted });
      await until(() => isCompleted(cardOf(emu, cardId)), "the completed card", 20_000);
      await second.stop();

      // Three requests in all: the waiting turn was not asked of the model again.
      expect(model.requests).toHaveLength(3);
      const last = model.requests[2]!.body.messages;
      expect(last.map((m) => m.role)).toEqual([
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "tool",
      ]);
      const answer = JSON.parse(last[6]?.content ?? "{}");
      expect(answer).toEqual({
        answers: [
          {
            question: ask.questions[0]!.question,
            selectedLabels: [ask.questions[0]!.options[0]!.label],
            customInput: null,
          },
          {
            question: ask.questions[1]!.question,
            selectedLabels: [ask.questions[1]!.options[1]!.label],
            customInput: null,
          },
        ],
      });
      // One step per call: the sibling that had returned was not run again.
      const [run] = query<{ steps_json: string }>(dataDir, "SELECT steps_json FROM runs");
      const steps = JSON.parse(run!.steps_json) as { tool: string }[];
      expect(steps.map((s) => s.tool)).toEqual(["current_time", "current_time", "ask_user_questions"]);
    },
    timeoutMs(60_000, 60_000),
  );

  it(
    "a crash after complete's row, before the run resumed: the saved answer is the result, applied once",
    async () => {
      const emu = await emulator();
      const dataDir = tempDataDir();
      const { cardId, requestId } = await killMidAsk(emu, dataDir);
      // What the dying process's compare-and-set left behind: the row answered, the run never told.
      const answers = [
        {
          question: DEMO_QUESTIONS.deploy.question,
          selectedLabels: [DEMO_QUESTIONS.deploy.options[2]!.label],
          customInput: null,
        },
        {
          question: DEMO_QUESTIONS.features.question,
          selectedLabels: [DEMO_QUESTIONS.features.options[0]!.label],
          customInput: null,
        },
      ];
      writeAnswered(dataDir, requestId, answers);

      const second = await bot({ emulator: emu, dataDir });
      await until(() => isCompleted(cardOf(emu, cardId)), "the completed card", 20_000);
      // The old form finds its question answered: told, not applied again.
      const stale = await answerOnCard(second, emu, cardId, requestId);
      expect(stale.toast?.type).toBe("warning");
      expect(stale.toast?.content).toContain(strings.feishu.askExpired);
      await second.stop();
      const asks = toolResults(dataDir).filter((r) => r.tool_name === "ask_user_questions");
      expect(asks.map((r) => JSON.parse(r.content))).toEqual([{ answers }]);
    },
    timeoutMs(60_000, 60_000),
  );

  it(
    "a crash loop while the question waits (killed at once, mid-resume, after the form is back): one run, one ask, one answer",
    async () => {
      const emu = await emulator();
      const dataDir = tempDataDir();
      const { cardId, requestId, patches } = await killMidAsk(emu, dataDir);
      // Each restart dies at a different point: right after start, while the resume writes, once the form is back.
      for (const delayMs of [0, 30, -1]) {
        const again = await bot({ emulator: emu, dataDir });
        if (delayMs < 0) await until(() => patches.length > 0, "the form back on the card", 20_000);
        else await new Promise((resolve) => setTimeout(resolve, delayMs));
        await again.kill();
        expect(checkDatabase(dataDir)).toEqual({ integrity: "ok", foreignKeyViolations: 0 });
      }
      const last = await bot({ emulator: emu, dataDir });
      await until(
        () => patches.length > 0 && requestIdsOn(JSON.parse(patches.at(-1)!) as Card)[0],
        "the form",
        20_000,
      );
      const answered = await answerOnCard(last, emu, cardId, requestId);
      expect(answered.toast).toMatchObject({ type: "success", content: strings.feishu.submitted });
      await until(() => isCompleted(cardOf(emu, cardId)), "the completed card", 20_000);
      await last.stop();
      expect(query(dataDir, "SELECT status FROM runs")).toEqual([{ status: "completed" }]);
      expect(query(dataDir, "SELECT request_id, status FROM asks")).toEqual([
        { request_id: requestId, status: "answered" },
      ]);
      const results = toolResults(dataDir);
      expect(results.map((r) => r.tool_name)).toEqual([
        "scan_workspace",
        "ask_user_questions",
        "apply_choice",
        "apply_choice",
      ]);
      expect(query(dataDir, "SELECT * FROM pending_turns")).toEqual([]);
    },
    timeoutMs(90_000, 90_000),
  );

  it(
    "two surfaces in the same millisecond after a restart: one winner, the other told",
    async () => {
      const emu = await emulator();
      const dataDir = tempDataDir();
      const { cardId, requestId, patches } = await killMidAsk(emu, dataDir);
      const second = await bot({ emulator: emu, dataDir });
      await until(() => patches.length > 0, "the first PATCH after the restart", 20_000);
      const client = await socket(second, sessionOf(emu));
      await until(() => client.frames.find((f) => f.type === "ask_user_questions"), "the ask", 10_000);
      const wsAnswers = [DEMO_QUESTIONS.deploy, DEMO_QUESTIONS.features].map((q) => ({
        question: q.question,
        selectedLabels: [q.options[0]!.label],
        customInput: null,
      }));
      const [card] = await Promise.all([
        answerOnCard(second, emu, cardId, requestId),
        Promise.resolve(
          client.ws.send(
            JSON.stringify({
              type: "ask_user_questions_result",
              sessionId: sessionOf(emu),
              data: { requestId, answers: wsAnswers },
            }),
          ),
        ),
      ]);
      const wsWon = await until(
        () => {
          if (client.frames.some((f) => f.type === "ask_user_questions_accepted")) return "won";
          if (client.frames.some((f) => f.type === "error" && f.data.code === "stale_request")) return "lost";
          return undefined;
        },
        "the socket's verdict",
        10_000,
      );
      const cardWon = card.toast?.type === "success";
      expect([cardWon, wsWon === "won"].filter(Boolean)).toHaveLength(1);
      await until(() => isCompleted(cardOf(emu, cardId)), "the completed card", 20_000);
      await second.stop();
      const audit = query<{ outcome: string; answered_via: string }>(
        dataDir,
        "SELECT outcome, answered_via FROM ask_audit",
      );
      expect(audit).toEqual([{ outcome: "answered", answered_via: cardWon ? "feishu" : "websocket" }]);
      expect(toolResults(dataDir).filter((r) => r.tool_name === "ask_user_questions")).toHaveLength(1);
    },
    timeoutMs(60_000, 60_000),
  );
});

function writeAnswered(dataDir: string, requestId: string, answers: unknown[]): void {
  // A second writer on the file, as the process that died was: the same compare-and-set it would run.
  const db = new Database(path.join(dataDir, "bot.sqlite"), { fileMustExist: true });
  const result = db
    .prepare(
      "UPDATE asks SET status = 'answered', answer = ?, answered_via = 'feishu', answered_by = ?, settled_at = ? WHERE request_id = ? AND status = 'pending'",
    )
    .run(JSON.stringify(answers), ALICE, Date.now(), requestId);
  db.close();
  expect(result.changes).toBe(1);
}
