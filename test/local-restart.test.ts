import type { ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { startMain } from "./helpers/main-process.ts";
import { until as waitUntil } from "./helpers/wait.ts";

/**
 * `npm start` in local mode, killed mid-ask and started again on the same DATA_DIR, behaves as a bot restart
 * on Feishu: the console shows the same chat, the resumed run's card first shows the same question again
 * (asks are durable, issue 16: same request id), the form from before the restart answers it and the run
 * completes, and the restart logs no ERROR and meets no 230001 (the emulator forgot nothing).
 */

const ALICE = "ou_local_alice";
const CHAT = `oc_p2p_${ALICE}`;
const WAIT_MS = 20_000;

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

interface Bot {
  child: ChildProcess;
  url: string;
  output(): string;
}

/** On PORT=0, every start: nothing here needs the second process on the first one's port. */
async function startLocal(dataDir: string): Promise<Bot> {
  const bot = await startMain({
    env: { DATA_DIR: dataDir, LOG_LEVEL: "info", DEMO_STEP_MS: "50", CARD_PATCH_INTERVAL_MS: "200" },
  });
  children.push(bot.child);
  return { child: bot.child, url: `http://127.0.0.1:${bot.port}`, output: bot.output };
}

async function kill(bot: Bot): Promise<void> {
  const exited = new Promise((resolve) => bot.child.once("exit", resolve));
  bot.child.kill("SIGKILL");
  await exited;
}

const until = <T>(probe: () => Promise<T | undefined | false>, what: string): Promise<T> =>
  waitUntil(probe, what, WAIT_MS, 50);

const consoleMessage = z.object({
  messageId: z.string(),
  sender: z.object({ type: z.enum(["app", "user"]) }),
  card: z.unknown().optional(),
});
const messageList = z.object({ messages: z.array(consoleMessage) });
const history = z.object({ revisions: z.array(z.object({ at: z.number(), card: z.unknown() })) });
const calls = z.object({ entries: z.array(z.object({ kind: z.string(), code: z.number().optional() })) });
const actionOutcome = z.object({ toast: z.object({ content: z.string() }).nullable() });
const askValue = z.object({ kind: z.literal("feishu_ask"), requestId: z.string() }).passthrough();

async function getJson<T>(url: string, schema: z.ZodType<T>): Promise<T> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url}: ${response.status}`);
  return schema.parse(await response.json());
}

async function messages(bot: Bot) {
  return (await getJson(`${bot.url}/console/api/messages?chatId=${CHAT}`, messageList)).messages;
}

/** The callback value of the first form's submit button on a card, if it has a form. */
function submitValue(card: unknown): z.infer<typeof askValue> | undefined {
  if (Array.isArray(card)) return card.map(submitValue).find((value) => value !== undefined);
  if (typeof card !== "object" || card === null) return undefined;
  const asValue = askValue.safeParse(card);
  if (asValue.success) return asValue.data;
  return Object.values(card)
    .map(submitValue)
    .find((value) => value !== undefined);
}

async function submit(
  bot: Bot,
  cardId: string,
  value: z.infer<typeof askValue>,
): Promise<string | undefined> {
  const response = await fetch(`${bot.url}/console/api/actions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      messageId: cardId,
      userId: ALICE,
      value,
      name: "ask0_submit",
      formValue: { ask0_q0: "0", ask0_q1: ["1"] },
    }),
  });
  return actionOutcome.parse(await response.json()).toast?.content;
}

describe("local mode restarted on the same DATA_DIR", () => {
  it("keeps the chat, resumes the card at the same question, answers it on the old form, and logs no ERROR", async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-local-restart-"));
    dirs.push(dataDir);
    const first = await startLocal(dataDir);
    const sent = await fetch(`${first.url}/console/api/messages`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ chatId: CHAT, userId: ALICE, text: "帮我部署" }),
    });
    expect(sent.status).toBeLessThan(300);
    const { cardId, value: oldForm } = await until(async () => {
      const card = (await messages(first)).find((m) => m.sender.type === "app" && m.card !== undefined);
      const value = card && submitValue(card.card);
      return card && value && { cardId: card.messageId, value };
    }, "the card with its form");
    const before = (await messages(first)).map((m) => m.messageId);
    await kill(first);

    const restartedAt = Date.now();
    const second = await startLocal(dataDir);
    // Everything from before is still there, in order (the resumed question may add a reminder after it).
    expect((await messages(second)).map((m) => m.messageId).slice(0, before.length)).toEqual(before);
    const resumed = await until(async () => {
      const { revisions } = await getJson(`${second.url}/console/api/messages/${cardId}/history`, history);
      return revisions.find((revision) => revision.at >= restartedAt);
    }, "the resumed card's first update");
    // The card's first update after the restart shows the same question, waiting on the same request.
    expect(submitValue(resumed.card)?.requestId).toBe(oldForm.requestId);

    // The form from before the restart answers the original call, and the run goes on to the end.
    expect(await submit(second, cardId, oldForm)).toBe("已提交");
    await until(async () => {
      const card = (await messages(second)).find((m) => m.messageId === cardId);
      return JSON.stringify(card?.card).includes("已完成");
    }, "the completed card");
    // Answered once: the run did not ask again in a new form.
    const { revisions } = await getJson(`${second.url}/console/api/messages/${cardId}/history`, history);
    const requestIds = new Set(
      revisions
        .filter((revision) => revision.at >= restartedAt)
        .map((revision) => submitValue(revision.card)?.requestId)
        .filter((id) => id !== undefined),
    );
    expect([...requestIds]).toEqual([oldForm.requestId]);

    const { entries } = await getJson(`${second.url}/console/api/calls`, calls);
    expect(entries.filter((entry) => entry.code === 230001)).toEqual([]);
    const errors = second
      .output()
      .split("\n")
      .filter((line) => /"level":(50|60)/.test(line));
    expect(errors).toEqual([]);
  }, 60_000);
});
