import { afterEach, describe, expect, it } from "vitest";
import { type AgentsRig, ALICE, BOB, QUESTION, startAgentsRig } from "../helpers/agents.ts";
import { record, sleep } from "./helpers/env.ts";

/**
 * One agent token's long polls (issue 24 item 2): 1,000 waits of 300 s held every connection of the server for
 * five minutes. Over real HTTP against the bot in-process: past 8 waiting calls per agent the next is refused at
 * once (429, a tool error over MCP) and shows nothing; all agents together stay within their own total.
 */

let r: AgentsRig | undefined;
let abort = new AbortController();
afterEach(async () => {
  abort.abort();
  abort = new AbortController();
  await r?.stop();
  r = undefined;
});

// The per-token request rate (request-rate.test.ts) is not what these count.
const RATES = { perSecond: { max: 1000, windowMs: 1000 }, perMinute: { max: 10_000, windowMs: 60_000 } };

async function call(
  rig: AgentsRig,
  token: string,
  method: string,
  path: string,
  options: { body?: unknown; signal?: AbortSignal } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${rig.httpUrl}/api${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe("waiting calls per agent", () => {
  it("20 long polls of 300 s from one token: 8 wait, 12 are refused with 429 at once, and the MCP tools too", async () => {
    const rig = await startAgentsRig({ requestRates: RATES });
    r = rig;
    const token = rig.token("Flood", [ALICE, BOB]);
    const asked = await call(rig, token, "POST", "/asks", { body: { to: ALICE, questions: [QUESTION] } });
    expect(asked.status).toBe(201);
    const askId = String(asked.body.ask_id);

    const settled: { status: number; code?: unknown; atMs: number }[] = [];
    const startedAt = Date.now();
    const polls = Array.from({ length: 20 }, () =>
      call(rig, token, "GET", `/asks/${askId}?wait=300`, { signal: abort.signal })
        .then(({ status, body }) => {
          const error = body.error as { code?: unknown } | undefined;
          settled.push({ status, code: error?.code, atMs: Date.now() - startedAt });
        })
        .catch(() => undefined),
    );
    await rig.until(() => settled.length >= 12 || undefined, "the refusals", 5_000);
    await sleep(200);
    expect(settled).toHaveLength(12);
    expect(settled.every((s) => s.status === 429 && s.code === "RATE_LIMITED")).toBe(true);
    expect(rig.tasks.waits.waiting("Flood")).toBe(8);

    // Over MCP the same agent gets a tool error, and a question that cannot wait is never shown.
    const mcp = await rig.mcp(token);
    const waited = await mcp.callTool({ name: "get_answers", arguments: { ask_id: askId, wait_s: 30 } });
    expect(waited.isError).toBe(true);
    expect(JSON.stringify(waited.content)).toContain("RATE_LIMITED");
    const cardsBefore = rig.emulator.messages.listMessages().length;
    const refused = await mcp.callTool({
      name: "ask_user_questions",
      arguments: { to: BOB, questions: [QUESTION], wait_s: 30 },
    });
    expect(refused.isError).toBe(true);
    await sleep(100);
    expect(rig.emulator.messages.listMessages().length).toBe(cardsBefore);
    // Asking without waiting is still fine, and reading a result needs no place.
    expect((await call(rig, token, "GET", `/asks/${askId}`)).status).toBe(200);

    // Hanging up frees the places.
    abort.abort();
    await Promise.all(polls);
    await rig.until(() => rig.tasks.waits.waiting("Flood") === 0 || undefined, "the places freed", 2_000);
    expect((await call(rig, token, "GET", `/asks/${askId}?wait=0.05`)).body.status).toBe("pending");
    record("agent waits: one token", {
      tried: 20,
      held: 8,
      refused: settled.length,
      refusedWithinMs: Math.max(...settled.map((s) => s.atMs)),
    });
  });

  it("all agents together stay within the total, whoever waits", async () => {
    const rig = await startAgentsRig({ waits: { perAgent: 8, total: 10 }, requestRates: RATES });
    r = rig;
    const tokens = [rig.token("One", [ALICE]), rig.token("Two", [ALICE])];
    const askIds: string[] = [];
    for (const token of tokens) {
      const asked = await call(rig, token, "POST", "/asks", { body: { to: ALICE, questions: [QUESTION] } });
      askIds.push(String(asked.body.ask_id));
    }
    const statuses: number[] = [];
    const polls = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1].map((who) =>
      call(rig, tokens[who] ?? "", "GET", `/asks/${askIds[who]}?wait=300`, { signal: abort.signal })
        .then(({ status }) => void statuses.push(status))
        .catch(() => undefined),
    );
    await rig.until(() => statuses.length >= 2 || undefined, "the refusals", 5_000);
    await sleep(200);
    expect(statuses).toEqual([429, 429]);
    expect(rig.tasks.waits.waiting()).toBe(10);
    abort.abort();
    await Promise.all(polls);
  });
});
