import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { askResultSchema } from "../src/agents-api/schemas.ts";
import { verifyAgentToken } from "../src/agents-api/token.ts";
import { p2pChatId } from "../src/local/emulator/ids.ts";
import { type AgentsRig, QUESTION, SECRET, startAgentsRig, submitValue } from "../test/helpers/agents.ts";
import { formsOn } from "../test/helpers/feishu.ts";
import { all, type Check, exactly, zero } from "./checks.ts";
import {
  type BenchOptions,
  clock,
  fmtBytes,
  fmtMs,
  hasGc,
  heapUsed,
  percentile,
  printTable,
} from "./common.ts";

/**
 * Benchmark 5 (issue 17): outside agents over the official MCP client against the real app and emulator.
 * (a) N agents call ask_user_questions at once, each for its own person: time until the form is on that
 *     person's card in the emulator. (b) get_answers already waiting when the person submits: time from the
 *     submit to the call's result. (c) heap per waiting MCP call (client and server in this one process),
 *     against the same asks registered with nobody waiting.
 */

const person = (i: number) => `ou_bench_${String(i).padStart(4, "0")}`;

export interface AgentsResult {
  agents: number;
  formsShown: number;
  calls: { sends: number; patches: number };
  answered: number;
  /** Waits of the memory round that ended before they were measured (refused, or answered by mistake). */
  waitsEndedEarly?: number;
}

/** Each question card goes out as one send carrying its form (no PATCH after), and every answer reaches its call. */
export function agentsChecks(r: AgentsResult): Check[] {
  const b = "agents";
  return [
    all(b, "forms on their cards", r.formsShown, r.agents),
    exactly(b, "sends for the question cards", r.calls.sends, r.agents),
    zero(b, "PATCHes for the question cards", r.calls.patches),
    all(b, "get_answers calls that returned the answer", r.answered, r.agents),
    ...(r.waitsEndedEarly === undefined
      ? []
      : [zero(b, "memory round: waits ended before measured", r.waitsEndedEarly)]),
  ];
}

export async function runAgents(options: BenchOptions): Promise<Check[]> {
  const agents = options.quick ? 40 : 200;
  const r = await startAgentsRig({
    cardPatchIntervalMs: options.cardPatchIntervalMs,
    perAgent: { max: 1000, windowMs: 60_000 },
    perTarget: { max: 1000, windowMs: 60_000 },
    progressIntervalMs: 15_000,
    // Every agent here connects from 127.0.0.1; real agents come from their own hosts (the per-address cap is
    // measured in RELIABILITY.md and bench/agent-doors.ts, not here).
    serverLimits: { maxConnectionsPerAddress: 4096 },
  });
  try {
    const tokens = Array.from({ length: agents }, (_, i) => r.token(`agent-${i}`, [person(i)], 600_000));
    const clients = await Promise.all(tokens.map((token) => r.mcp(token)));
    const round = await askRound(r, clients);
    const { latencies: answers, answered } = await answerRound(r, clients, round.askIds);
    const memory = await memoryRound(r, clients, tokens);
    printTable(
      `Outside agents over MCP (${agents} concurrent agents, CARD_PATCH_INTERVAL_MS=${options.cardPatchIntervalMs})`,
      ["measure", "p50", "p99", "max"],
      [
        ["ask_user_questions → form on the card", ...stats(round.toFormMs)],
        ["submit on the card → get_answers returns", ...stats(answers)],
      ],
    );
    console.log(
      `\nOpen API calls for the ${agents} question cards: ${round.calls.sends} sends, ${round.calls.patches} PATCHes` +
        " (the app-wide budget is 50 calls/s: it sets the p99 above).",
    );
    printTable(
      `Memory${hasGc() ? "" : " (no --expose-gc: uncollected figures)"}`,
      ["measure", "per call"],
      [
        ["waiting MCP call (client + server, this process)", fmtBytes(memory.perWaitingCall)],
        ["waiting HTTP long-poll, GET /api/asks/:id?wait= (client + server)", fmtBytes(memory.perLongPoll)],
        ["the ask itself, nobody waiting (task, card, registry, ledger)", fmtBytes(memory.perIdleAsk)],
        ["MCP call / long-poll", `${(memory.perWaitingCall / memory.perLongPoll).toFixed(1)}×`],
      ],
    );
    return agentsChecks({
      agents,
      formsShown: round.toFormMs.length,
      calls: round.calls,
      answered,
      waitsEndedEarly: memory.endedEarly,
    });
  } finally {
    await r.stop();
  }
}

function stats(values: number[]): string[] {
  return [percentile(values, 50), percentile(values, 99), Math.max(...values)].map(fmtMs);
}

