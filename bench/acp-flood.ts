import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { createAcpAgent } from "../src/harness/agents/acp/index.ts";
import { createLogger } from "../src/logger.ts";
import { TSX_LOADER } from "../test/helpers/acp.ts";
import { startFeishuRig } from "../test/helpers/feishu.ts";
import { fmtMs, maxOf, percentile, printTable } from "./common.ts";

/**
 * Issue 24 item 10, measured: an ACP agent (test/fixtures/acp-hostile-agent.ts `/flood N`) sends N message
 * chunks and N tool-call updates as fast as its pipe takes them, while a neighbour probes `/healthz` every
 * 50 ms. Reports the probe's latency, the event loop's delay, how many times the run was written to SQLite
 * (`saveRun` calls) and the answer's length. Run: `npx tsx bench/acp-flood.ts [N]` (default 10000).
 */

const HOSTILE = fileURLToPath(new URL("../test/fixtures/acp-hostile-agent.ts", import.meta.url));

async function main(): Promise<void> {
  const count = Number(process.argv[2] ?? "10000");
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-flood-"));
  const agent = createAcpAgent({
    command: process.execPath,
    args: ["--import", TSX_LOADER, HOSTILE],
    env: { PATH: process.env.PATH ?? "" },
    terminal: false,
    idleTimeoutMs: 120_000,
    dataDir,
    logger: createLogger({ level: "silent" }),
  });
  const r = await startFeishuRig({ agent, tools: [], dataDir, withServer: true });
  let saves = 0;
  const store = r.core.store;
  const saveRun = store.saveRun.bind(store);
  store.saveRun = async (run) => {
    saves += 1;
    await saveRun(run);
  };
  try {
    // Warm the agent process up first (tsx start-up is not the flood).
    const warm = await r.progressCard(
      await r.send({ chatType: "p2p", senderOpenId: "ou_flood", text: "/x" }),
    );
    await r.until(() => r.cardOf(warm).header?.template === "green", "warm-up", 30_000);
    saves = 0;

    const probes: number[] = [];
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const t0 = performance.now();
        await fetch(`${r.httpUrl}/healthz`).then((res) => res.arrayBuffer());
        probes.push(performance.now() - t0);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    const t0 = performance.now();
    const cardId = await r.progressCard(
      await r.send({ chatType: "p2p", senderOpenId: "ou_flood", text: `/flood ${count}` }),
    );
    await r.until(() => r.cardOf(cardId).header?.template === "green", "the flooded card", 600_000);
    const seconds = (performance.now() - t0) / 1000;
    loop.disable();
    probing = false;
    await probe;
    const cardChars = JSON.stringify(r.cardOf(cardId)).length;
    printTable(
      `ACP flood: ${count} chunks + ${count} tool-call updates as fast as the pipe takes them`,
      [
        "seconds",
        "healthz p50",
        "healthz p99",
        "healthz max",
        "loop p99",
        "loop max",
        "saveRun calls",
        "card JSON chars",
      ],
      [
        [
          seconds.toFixed(1),
          fmtMs(percentile(probes, 50)),
          fmtMs(percentile(probes, 99)),
          fmtMs(maxOf(probes)),
          fmtMs(loop.percentile(99) / 1e6),
          fmtMs(loop.max / 1e6),
          String(saves),
          String(cardChars),
        ],
      ],
    );
  } finally {
    await agent.close();
    await r.stop();
  }
}

await main();
