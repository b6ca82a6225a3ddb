import { describe, expect, it } from "vitest";
import type { RunView } from "../src/domain/types.ts";
import {
  SNAPSHOT_INPUT_MAX,
  SNAPSHOT_QUEUED_MAX,
  SNAPSHOT_TEXT_MAX,
  sessionSnapshot,
} from "../src/ws/snapshot.ts";

/** A runner that holds one session's run and queue in memory; `queuedPreview` cuts as SQLite's substr does. */
function runnerWith(run: RunView | undefined, texts: string[]) {
  const items = texts.map((text, i) => ({ id: `q${i}`, senderId: "ou_a", text, createdAt: i }));
  return {
    activeRun: () => run,
    currentRun: async () => run,
    queuedPreview: async (_sessionId: string, limit: number, chars: number) => ({
      items: items
        .slice(0, limit)
        .map((item) => ({ ...item, text: [...item.text].slice(0, chars).join("") })),
      total: items.length,
    }),
  };
}

const run = (input: string): RunView => ({
  id: "r1",
  sessionId: "s1",
  senderId: "ou_a",
  input,
  status: "running",
  steps: [],
  startedAt: 0,
});

describe("sessionSnapshot", () => {
  it("lists the first queued messages as previews and counts them all", async () => {
    const texts = Array.from({ length: 40 }, (_, i) => `${i} ${"x".repeat(20 * 1024)}`);
    const snapshot = await sessionSnapshot(runnerWith(run("go"), texts), "s1");
    expect(snapshot.queuedCount).toBe(40);
    expect(snapshot.queued).toHaveLength(SNAPSHOT_QUEUED_MAX);
    expect(snapshot.queued[0]?.text).toBe(`0 ${"x".repeat(SNAPSHOT_TEXT_MAX - 2)}…`);
    expect(JSON.stringify(snapshot).length).toBeLessThan(8 * 1024);
  });

  it("keeps short texts whole and never ends a preview on half a surrogate pair", async () => {
    // Two UTF-16 units each, after one: the cut at 200 units falls inside an emoji.
    const emoji = `a${"😀".repeat(SNAPSHOT_TEXT_MAX)}`;
    const snapshot = await sessionSnapshot(runnerWith(undefined, ["短消息", emoji]), "s1");
    expect(snapshot.run).toBeNull();
    expect(snapshot.queued[0]?.text).toBe("短消息");
    const cut = snapshot.queued[1]?.text ?? "";
    expect(cut.endsWith("…")).toBe(true);
    expect(cut.slice(0, -1)).toBe(`a${"😀".repeat(SNAPSHOT_TEXT_MAX / 2 - 1)}`);
  });

  it("cuts the run's input, which pages show as a one-line title", async () => {
    const snapshot = await sessionSnapshot(runnerWith(run("长".repeat(150_000)), []), "s1");
    expect(snapshot.run?.input).toHaveLength(SNAPSHOT_INPUT_MAX + 1);
    expect(snapshot.active).toBe(true);
  });
});
