import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { createAcpAgent } from "../src/harness/agents/acp/index.ts";
import { MAX_ANSWER_CHARS } from "../src/harness/agents/acp/updates.ts";
import { createLogger } from "../src/logger.ts";
import { TSX_LOADER } from "./helpers/acp.ts";
import { cardText, type FeishuRig, startFeishuRig } from "./helpers/feishu.ts";

/**
 * An ACP agent flooding `session/update` (issue 24 item 10): a real child agent
 * (test/fixtures/acp-hostile-agent.ts `/flood N`) sends N message chunks and N tool-call updates as fast as
 * its pipe takes them. Before, each one saved the whole run to SQLite and re-rendered it for every listener:
 * 20,000 updates were 20,000 full-run writes, and every other chat waited. The figures are in RELIABILITY.md.
 */

const ALICE = "ou_alice000000000000000000000000000";
const HOSTILE = fileURLToPath(new URL("./fixtures/acp-hostile-agent.ts", import.meta.url));

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function rig(): Promise<{ r: FeishuRig; saves: () => number }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-acp-flood-"));
  const agent = createAcpAgent({
    command: process.execPath,
    args: ["--import", TSX_LOADER, HOSTILE],
    env: { PATH: process.env.PATH ?? "" },
    terminal: false,
    idleTimeoutMs: 60_000,
    dataDir,
    logger: createLogger({ level: "silent" }),
  });
  const r = await startFeishuRig({ agent, tools: [], dataDir });
  closers.push(() => agent.close());
  closers.push(() => r.stop());
  let saves = 0;
  const { store } = r.core;
  const saveRun = store.saveRun.bind(store);
  store.saveRun = async (run) => {
    saves += 1;
    await saveRun(run);
  };
  return { r, saves: () => saves };
}

async function flood(r: FeishuRig, count: number): Promise<{ runId: string; text: string }> {
  const cardId = await r.progressCard(
    await r.send({ chatType: "p2p", senderOpenId: ALICE, text: `/flood ${count}` }),
  );
  const card = await r.until(
    () => {
      const c = r.cardOf(cardId);
      return c.header?.template === "green" && c;
    },
    "the flooded card, finished",
    60_000,
  );
  const runId = /\/runs\/([0-9a-f-]+)/.exec(cardText(card))?.[1] ?? "";
  return { runId, text: (await r.core.store.getRun(runId))?.text ?? "" };
}

describe("an ACP agent flooding session/update", () => {
  it("writes the run once per burst, not once per update", async () => {
    const { r, saves } = await rig();
    const before = saves();
    const { text } = await flood(r, 2000);
    expect(text).toContain("flood done");
    // 4,000 updates; the run is written per coalesced burst (100 ms) plus its start and end.
    expect(saves() - before).toBeLessThan(200);
  });

  it("caps the answer's length, and the turn still ends normally", async () => {
    const { r } = await rig();
    // ~140,000 characters of chunks: more than the cap.
    const { text } = await flood(r, 15_000);
    expect(text.length).toBeLessThanOrEqual(MAX_ANSWER_CHARS);
    expect(text.endsWith("…")).toBe(true);
    // (a tool update between two chunks starts a new paragraph)
    expect(text.startsWith("chunk 0 \n\nchunk 1 ")).toBe(true);
  });
});
