import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createAppLimiter } from "../src/feishu/limits.ts";

describe("createAppLimiter", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(0);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("never starts more than 50 calls in any second, and runs them all", async () => {
    const limiter = createAppLimiter();
    const starts: number[] = [];
    const done = Array.from({ length: 120 }, () => limiter(async () => void starts.push(Date.now())));
    await vi.runAllTimersAsync();
    await Promise.all(done);
    expect(starts).toHaveLength(120);
    for (const t of starts)
      expect(starts.filter((s) => s > t - 1000 && s <= t).length).toBeLessThanOrEqual(50);
    expect(starts.at(-1)).toBe(2000);
  });

  it("counts a slow call until a second after it settles (Feishu counts calls when they arrive)", async () => {
    // The windows alone: no headroom kept for urgent work (its own test below).
    const limiter = createAppLimiter({ urgentHeadroom: 0 });
    const starts: number[] = [];
    const slow = () =>
      limiter(async () => {
        starts.push(Date.now());
        await new Promise((resolve) => setTimeout(resolve, 500));
      });
    const jobs = Array.from({ length: 60 }, slow);
    await vi.runAllTimersAsync();
    await Promise.all(jobs);
    expect(starts.slice(0, 50).every((t) => t === 0)).toBe(true);
    expect(starts[50]).toBe(1500);
  });

  it("says how many calls the minute window holds: in flight, and settled within the last minute", async () => {
    const limiter = createAppLimiter();
    expect(limiter.used()).toBe(0);
    let finish: () => void = () => undefined;
    const slow = limiter(() => new Promise<void>((resolve) => (finish = resolve)));
    const quick = [limiter(async () => undefined), limiter(async (slot) => slot.unused())];
    await vi.advanceTimersByTimeAsync(0);
    await Promise.all(quick);
    // The slow call in flight and the quick one settled; the one that made no call is not counted.
    expect(limiter.used()).toBe(2);
    await vi.advanceTimersByTimeAsync(30_000);
    finish();
    await slow;
    await vi.advanceTimersByTimeAsync(30_000);
    expect(limiter.used()).toBe(1);
    await vi.advanceTimersByTimeAsync(30_000);
    expect(limiter.used()).toBe(0);
  });

  it("does not count a job that made no call: its slot goes to the next job at once", async () => {
    const limiter = createAppLimiter({ perSecond: 2 });
    const starts: { kind: string; at: number }[] = [];
    const noCall = () =>
      limiter(async (slot) => {
        starts.push({ kind: "no call", at: Date.now() });
        slot.unused();
      });
    const call = () => limiter(async () => void starts.push({ kind: "call", at: Date.now() }));
    const jobs = [noCall(), noCall(), noCall(), call(), call(), call()];
    await vi.runAllTimersAsync();
    await Promise.all(jobs);
    // Three jobs that called nothing, then two calls in the first second; the third call waits for the next.
    expect(starts.map((s) => `${s.kind}@${s.at}`)).toEqual([
      "no call@0",
      "no call@0",
      "no call@0",
      "call@0",
      "call@0",
      "call@1000",
    ]);
  });

  it("lets plain work that becomes urgent while it waits overtake the plain work queued before it", async () => {
    const limiter = createAppLimiter({ perSecond: 1 });
    const order: string[] = [];
    let becameUrgent = false;
    const job = (name: string, urgent?: () => boolean) =>
      limiter(async () => void order.push(name), urgent ? { urgent } : {});
    const jobs = [
      job("first"),
      job("plain 1"),
      job("plain 2"),
      job("card", () => becameUrgent),
      job("plain 3"),
    ];
    await vi.advanceTimersByTimeAsync(10);
    becameUrgent = true; // e.g. the card reached its terminal state while its progress PATCH waited
    await vi.runAllTimersAsync();
    await Promise.all(jobs);
    expect(order).toEqual(["first", "card", "plain 1", "plain 2", "plain 3"]);
  });

  it("survives a job that throws synchronously", async () => {
    const limiter = createAppLimiter({ perSecond: 1 });
    const broken = limiter((() => {
      throw new Error("sync");
    }) as () => Promise<void>);
    await expect(broken).rejects.toThrow("sync");
    const next = limiter(async () => "ok");
    await vi.runAllTimersAsync();
    await expect(next).resolves.toBe("ok");
  });

  it("lets urgent work overtake queued plain progress", async () => {
    const limiter = createAppLimiter({ perSecond: 2 });
    const order: string[] = [];
    const jobs = ["p1", "p2", "p3", "p4"].map((name) => limiter(async () => void order.push(name)));
    jobs.push(limiter(async () => void order.push("terminal"), { urgent: true }));
    await vi.runAllTimersAsync();
    await Promise.all(jobs);
    expect(order).toEqual(["p1", "p2", "terminal", "p3", "p4"]);
  });

  it("keeps to the per-minute budget", async () => {
    const limiter = createAppLimiter({ perSecond: 50, perMinute: 100, urgentHeadroom: 0 });
    const starts: number[] = [];
    const jobs = Array.from({ length: 150 }, () => limiter(async () => void starts.push(Date.now())));
    await vi.runAllTimersAsync();
    await Promise.all(jobs);
    expect(starts.filter((t) => t < 60_000)).toHaveLength(100);
    expect(starts[100]).toBe(60_000);
  });

  it("passes a rejection through to its caller", async () => {
    const limiter = createAppLimiter();
    await expect(limiter(async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
  });
  it("keeps the outside agents' cards within 30% of each window, and a person's first reply waits for none of them", async () => {
    const limiter = createAppLimiter();
    const agentStarts: number[] = [];
    // One agent's many cards, within its own limits: first sends and form changes (urgent) and ticks.
    const agentJobs = Array.from({ length: 3000 }, (_, i) =>
      limiter(async () => void agentStarts.push(Date.now()), { urgent: i % 2 === 0, lane: "agents" }),
    );
    await vi.advanceTimersByTimeAsync(30_000);
    const queuedAt = Date.now();
    let firstReplyAt = -1;
    const personTicks: number[] = [];
    const reply = limiter(
      async () => {
        firstReplyAt = Date.now();
      },
      { urgent: true },
    );
    const ticks = Array.from({ length: 40 }, () => limiter(async () => void personTicks.push(Date.now())));
    await vi.advanceTimersByTimeAsync(2_000);
    expect(firstReplyAt - queuedAt).toBe(0);
    expect(personTicks).toHaveLength(40);
    await vi.runAllTimersAsync();
    await Promise.all([...agentJobs, reply, ...ticks]);
    for (const t of agentStarts) {
      expect(agentStarts.filter((s) => s > t - 1000 && s <= t).length).toBeLessThanOrEqual(15);
      expect(agentStarts.filter((s) => s > t - 60_000 && s <= t).length).toBeLessThanOrEqual(300);
    }
  });

  it("leaves urgent work a tenth of the window that plain ticks cannot take", async () => {
    const limiter = createAppLimiter();
    const plain = Array.from({ length: 200 }, () => limiter(async () => undefined));
    await vi.advanceTimersByTimeAsync(500);
    let urgentAt = -1;
    const urgent = limiter(
      async () => {
        urgentAt = Date.now();
      },
      { urgent: true },
    );
    await vi.advanceTimersByTimeAsync(0);
    expect(urgentAt).toBe(500);
    await vi.runAllTimersAsync();
    await Promise.all([...plain, urgent]);
  });
});
