import { fixtureAgent } from "../test/helpers/acp.ts";
import { startFeishuRig } from "../test/helpers/feishu.ts";
import { all, type Check } from "./checks.ts";
import { type BenchOptions, fmtInt, fmtMs, maxOf, percentile, printTable } from "./common.ts";

/**
 * Benchmark: an ACP agent's streamed answer on one card. The scripted ACP agent (a child process on the SDK's
 * agent side) sends `agent_message_chunk`s stamped with the wall-clock time it sent them, at a steady rate;
 * the bot runs as in production (runner → publisher → real SDK → emulator). For each chunk: ms from the
 * agent's `session/update` until the emulator applied a PATCH showing it. The baseline in the same run is one
 * PATCH per chunk (what a bridge that edits the message on every delta sends): the ratio says how many
 * updates the publisher coalesced into each PATCH.
 */

const RATES = [10, 50, 200] as const;

export interface AcpRow {
  rate: number;
  chunks: number;
  seconds: number;
  patches: number;
  latencies: number[];
  finalMs: number;
}

async function stream(rate: number, chunks: number, intervalMs: number): Promise<AcpRow> {
  const agent = fixtureAgent();
  const r = await startFeishuRig({ agent, tools: [], cardPatchIntervalMs: intervalMs });
  try {
    // Warm up the process (tsx start-up is not the agent's output) before the measured prompt.
    const warm = await r.progressCard(
      await r.send({ chatType: "p2p", senderOpenId: "ou_bench", text: "/count" }),
    );
    await r.until(() => r.cardOf(warm).header?.template === "green", "the warm-up run", 30_000);

    const seen = new Map<number, number>();
    let patches = 0;
    let cardId = "";
    r.emulator.on("message_patched", ({ message, via }) => {
      if (message.messageId !== cardId || via === "callback") return;
      patches += 1;
      const now = Date.now();
      for (const match of message.content.matchAll(/\[(\d+):(\d+)\]/g)) {
        const index = Number(match[1]);
        if (!seen.has(index)) seen.set(index, now - Number(match[2]));
      }
    });
    const startedAt = Date.now();
    const userMessage = await r.send({
      chatType: "p2p",
      senderOpenId: "ou_bench",
      text: `/stream ${chunks} ${Math.round(1000 / rate)}`,
    });
    cardId = await r.progressCard(userMessage);
    await r.until(() => r.cardOf(cardId).header?.template === "green", "the finished card", 120_000);
    const seconds = (Date.now() - startedAt) / 1000;
    return {
      rate,
      chunks,
      seconds,
      patches,
      latencies: [...seen.values()],
      finalMs: seen.get(chunks) ?? Infinity,
    };
  } finally {
    await agent.close();
    await r.stop();
  }
}

/** Every chunk the agent sent was on the card at some PATCH, the last one included. */
export function acpChecks(rows: readonly AcpRow[]): Check[] {
  return rows.flatMap((r) => [
    all("acp", `chunks shown on the card (${r.rate} chunks/s)`, r.latencies.length, r.chunks),
    all("acp", `last chunk shown (${r.rate} chunks/s)`, Number.isFinite(r.finalMs) ? 1 : 0, 1),
  ]);
}

export async function runAcp(options: BenchOptions): Promise<Check[]> {
  const rows: AcpRow[] = [];
  for (const rate of RATES) {
    // ~4 s of output each (2 s with --quick); the card's answer stays under its 6000-character body budget.
    const chunks = Math.min(220, Math.round(rate * (options.quick ? 2 : 4)));
    rows.push(await stream(rate, chunks, options.cardPatchIntervalMs));
  }
  printTable(
    `ACP agent → card (CARD_PATCH_INTERVAL_MS=${options.cardPatchIntervalMs}; latency = agent's session/update → PATCH applied)`,
    ["chunks/s", "chunks", "PATCHes", "PATCH/s", "chunks per PATCH", "p50", "p99", "max", "last chunk"],
    rows.map((row) => [
      String(row.rate),
      fmtInt(row.chunks),
      fmtInt(row.patches),
      (row.patches / row.seconds).toFixed(2),
      (row.chunks / Math.max(1, row.patches)).toFixed(1),
      fmtMs(percentile(row.latencies, 50)),
      fmtMs(percentile(row.latencies, 99)),
      fmtMs(maxOf(row.latencies)),
      fmtMs(row.finalMs),
    ]),
  );
  return acpChecks(rows);
}
