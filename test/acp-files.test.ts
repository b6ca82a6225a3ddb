import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import type { Card } from "../src/cards/model.ts";
import { type AcpAgent, createAcpAgent } from "../src/harness/agents/acp/index.ts";
import { createLogger } from "../src/logger.ts";
import { TSX_LOADER } from "./helpers/acp.ts";
import { cardText, type FeishuRig, startFeishuRig } from "./helpers/feishu.ts";

/**
 * The agent's file requests as a stranger makes them (issue 24 items 4–6, issue 31's missing file): a real
 * child agent (test/fixtures/acp-hostile-agent.ts) asks through ACP, the bot answers through the emulator.
 */

const ALICE = "ou_alice000000000000000000000000000";
const HOSTILE = fileURLToPath(new URL("./fixtures/acp-hostile-agent.ts", import.meta.url));

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function hostileAgent(dataDir: string): AcpAgent {
  return createAcpAgent({
    command: process.execPath,
    args: ["--import", TSX_LOADER, HOSTILE],
    env: { PATH: process.env.PATH ?? "" },
    terminal: false,
    idleTimeoutMs: 30_000,
    dataDir,
    logger: createLogger({ level: "silent" }),
  });
}

async function rig(): Promise<{ r: FeishuRig; workspace: string }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-acp-files-"));
  const agent = hostileAgent(dataDir);
  const r = await startFeishuRig({ agent, tools: [], dataDir });
  closers.push(() => agent.close());
  closers.push(() => r.stop());
  const workspace = path.join(dataDir, "workspaces", "feishu-private", ALICE);
  fs.mkdirSync(workspace, { recursive: true });
  return { r, workspace };
}

/** Alice's private message; the answer on the finished card. */
async function answer(r: FeishuRig, text: string): Promise<string> {
  const cardId = await r.progressCard(await r.send({ chatType: "p2p", senderOpenId: ALICE, text }));
  const card = await r.until(
    () => {
      const c: Card = r.cardOf(cardId);
      return c.header?.template === "green" && c;
    },
    "a finished card",
    20_000,
  );
  return cardText(card);
}

describe("ACP file requests from a hostile agent", () => {
  it("answers a read of a missing file with ACP's resource-not-found error (-32002), so an agent can create it", async () => {
    const { r } = await rig();
    const text = await answer(r, "/read notes/new.md");
    expect(text).toContain("error -32002: Resource not found: notes/new.md");
  });

  it("refuses a whole read of a file over the cap with its size and how to read it in parts, and serves line/limit from it", async () => {
    const { r, workspace } = await rig();
    // 5 MB of numbered lines: more than one read returns (2 MiB), far less than would hurt the test.
    const lines = Array.from({ length: 200_000 }, (_, i) => `line ${i + 1} ${"x".repeat(16)}`);
    fs.writeFileSync(path.join(workspace, "big.log"), lines.join("\n"));
    const whole = await answer(r, "/read big.log");
    expect(whole).toMatch(/error -32602: big\.log is \d+ bytes; one read returns at most 2097152 bytes/);
    expect(whole).toContain("read it in parts with line and limit");
    const part = await answer(r, "/read big.log 199999 2");
    expect(part).toContain(`read ${`${lines[199_998]}\n${lines[199_999]}`.length} chars`);
    expect(part).toContain("line 199999 xxxx");
    const window = await answer(r, "/read big.log 1 150000");
    expect(window).toContain("ask for fewer lines");
  });

  it("refuses a named pipe at once, for reading and for writing, and the next request is served", async () => {
    const { r, workspace } = await rig();
    execFileSync("mkfifo", [path.join(workspace, "pipe")]);
    // Before: the read waited for a writer that never came, holding a thread-pool thread (four froze the bot).
    expect(await answer(r, "/read pipe")).toContain("is not a regular file");
    expect(await answer(r, "/write pipe hello")).toContain("is not a regular file");
    fs.writeFileSync(path.join(workspace, "ok.txt"), "fine");
    expect(await answer(r, "/read ok.txt")).toMatch(/read 4 chars: .{0,4}fine/);
  });

  it("refuses a directory and a write through a symlink as the last component", async () => {
    const { r, workspace } = await rig();
    fs.mkdirSync(path.join(workspace, "sub"));
    expect(await answer(r, "/read sub")).toContain("is not a regular file");
    const outside = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "fpb-outside-")), "target.txt");
    fs.writeFileSync(outside, "untouched");
    fs.symlinkSync(outside, path.join(workspace, "link.txt"));
    expect(await answer(r, "/write link.txt owned")).toMatch(
      /error -32602: Refused: link\.txt is (a symbolic link|outside)/,
    );
    expect(fs.readFileSync(outside, "utf8")).toBe("untouched");
  });
});
