import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import { askResultSchema, taskResultSchema } from "../src/agents-api/schemas.ts";
import { ASK_TOOL_NAME } from "../src/asks/schema.ts";
import type { Card } from "../src/cards/model.ts";
import type { AgentContext } from "../src/harness/agents/agent.ts";
import { p2pChatId } from "../src/local/emulator/ids.ts";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";
import { ALICE, BOB, QUESTION, startAgentsRig, submitValue } from "./helpers/agents.ts";
import { gatedAgent, tempDir } from "./helpers/core.ts";
import { cardText, type FeishuRig, formsOn, startFeishuRig, WEBHOOK_KEY } from "./helpers/feishu.ts";

/**
 * One card lifecycle, two owners of the run (issue 26): the bot's own run (SessionRunner) and an outside
 * agent's task (AgentTasks) both reach Feishu through the run feed, so the same scenario runs against each
 * with the same assertions on what the card shows: start, a step, a question, its answer (the sender's only),
 * the end, and a restart before the final PATCH landed. The emulator over HTTP, as Feishu would see it.
 */

const TITLE = "Migrate the billing service";
const STEP = "Run the migrations";
const RESULT = "Billing now runs on Postgres.";

/** What differs between the two kinds of run: how the bot comes up, and how the run is driven. */
interface Subject {
  /** Starts the bot on a data dir kept across restarts, against an emulator that outlives it. */
  boot(dataDir: string, emulator: Emulator): Promise<FeishuRig>;
  /** Starts the run for Alice; resolves with its card's message id. */
  start(rig: FeishuRig): Promise<string>;
  step(rig: FeishuRig): Promise<void>;
  /** Asks QUESTION on the run's card; `answer()` resolves with what the asker got back. */
  ask(rig: FeishuRig): Promise<{ answer(): Promise<string[]> }>;
  finish(rig: FeishuRig): Promise<void>;
}

function botRun(): Subject {
  const gated = gatedAgent();
  let ctx: AgentContext | undefined;
  const context = () => {
    if (!ctx) throw new Error("the run has not started");
    return ctx;
  };
  return {
    boot: (dataDir, emulator) =>
      startFeishuRig({ dataDir, emulator, agent: gated.agent, recover: true, cardPatchIntervalMs: 20 }),
    async start(rig) {
      const messageId = await rig.send({ chatType: "p2p", senderOpenId: ALICE, text: TITLE });
      ctx = await gated.started(1);
      return rig.progressCard(messageId);
    },
    async step() {
      context().reportStep("migrate", { tool: "migrate", title: STEP, status: "done" });
    },
    async ask() {
      const result = context().callTool(ASK_TOOL_NAME, { questions: [QUESTION] });
      return {
        async answer() {
          const { answers } = JSON.parse(await result) as { answers: { selectedLabels: string[] }[] };
          return answers.flatMap((answer) => answer.selectedLabels);
        },
      };
    },
    async finish() {
      gated.gates[0]?.resolve(RESULT);
    },
  };
}

function agentTask(): Subject {
  let token = "";
  let client: Client | undefined;
  let taskId = "";
  const call = async (name: string, args: Record<string, unknown>) => {
    if (!client) throw new Error("no MCP client");
    return (await client.callTool({ name, arguments: args })).structuredContent;
  };
  return {
    async boot(dataDir, emulator) {
      const rig = await startAgentsRig({ dataDir, emulator });
      token ||= rig.token("Claude Code", [ALICE], 600_000);
      client = await rig.mcp(token);
      return rig;
    },
    async start(rig) {
      taskId = taskResultSchema.parse(await call("start_task", { to: ALICE, title: TITLE })).task_id;
      return rig.until(() => cardsFor(rig)[0], "the task's card");
    },
    async step() {
      await call("report_progress", { task_id: taskId, step: STEP, status: "done" });
    },
    async ask() {
      const asked = await call(ASK_TOOL_NAME, { task_id: taskId, questions: [QUESTION], wait_s: 0 });
      const askId = askResultSchema.parse(asked).ask_id;
      return {
        async answer() {
          const got = askResultSchema.parse(await call("get_answers", { ask_id: askId, wait_s: 5 }));
          expect(got.status).toBe("answered");
          return (got.answers ?? []).flatMap((answer) => answer.selectedLabels);
        },
      };
    },
    async finish() {
      await call("finish_task", { task_id: taskId, status: "completed", text: RESULT });
    },
  };
}

