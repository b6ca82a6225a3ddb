import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { KeyedThrottle } from "../src/util/keyed-throttle.ts";

/** How a busy run is announced to the other instances (run-wakeups.ts): a few times a second, the last change always. */
describe("KeyedThrottle", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  const calls = () => {
    const made: [number, string][] = [];
    const throttle = new KeyedThrottle(250, (key) => made.push([Date.now(), key]));
    return { made, throttle };
  };

  it("says the first change of a quiet key at once", () => {
    const start = Date.now();
    const { made, throttle } = calls();
    throttle.touch("run:1");
    expect(made).toEqual([[start, "run:1"]]);
  });

  it("folds a burst into one more call at the end of the interval, after the last change", async () => {
    const start = Date.now();
    const { made, throttle } = calls();
    for (let step = 0; step < 20; step += 1) {
      throttle.touch("run:1");
      await vi.advanceTimersByTimeAsync(10);
    }
    // 20 changes over 200 ms: one at once, one when the interval ends.
    await vi.advanceTimersByTimeAsync(1_000);
    expect(made).toEqual([
      [start, "run:1"],
      [start + 250, "run:1"],
    ]);
  });

  it("never calls a key more than once per interval, however long the burst", async () => {
    const { made, throttle } = calls();
    for (let step = 0; step < 200; step += 1) {
      throttle.touch("run:1");
      await vi.advanceTimersByTimeAsync(5);
    }
    await vi.advanceTimersByTimeAsync(1_000);
    const times = made.map(([at]) => at);
    for (let index = 1; index < times.length; index += 1)
      expect((times[index] ?? 0) - (times[index - 1] ?? 0)).toBeGreaterThanOrEqual(250);
    // 1 s of changes: at once, then every 250 ms, and the last one after the burst.
    expect(made).toHaveLength(5);
    expect(times.at(-1)).toBeGreaterThanOrEqual((times[0] ?? 0) + 995);
  });

  it("keeps keys apart", async () => {
    const { made, throttle } = calls();
    throttle.touch("run:1");
    throttle.touch("run:2");
    throttle.touch("run:1");
    expect(made.map(([, key]) => key)).toEqual(["run:1", "run:2"]);
    await vi.advanceTimersByTimeAsync(250);
    expect(made.map(([, key]) => key)).toEqual(["run:1", "run:2", "run:1"]);
  });

  it("a key quiet for a whole interval is said at once again", async () => {
    const start = Date.now();
    const { made, throttle } = calls();
    throttle.touch("run:1");
    await vi.advanceTimersByTimeAsync(600);
    throttle.touch("run:1");
    expect(made).toEqual([
      [start, "run:1"],
      [start + 600, "run:1"],
    ]);
  });

  it("flush makes the trailing calls now and nothing else", async () => {
    const { made, throttle } = calls();
    throttle.touch("run:1");
    throttle.touch("run:1");
    throttle.touch("run:2");
    expect(throttle.waiting).toBe(1);
    throttle.flush();
    expect(made.map(([, key]) => key)).toEqual(["run:1", "run:2", "run:1"]);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(made).toHaveLength(3);
    expect(throttle.waiting).toBe(0);
  });

  it("refuses an interval that would not throttle", () => {
    expect(() => new KeyedThrottle(0, () => undefined)).toThrow(/above 0 ms/);
  });
});
