import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createLogger } from "../src/logger.ts";
import { createShutdown, watchParent } from "../src/process-guard.ts";

/** The way out on a signal: a deadline, the lock released on every path, a second signal that ends it now. */

const logger = createLogger({ level: "silent" });

function rig(stop: () => Promise<void>, options: { logger?: typeof logger } = {}) {
  const events: string[] = [];
  const shutdown = createShutdown({
    stop,
    release: () => events.push("release"),
    exit: (code) => events.push(`exit ${code}`),
    deadlineMs: 8_000,
    logger: options.logger ?? logger,
  });
  return { events, shutdown };
}

describe("createShutdown", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("runs the graceful steps, then releases the lock and exits with the code asked for", async () => {
    const { events, shutdown } = rig(async () => {
      events.push("stopped");
    });
    shutdown("SIGTERM", 0);
    await vi.advanceTimersByTimeAsync(0);
    expect(events).toEqual(["stopped", "release", "exit 0"]);
    // The deadline passing later changes nothing.
    await vi.advanceTimersByTimeAsync(10_000);
    expect(events).toEqual(["stopped", "release", "exit 0"]);
  });

  it("exits non-zero at the deadline when a step never ends, with the lock released", async () => {
    const { events, shutdown } = rig(() => new Promise(() => {}));
    shutdown("SIGTERM", 0);
    await vi.advanceTimersByTimeAsync(7_999);
    expect(events).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(events).toEqual(["release", "exit 1"]);
  });

  it("exits at once on a second signal while stopping", async () => {
    const { events, shutdown } = rig(() => new Promise(() => {}));
    shutdown("SIGTERM", 0);
    await vi.advanceTimersByTimeAsync(1_000);
    shutdown("SIGTERM", 0);
    expect(events).toEqual(["release", "exit 1"]);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(events).toEqual(["release", "exit 1"]);
  });

  it("exits non-zero when a step throws, and when even the logger throws", async () => {
    const broken = createLogger({ level: "info" });
    vi.spyOn(broken, "info").mockImplementation(() => {
      throw new Error("EPIPE");
    });
    vi.spyOn(broken, "error").mockImplementation(() => {
      throw new Error("EPIPE");
    });
    const { events, shutdown } = rig(() => Promise.reject(new Error("db is gone")), { logger: broken });
    shutdown("SIGINT", 0);
    await vi.advanceTimersByTimeAsync(0);
    expect(events).toEqual(["release", "exit 1"]);
  });
});

describe("watchParent", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("tells once when the process that started us is gone (we were re-parented)", async () => {
    let ppid = 4242;
    const gone: number[] = [];
    watchParent({ onGone: (now) => gone.push(now), ppid: () => ppid });
    await vi.advanceTimersByTimeAsync(5_000);
    expect(gone).toEqual([]);
    ppid = 1;
    await vi.advanceTimersByTimeAsync(1_000);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(gone).toEqual([1]);
  });

  it("watches nothing when started by the init process", async () => {
    let ppid = 1;
    const gone: number[] = [];
    watchParent({ onGone: (now) => gone.push(now), ppid: () => ppid });
    ppid = 7;
    await vi.advanceTimersByTimeAsync(5_000);
    expect(gone).toEqual([]);
  });
});