async function askRound(r: AgentsRig, clients: Client[]) {
  const startedAt = new Map<string, number>();
  const toFormMs: number[] = [];
  const off = r.emulator.on("message_patched", ({ message }) => note(message.chatId, message.content));
  const offCreated = r.emulator.on("message_created", (message) => note(message.chatId, message.content));
  const calls = { sends: 0, patches: 0 };
  const offCalls = r.emulator.on("call", (call) => {
    if (call.method === "POST" && call.path === "/open-apis/im/v1/messages") calls.sends += 1;
    if (call.method === "PATCH") calls.patches += 1;
  });
  function note(chatId: string, content: string) {
    const t0 = startedAt.get(chatId);
    if (t0 === undefined || !content.includes('"tag":"form"')) return;
    toFormMs.push(clock() - t0);
    startedAt.delete(chatId);
  }
  const askIds = await Promise.all(
    clients.map(async (client, i) => {
      startedAt.set(p2pChatId(person(i)), clock());
      const result = await client.callTool({
        name: "ask_user_questions",
        arguments: { to: person(i), questions: [QUESTION], wait_s: 0 },
      });
      const parsed = askResultSchema.parse(result.structuredContent);
      return parsed.ask_id;
    }),
  );
  await r.until(() => startedAt.size === 0, "every form on its card", 120_000);
  off();
  offCreated();
  offCalls();
  return { askIds, toFormMs, calls };
}

async function answerRound(r: AgentsRig, clients: Client[], askIds: string[]) {
  const latencies: number[] = [];
  let answered = 0;
  // One at a time, so each figure is the path submit → settle → result, not a queue behind 200 clicks.
  for (const [i, client] of clients.entries()) {
    const cardId = r.cardsIn(p2pChatId(person(i)))[0] ?? "";
    const card = r.cardOf(cardId);
    if (formsOn(card).length === 0) throw new Error("no form to answer");
    const waiting = client.callTool({ name: "get_answers", arguments: { ask_id: askIds[i], wait_s: 60 } });
    // Give the call time to reach the server and start waiting before the person answers.
    await new Promise((resolve) => setTimeout(resolve, 5));
    const t0 = clock();
    await r.click({
      messageId: cardId,
      operatorOpenId: person(i),
      value: submitValue(card),
      name: "ask0_submit",
      formValue: { ask0_q0: "0" },
    });
    const result = await waiting;
    latencies.push(clock() - t0);
    if (askResultSchema.safeParse(result.structuredContent).data?.status === "answered") answered += 1;
  }
  return { latencies, answered };
}

async function memoryRound(r: AgentsRig, clients: Client[], tokens: string[]) {
  const n = clients.length;
  // Asks and tasks belong to the token that made them, so each is made as its client's own token: a wait on
  // another token's ask is refused at once and would measure nothing.
  const principals = tokens.map((token) => {
    const check = verifyAgentToken(SECRET, token, Date.now());
    if (!check.ok) throw new Error(`bench token refused: ${check.reason}`);
    return check.principal;
  });
  const before = heapUsed();
  const asks = await Promise.all(
    principals.map((principal, i) => r.tasks.ask(principal, { to: person(i), questions: [QUESTION] })),
  );
  const idle = heapUsed();
  const waits = clients.map((client, i) =>
    client.callTool({ name: "get_answers", arguments: { ask_id: asks[i], wait_s: 300 } }, undefined, {
      timeout: 400_000,
    }),
  );
  let ended = 0;
  const counted = <T>(p: Promise<T>) =>
    p.finally(() => {
      ended++;
    });
  const waitsCounted = waits.map(counted);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const waiting = heapUsed();
  // The same wait as a plain HTTP long-poll (GET /api/asks/:id?wait=300) on the other half of the asks.
  const polls = asks.slice(0, Math.floor(n / 2)).map((askId, i) =>
    fetch(`${r.httpUrl}/api/asks/${askId}?wait=300`, {
      headers: { authorization: `Bearer ${tokens[i]}` },
    }).then((response) => response.json()),
  );
  const pollsCounted = polls.map(counted);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const polling = heapUsed();
  const endedBeforeCancel = ended;
  for (const askId of asks) await r.core.registry.cancel(askId, "bench done");
  await Promise.all([...waitsCounted, ...pollsCounted]);
  return {
    perIdleAsk: (idle - before) / n,
    perWaitingCall: (waiting - idle) / n,
    perLongPoll: (polling - waiting) / Math.floor(n / 2),
    /** Waits and polls that ended before they were measured: each one makes the figures above meaningless. */
    endedEarly: endedBeforeCancel,
  };
}
