import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createWorld } from "./helpers/publisher-world.ts";

async function settled(promise: Promise<void>): Promise<boolean> {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  await vi.advanceTimersByTimeAsync(0);
  return done;
}

/**
 * Cases the rewrite of the publisher into a pure policy turned up, kept as plain examples. Two were found by
 * the model-based test (publisher-model.test.ts): a PATCH that got no answer may be applied by the platform
 * later, over newer cards (DESIGN §5), and the card must still end showing the latest state.
 */

describe("a late PATCH on top of newer cards", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(0);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("is corrected even when its retry landed first and a different state landed after it", async () => {
    const world = createWorld();
    world.faults.push({ kind: "timeout", lateMs: 11_601 });
    world.change(() => {}); // rev 1: no answer; its retry lands at 10.5 s
    await vi.advanceTimersByTimeAsync(10_500);
    world.change(() => {}); // rev 2 lands at 11.6 s, then the first rev 1 arrives at 11.601 s
    await vi.advanceTimersByTimeAsync(12_000);
    expect(world.violations).toEqual([]);
    expect(world.screen).toBe(JSON.stringify(world.state));
  });

  it("is corrected when it arrives after a callback's answer that needed no PATCH", async () => {
    const world = createWorld();
    world.change((s) => {
      s.forms = ["req1"];
    });
    await vi.advanceTimersByTimeAsync(2000);
    world.faults.push({ kind: "timeout", lateMs: 15_000 });
    world.change((s) => {
      s.status = "completed";
    });
    await vi.advanceTimersByTimeAsync(10_600); // that PATCH timed out; its retry landed
    world.callbackStarts(true); // the answer's card is the latest state: nothing to PATCH after it
    await vi.advanceTimersByTimeAsync(100);
    world.callbackEnds(true, true);
    await vi.advanceTimersByTimeAsync(5000); // the platform applies the old card now, over the answer's
    expect(world.screen).not.toBe(JSON.stringify(world.state));
    await vi.advanceTimersByTimeAsync(20_000);
    expect(world.violations).toEqual([]);
    expect(world.screen).toBe(JSON.stringify(world.state));
  });
});

describe("idle() during a callback", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(0);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("waits for a change that was scheduled when the callback came, until it has been sent after the answer", async () => {
    const world = createWorld();
    world.change(() => {});
    await vi.advanceTimersByTimeAsync(500); // that PATCH landed
    world.change(() => {}); // a plain tick: its PATCH is due 1 s after the last one
    world.callbackStarts(false); // the click comes first: the tick waits for the answer
    expect(await settled(world.publisher.idle())).toBe(false);
    const idle = world.publisher.idle();
    world.callbackEnds(false, true);
    await vi.advanceTimersByTimeAsync(5000);
    expect(await settled(idle)).toBe(true);
    expect(world.screen).toBe(JSON.stringify(world.state));
  });
});
