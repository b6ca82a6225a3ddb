import { monitorEventLoopDelay } from "node:perf_hooks";
import { ALICE, startAgentsRig } from "../test/helpers/agents.ts";
import { clock, fmtMs, percentile, sleep } from "./common.ts";

/**
 * The outside agents' doors under one token's load (issue 24 items 7 and 14), loopback only, bounded:
 * (a) 50 concurrent `tools/list` on /mcp, five rounds: each call's time, the burst's, and what a bystander saw
 *     meanwhile (/healthz every 10 ms, the event loop's worst delay);
 * (b) one agent within its limits — start_task up to its per-minute allowance, then report_progress as fast as
 *     it answers on every task — while a person's message waits for its first card.
 * `node --import tsx bench/agent-doors.ts [--quick] [mcp|budget]`.
 */

async function mcpBurst(quick: boolean): Promise<void> {
  // 50 connections from one address: above one address's share (32), which is not what this measures.
  const r = await startAgentsRig({ serverLimits: { maxConnectionsPerAddress: 64 } });
  try {
    const token = r.token("Lister", [ALICE]);
    // Raw JSON-RPC, as a client sends it: the official client in this process would add its own cost (it
    // compiles every tool's output schema on each list) to the server's.
    const list = async (): Promise<number> => {
      const response = await fetch(`${r.httpUrl}/mcp`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      const text = await response.text();
      if (!text.includes("ask_user_questions")) throw new Error(`tools/list answered ${response.status}`);
      return response.status;
    };
    const clients = Array.from({ length: 50 }, () => list);
    const perCall: number[] = [];
    const bursts: number[] = [];
    const bystander: number[] = [];
    const loop = monitorEventLoopDelay({ resolution: 5 });
    const rounds = quick ? 2 : 5;
    let refused = 0;
    for (let round = 0; round < rounds; round += 1) {
      let probing = true;
      const probe = (async () => {
        while (probing) {
          const at = clock();
          await fetch(`${r.httpUrl}/healthz`);
          bystander.push(clock() - at);
          await sleep(10);
        }
      })();
      loop.enable();
      const at = clock();
      await Promise.all(
        clients.map(async (call) => {
          const started = clock();
          try {
            await call();
            perCall.push(clock() - started);
          } catch {
            refused += 1;
          }
        }),
      );
      bursts.push(clock() - at);
      loop.disable();
      probing = false;
      await probe;
      // The next round in a fresh second (the per-token rate is counted per second).
      await sleep(1_100);
    }
    console.log("\n50 concurrent tools/list on /mcp, one token");
    console.log(
      `  per call      p50 ${fmtMs(percentile(perCall, 50))}  p99 ${fmtMs(percentile(perCall, 99))}`,
    );
    console.log(`  burst         p50 ${fmtMs(percentile(bursts, 50))}  max ${fmtMs(Math.max(...bursts))}`);
    console.log(
      `  /healthz      p50 ${fmtMs(percentile(bystander, 50))}  p99 ${fmtMs(percentile(bystander, 99))}  max ${fmtMs(Math.max(...bystander))}`,
    );
    console.log(`  event loop    max delay ${fmtMs(loop.max / 1e6)}`);
    console.log(`  refused (per-token rate): ${refused} of ${rounds * 50}`);
  } finally {
    await r.stop();
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const quick = args.includes("--quick");
  const only = args.filter((a) => a !== "--quick");
  if (only.length === 0 || only.includes("mcp")) await mcpBurst(quick);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
