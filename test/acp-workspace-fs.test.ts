import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openWorkspace, WorkspaceFileError } from "../src/harness/agents/acp/workspace-fs.ts";

/**
 * The workspace's file door under a racing attacker (issue 24 items 5 and 6): another process swaps a
 * directory of the workspace for a symlink to outside and back, as fast as it can, while the agent's reads
 * and writes go through the door. The file used must be the file checked, every time.
 */

const swappers: ChildProcess[] = [];
afterEach(() => {
  for (const child of swappers.splice(0)) child.kill("SIGKILL");
});

/** `dir/d` is, in turn, the real directory `dir/real` and a symlink to `outside`, swapped by rename. */
function startSwapper(dir: string, outside: string): ChildProcess {
  const script = `
    const fs = require("node:fs"), path = require("node:path");
    const dir = ${JSON.stringify(dir)};
    const d = path.join(dir, "d"), real = path.join(dir, "real"), link = path.join(dir, "link");
    fs.symlinkSync(${JSON.stringify(outside)}, link);
    const step = (op) => { try { op(); } catch { /* a name the door just made: clear it, go on */
      try { if (!fs.lstatSync(d).isSymbolicLink() && fs.existsSync(real)) fs.rmSync(d, { recursive: true }); } catch {} } };
    for (;;) {
      step(() => fs.renameSync(real, d)); step(() => fs.renameSync(d, real));
      step(() => fs.renameSync(link, d)); step(() => fs.renameSync(d, link));
    }`;
  const child = spawn(process.execPath, ["-e", script], { stdio: "ignore" });
  swappers.push(child);
  return child;
}

function setUp(): { workspace: string; outside: string } {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-race-"));
  const workspace = path.join(base, "ws");
  const outside = path.join(base, "outside");
  fs.mkdirSync(path.join(workspace, "real"), { recursive: true });
  fs.mkdirSync(outside);
  fs.writeFileSync(path.join(workspace, "real", "f.txt"), "inside");
  fs.writeFileSync(path.join(outside, "f.txt"), "SECRET");
  return { workspace, outside };
}

describe("WorkspaceFs under a racing symlink swap", () => {
  it("never reads a file outside the workspace, however the swap falls", async () => {
    const { workspace, outside } = setUp();
    const ws = await openWorkspace(workspace);
    const seen = { inside: 0, secret: 0, refused: 0 };
    const swapper = startSwapper(workspace, outside);
    for (let round = 0; round < 150; round += 1) {
      await Promise.all(
        Array.from({ length: 20 }, async () => {
          try {
            const text = await ws.read(path.join(workspace, "d", "f.txt"));
            if (text === "SECRET") seen.secret += 1;
            else seen.inside += 1;
          } catch {
            seen.refused += 1; // outside, or missing for the instant `d` was renamed away
          }
        }),
      );
    }
    expect(seen.secret).toBe(0);
    expect(seen.inside + seen.refused).toBe(3000);
    // Once the swapping stops, the same door serves the file where it really is.
    await new Promise((resolve) => {
      swapper.once("exit", resolve);
      swapper.kill("SIGKILL");
    });
    // Killed mid-swap, the real directory may be left under the name `d`: put it back first.
    const real = path.join(workspace, "real");
    if (!fs.existsSync(real)) fs.renameSync(path.join(workspace, "d"), real);
    expect(await ws.read(path.join(real, "f.txt"))).toBe("inside");
  });

  it("never writes a file outside the workspace, however the swap falls", async () => {
    const { workspace, outside } = setUp();
    const ws = await openWorkspace(workspace);
    startSwapper(workspace, outside);
    for (let round = 0; round < 150; round += 1) {
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          ws.write(path.join(workspace, "d", `w${round}-${i}.txt`), "landed").catch(() => undefined),
        ),
      );
    }
    const landedOutside = fs.readdirSync(outside).filter((name) => name.startsWith("w"));
    expect(landedOutside).toEqual([]);
  });
});

describe("WorkspaceFs bounds", () => {
  it("gives a read up when its deadline passes, with an error the agent can read", async () => {
    const { workspace } = setUp();
    fs.writeFileSync(path.join(workspace, "slow.txt"), "y\n".repeat(500_000));
    // A clock that jumps a second per look: the streaming read sees its 10 s pass after a few chunks.
    let clock = 0;
    const ws = await openWorkspace(workspace, { now: () => (clock += 1000), timeoutMs: 10_000 });
    const error = await ws.read("slow.txt", { line: 400_000, limit: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkspaceFileError);
    expect((error as WorkspaceFileError).reason).toBe("timeout");
    expect((error as Error).message).toContain("did not finish in time");
  });

  it("refuses a write bigger than the cap before touching the disk", async () => {
    const { workspace } = setUp();
    const ws = await openWorkspace(workspace, { maxWriteBytes: 1024 });
    await expect(ws.write("big.txt", "z".repeat(2048))).rejects.toThrow("at most 1024 bytes");
    expect(fs.existsSync(path.join(workspace, "big.txt"))).toBe(false);
  });

  it("makes missing parent directories inside the workspace for a new file", async () => {
    const { workspace } = setUp();
    const ws = await openWorkspace(workspace);
    await ws.write("a/b/c.txt", "deep");
    expect(fs.readFileSync(path.join(workspace, "a", "b", "c.txt"), "utf8")).toBe("deep");
    await ws.write("a/b/c.txt", "x");
    expect(await ws.read("a/b/c.txt")).toBe("x");
  });
});
