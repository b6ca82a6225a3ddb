import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { CoalescingSink } from "../src/harness/agents/acp/coalesce.ts";
import type { ReportedStep } from "../src/harness/agents/agent.ts";

const step = (title: string, status: ReportedStep["status"] = "running"): ReportedStep => ({
  tool: "acp_read",
  title,
  status,
});

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("CoalescingSink", () => {
  it("hands on a burst once per interval, with the latest text and each step's latest state, in first-seen order", async () => {
    const batches: { text?: string; steps: readonly (readonly [string, ReportedStep | null])[] }[] = [];
    const sink = new CoalescingSink(
      { reportStep: () => {}, reportText: () => {}, reportBatch: (batch) => void batches.push(batch) },
      { intervalMs: 100 },
    );
    for (let i = 0; i < 10_000; i += 1) {
      sink.reportText(`text ${i}`);
      sink.reportStep(`tool:${i % 3}`, step(`call ${i}`));
    }
    sink.reportStep("plan:9", null);
    expect(batches).toEqual([]);
    await vi.advanceTimersByTimeAsync(100);
    expect(batches).toHaveLength(1);
    expect(batches[0]?.text).toBe("text 9999");
    expect(batches[0]?.steps.map(([key]) => key)).toEqual(["tool:0", "tool:1", "tool:2", "plan:9"]);
    expect(batches[0]?.steps[0]?.[1]?.title).toBe("call 9999");
    expect(batches[0]?.steps[3]?.[1]).toBeNull();
    // Nothing new, nothing sent.
    await vi.advanceTimersByTimeAsync(1000);
    expect(batches).toHaveLength(1);
  });

  it("flushes at once when asked (before a permission form, at the end of the turn)", () => {
    const texts: string[] = [];
    const steps: string[] = [];
    const sink = new CoalescingSink({
      reportStep: (key) => void steps.push(key),
      reportText: (text) => void texts.push(text),
    });
    sink.reportStep("tool:a", step("Edit a.md", "pending"));
    sink.reportText("hello");
    sink.flush();
    expect(steps).toEqual(["tool:a"]);
    expect(texts).toEqual(["hello"]);
    sink.close();
    expect(texts).toEqual(["hello"]);
  });
});
