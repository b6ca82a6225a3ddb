import { afterEach, describe, expect, it } from "vitest";
import { askResultSchema, taskResultSchema } from "../src/agents-api/schemas.ts";
import { p2pChatId } from "../src/local/emulator/ids.ts";
import { type Emulator, startEmulator } from "../src/local/emulator/index.ts";
import { type AgentsRig, ALICE, QUESTION, startAgentsRig, submitValue } from "./helpers/agents.ts";
import { tempDir } from "./helpers/core.ts";
import { cardText, formsOn, WEBHOOK_KEY } from "./helpers/feishu.ts";

/** A bot restart between an agent's calls: the same card, the answer given before it, no lost task. */

const rigs: AgentsRig[] = [];
const emulators: Emulator[] = [];
afterEach(async () => {
  for (const rig of rigs.splice(0)) await rig.stop();
  for (const emulator of emulators.splice(0)) await emulator.close();
});

describe("outside agents across a bot restart", () => {
  it("keeps the task's card and the answer given before the restart", async () => {
    // Feishu (the emulator) stays up while the bot restarts on the same data dir.
    const emulator = await startEmulator({ encryptKey: WEBHOOK_KEY });
    emulators.push(emulator);
    const dataDir = tempDir();
    const first = await startAgentsRig({ dataDir, emulator });
    const token = first.token("Claude Code", [ALICE], 600_000);
    let client = await first.mcp(token);
    const started = await client.callTool({
      name: "start_task",
      arguments: { to: ALICE, title: "Long job" },
    });
    const taskId = taskResultSchema.parse(started.structuredContent).task_id;
    const asked = await client.callTool({
      name: "ask_user_questions",
      arguments: { task_id: taskId, questions: [QUESTION], wait_s: 0 },
    });
    const askId = askResultSchema.parse(asked.structuredContent).ask_id;
    const cardId = await first.until(() => first.cardsIn(p2pChatId(ALICE))[0], "the card");
    const card = await first.until(() => {
      const c = first.cardOf(cardId);
      return formsOn(c).length === 1 && c;
    }, "the form");
    await first.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: submitValue(card),
      name: "ask0_submit",
      formValue: { ask0_q0: "0" },
    });
    // A second question, still open when the bot stops.
    const open = await client.callTool({
      name: "ask_user_questions",
      arguments: { task_id: taskId, questions: [QUESTION], wait_s: 0 },
    });
    const openId = askResultSchema.parse(open.structuredContent).ask_id;
    await first.stop();

    const second = await startAgentsRig({ dataDir, emulator });
    rigs.push(second);
    client = await second.mcp(token);
    const answered = askResultSchema.parse(
      (await client.callTool({ name: "get_answers", arguments: { ask_id: askId, wait_s: 0 } }))
        .structuredContent,
    );
    expect(answered).toMatchObject({ status: "answered", answers: [{ selectedLabels: ["Postgres"] }] });
    // The open question outlives the process (durable asks): still pending, its form back on the same card,
    // and the answer given there after the restart is what get_answers returns.
    const still = askResultSchema.parse(
      (await client.callTool({ name: "get_answers", arguments: { ask_id: openId, wait_s: 0 } }))
        .structuredContent,
    );
    expect(still.status).toBe("pending");
    const again = await second.until(() => {
      const c = second.cardOf(cardId);
      return formsOn(c).length === 1 && c;
    }, "the form back on the card");
    await second.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: submitValue(again),
      name: "ask0_submit",
      formValue: { ask0_q0: "0" },
    });
    const late = askResultSchema.parse(
      (await client.callTool({ name: "get_answers", arguments: { ask_id: openId, wait_s: 5 } }))
        .structuredContent,
    );
    expect(late).toMatchObject({ status: "answered", answers: [{ selectedLabels: ["Postgres"] }] });

    await client.callTool({
      name: "report_progress",
      arguments: { task_id: taskId, step: "After the restart" },
    });
    await second.until(
      () => cardText(second.cardOf(cardId)).includes("After the restart"),
      "the step on the same card",
    );
    expect(formsOn(second.cardOf(cardId))).toEqual([]);
    expect(second.cardsIn(p2pChatId(ALICE))).toEqual([cardId]);
  });

  it("gives a finished task's card its final state after a restart when the last PATCH never landed", async () => {
    const emulator = await startEmulator({ encryptKey: WEBHOOK_KEY });
    emulators.push(emulator);
    const dataDir = tempDir();
    const first = await startAgentsRig({ dataDir, emulator });
    const token = first.token("Claude Code", [ALICE], 600_000);
    const client = await first.mcp(token);
    const started = await client.callTool({ name: "start_task", arguments: { to: ALICE, title: "Build" } });
    const taskId = taskResultSchema.parse(started.structuredContent).task_id;
    const cardId = await first.until(() => first.cardsIn(p2pChatId(ALICE))[0], "the card");
    const patchPath = `/open-apis/im/v1/messages/${cardId}`;
    // The final state is refused once (a 4xx the publisher does not retry), then the bot goes away.
    emulator.injectFault({
      match: { method: "PATCH", path: patchPath, bodyIncludes: '"template":"green"' },
      times: 1,
      response: { httpStatus: 400, code: 99992402 },
    });
    await client.callTool({ name: "finish_task", arguments: { task_id: taskId, status: "completed" } });
    await first.until(() => emulator.callsTo("PATCH", patchPath).some((c) => c.code === 99992402), "refused");
    await first.stop();
    const isCompleted = () => first.cardOf(cardId).header?.template === "green";
    expect(isCompleted()).toBe(false);
    const before = emulator.callsTo("PATCH", patchPath).length;

    const second = await startAgentsRig({ dataDir, emulator });
    await second.until(isCompleted, "the final state after the restart");
    await second.stop();
    expect(
      emulator
        .callsTo("PATCH", patchPath)
        .slice(before)
        .map((c) => c.code),
    ).toEqual([0]);

    const third = await startAgentsRig({ dataDir, emulator });
    rigs.push(third);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(emulator.callsTo("PATCH", patchPath)).toHaveLength(before + 1);
    expect(third.cardsIn(p2pChatId(ALICE))).toEqual([cardId]);
  });

  it("returns an answer given after a restart, before the agent polls again (durable asks row)", async () => {
    const emulator = await startEmulator({ encryptKey: WEBHOOK_KEY });
    emulators.push(emulator);
    const dataDir = tempDir();
    const first = await startAgentsRig({ dataDir, emulator });
    const token = first.token("Claude Code", [ALICE], 600_000);
    const client = await first.mcp(token);
    const asked = await client.callTool({
      name: "ask_user_questions",
      arguments: { to: ALICE, questions: [QUESTION], wait_s: 0 },
    });
    const askId = askResultSchema.parse(asked.structuredContent).ask_id;
    const cardId = await first.until(() => first.cardsIn(p2pChatId(ALICE))[0], "the card");
    await first.until(() => formsOn(first.cardOf(cardId)).length === 1, "the form");
    await first.stop();

    // The person answers on the restarted bot; the agent has not called since.
    const second = await startAgentsRig({ dataDir, emulator });
    rigs.push(second);
    const again = await second.until(() => {
      const c = second.cardOf(cardId);
      return formsOn(c).length === 1 && c;
    }, "the form back on the card");
    const toast = await second.click({
      messageId: cardId,
      operatorOpenId: ALICE,
      value: submitValue(again),
      name: "ask0_submit",
      formValue: { ask0_q0: "1" },
    });
    expect(JSON.stringify(toast)).toContain("已提交");
    const polled = await fetch(`${second.httpUrl}/api/asks/${askId}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(await polled.json()).toMatchObject({
      status: "answered",
      answers: [{ selectedLabels: ["SQLite"] }],
      answered_by: ALICE,
    });
  });
});