/** The bot's cards in Alice's chat with it, oldest first (a run's card is a reply there, a task's a message). */
function cardsFor(rig: FeishuRig): string[] {
  return rig.emulator.messages
    .listMessages()
    .filter((m) => m.chatId === p2pChatId(ALICE) && m.msgType === "interactive" && m.senderType === "app")
    .map((m) => m.messageId);
}

const isCompleted = (card: Card) => card.header?.template === "green";

const rigs: FeishuRig[] = [];
const emulators: Emulator[] = [];
afterEach(async () => {
  for (const rig of rigs.splice(0)) await rig.stop();
  for (const emulator of emulators.splice(0)) await emulator.close();
});

describe.each([
  ["a bot run", botRun],
  ["an outside agent's task", agentTask],
])("the card of %s", (_kind, subject) => {
  it("starts, shows a step, asks, takes the sender's answer only, ends, and lands its final state after a restart", async () => {
    const s = subject();
    const emulator = await startEmulator({ encryptKey: WEBHOOK_KEY });
    emulators.push(emulator);
    const dataDir = tempDir();
    const first = await s.boot(dataDir, emulator);
    rigs.push(first);

    // Start: one card for the run in Alice's chat, titled by the run, under way.
    const cardId = await s.start(first);
    await first.until(() => cardText(first.cardOf(cardId)).includes(TITLE), "the title on the card");
    expect(isCompleted(first.cardOf(cardId))).toBe(false);
    expect(formsOn(first.cardOf(cardId))).toEqual([]);

    // A step.
    await s.step(first);
    await first.until(() => cardText(first.cardOf(cardId)).includes(STEP), "the step on the card");

    // A question: its form on the same card.
    const asked = await s.ask(first);
    const card = await first.until(() => {
      const c = first.cardOf(cardId);
      return formsOn(c).length === 1 && c;
    }, "the form on the card");
    expect(cardText(card)).toContain(QUESTION.question);
    const click = (operatorOpenId: string) =>
      first.click({
        messageId: cardId,
        operatorOpenId,
        value: submitValue(first.cardOf(cardId)),
        name: "ask0_submit",
        formValue: { ask0_q0: "0" },
      });

    // Only the sender answers: Bob's submit is refused and the form stays; Alice's settles it.
    expect((await click(BOB)).toast?.type).toBe("error");
    expect(formsOn(first.cardOf(cardId))).toHaveLength(1);
    expect((await click(ALICE)).toast?.type).toBe("success");
    expect(await asked.answer()).toEqual(["Postgres"]);
    await first.until(() => formsOn(first.cardOf(cardId)).length === 0, "the form to leave the card");

    // The end, whose PATCH Feishu refuses once (a 4xx the publisher does not retry), then the bot stops.
    const patchPath = `/open-apis/im/v1/messages/${cardId}`;
    emulator.injectFault({
      match: { method: "PATCH", path: patchPath, bodyIncludes: '"template":"green"' },
      times: 1,
      response: { httpStatus: 400, code: 99992402 },
    });
    await s.finish(first);
    await first.until(
      () => emulator.callsTo("PATCH", patchPath).some((c) => c.code === 99992402),
      "the final PATCH refused",
    );
    rigs.splice(rigs.indexOf(first), 1);
    await first.stop();
    expect(isCompleted(first.cardOf(cardId))).toBe(false);
    const before = emulator.callsTo("PATCH", patchPath).length;

    // After the restart: the final state on the same card by one PATCH, and no second card.
    const second = await s.boot(dataDir, emulator);
    rigs.push(second);
    await second.until(() => isCompleted(second.cardOf(cardId)), "the final state after the restart");
    expect(cardText(second.cardOf(cardId))).toContain(RESULT);
    expect(cardText(second.cardOf(cardId))).toContain(STEP);
    expect(formsOn(second.cardOf(cardId))).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(
      emulator
        .callsTo("PATCH", patchPath)
        .slice(before)
        .map((c) => c.code),
    ).toEqual([0]);
    expect(cardsFor(second)).toEqual([cardId]);
  });
});
