import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Card } from "../src/cards/model.ts";
import { IGNORED_SLOT } from "../src/feishu/limits.ts";
import { FeishuApiError } from "../src/feishu/messenger.ts";
import { CardPublisher } from "../src/feishu/publisher.ts";
import { createLogger } from "../src/logger.ts";

/**
 * The publisher's timers read the card's shape (runner and database) when they fire. A read that throws —
 * the database closed under a late retry after shutdown, as the long fault soak once showed — must not
 * escape the timer (that ends the process): it is logged, and the next change publishes as usual.
 */

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const cardOf = (status: string): Card => ({
  schema: "2.0",
  config: { update_multi: true },
  body: { elements: [{ tag: "markdown", content: status }] },
});

describe("a publisher timer whose read throws", () => {
  it("logs it instead of throwing out of the timer, and publishes the next change", async () => {
    const state = { status: "running", broken: false, failing: true };
    const lines: { msg: string; err?: string }[] = [];
    const patched: string[] = [];
    const publisher = new CardPublisher({
      messageId: "om_1",
      messenger: {
        patchCard: async (_id, card) => {
          if (state.failing)
            throw new FeishuApiError({ method: "patch", message: "bad gateway", httpStatus: 502 });
          patched.push(JSON.stringify(card));
        },
      },
      shape: () => {
        if (state.broken) throw new TypeError("The database connection is not open");
        return { key: state.status, formOpen: false };
      },
      render: () => cardOf(state.status),
      intervalMs: 200,
      confirmAfterMs: 1000,
      appLimiter: (fn) => fn(IGNORED_SLOT),
      now: Date.now,
      logger: createLogger({
        level: "error",
        destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
      }),
    });
    state.status = "completed";
    publisher.request();
    // Every PATCH fails until the publisher gives up and arms its late retry (30 s later).
    await vi.advanceTimersByTimeAsync(10_000);
    expect(publisher.retryingLate).toBe(true);
    state.broken = true;
    // Fake timers rethrow what a timer throws: this would fail if the read escaped.
    await vi.advanceTimersByTimeAsync(40_000);
    expect(lines.map((line) => [line.msg, line.err])).toContainEqual([
      "card update failed",
      "The database connection is not open",
    ]);
    state.broken = false;
    state.failing = false;
    state.status = "cancelled";
    publisher.request();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(patched.at(-1)).toBe(JSON.stringify(cardOf("cancelled")));
    publisher.stop();
  });

  it("logs a read that throws after a PATCH (the shape read on its way back) instead of rejecting", async () => {
    const state = { broken: false };
    const lines: { msg: string; err?: string }[] = [];
    const publisher = new CardPublisher({
      messageId: "om_2",
      messenger: {
        patchCard: async () => {
          // The database closes while the PATCH is out: every read after it throws.
          state.broken = true;
        },
      },
      shape: () => {
        if (state.broken) throw new TypeError("The database connection is not open");
        return { key: "running", formOpen: false };
      },
      render: () => cardOf("running"),
      intervalMs: 200,
      confirmAfterMs: 1000,
      appLimiter: (fn) => fn(IGNORED_SLOT),
      now: Date.now,
      logger: createLogger({
        level: "error",
        destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
      }),
    });
    publisher.request();
    // An unhandled rejection would fail this file (vitest reports it) on the old code.
    await vi.advanceTimersByTimeAsync(1_000);
    expect(lines.map((line) => [line.msg, line.err])).toContainEqual([
      "card update failed",
      "The database connection is not open",
    ]);
    publisher.stop();
  });
});
