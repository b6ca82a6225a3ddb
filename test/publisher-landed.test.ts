import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Card } from "../src/cards/model.ts";
import { IGNORED_SLOT } from "../src/feishu/limits.ts";
import { FeishuApiError } from "../src/feishu/messenger.ts";
import { CardPublisher, type CardShape } from "../src/feishu/publisher.ts";
import { createLogger } from "../src/logger.ts";

/**
 * `onLanded`: when the publisher can say the platform shows a card (what a restart's repair of final states
 * relies on). A PATCH that landed, or a render skipped as the very card already shown; not while a PATCH left
 * without an answer may still land on top of it.
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

function setup(options: { shown?: string; patch?: (card: Card) => Promise<void> } = {}) {
  const state = { status: "running" };
  const landed: CardShape[] = [];
  const shownOnPlatform: string[] = [];
  const publisher = new CardPublisher({
    messageId: "om_1",
    messenger: {
      patchCard: async (_id, card) => {
        await (options.patch ?? (() => Promise.resolve()))(card);
        shownOnPlatform.push(JSON.stringify(card));
      },
    },
    shape: () => ({ key: state.status, formOpen: false, final: state.status === "completed" }),
    render: () => cardOf(state.status),
    intervalMs: 200,
    confirmAfterMs: 1000,
    appLimiter: (fn) => fn(IGNORED_SLOT),
    now: Date.now,
    logger: createLogger({ level: "silent" }),
    onLanded: (shape) => landed.push(shape),
    ...(options.shown !== undefined ? { shown: options.shown } : {}),
  });
  return { state, landed, publisher, shownOnPlatform };
}

describe("the publisher's onLanded", () => {
  it("reports each landed PATCH with the shape it rendered, the final one last", async () => {
    const { state, landed, publisher } = setup();
    publisher.request();
    await vi.advanceTimersByTimeAsync(500);
    state.status = "completed";
    publisher.request();
    await vi.advanceTimersByTimeAsync(500);
    expect(landed.map((shape) => [shape.key, shape.final])).toEqual([
      ["running", false],
      ["completed", true],
    ]);
  });

  it("reports a render skipped as the card already shown (the reply carried the final state)", async () => {
    const { state, landed, publisher, shownOnPlatform } = setup({
      shown: JSON.stringify(cardOf("completed")),
    });
    state.status = "completed";
    publisher.request();
    await vi.advanceTimersByTimeAsync(500);
    expect(shownOnPlatform).toEqual([]);
    expect(landed.map((shape) => shape.final)).toEqual([true]);
  });

  it("waits for the confirmation while a PATCH without an answer may still land on top", async () => {
    let calls = 0;
    const { state, landed, publisher } = setup({
      patch: async () => {
        calls += 1;
        // The first PATCH gets no answer (a timeout): the platform may still apply it later.
        if (calls === 1)
          throw new FeishuApiError({ method: "patch", message: "timeout of 10000ms exceeded" });
      },
    });
    publisher.request();
    await vi.advanceTimersByTimeAsync(10);
    state.status = "completed";
    publisher.request();
    // The retry of the latest state lands, but the unanswered one could still overwrite it.
    await vi.advanceTimersByTimeAsync(800);
    expect(calls).toBe(2);
    expect(landed).toEqual([]);
    // A request timeout later the latest state is sent once more, and that is the landing reported.
    await vi.advanceTimersByTimeAsync(2000);
    expect(calls).toBe(3);
    expect(landed.map((shape) => [shape.key, shape.final])).toEqual([["completed", true]]);
  });

  it("reports nothing for a PATCH that failed, and marks a late retry as pending", async () => {
    const { state, landed, publisher } = setup({
      patch: () =>
        Promise.reject(new FeishuApiError({ method: "patch", message: "bad gateway", httpStatus: 502 })),
    });
    state.status = "completed";
    publisher.request();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(landed).toEqual([]);
    expect(publisher.retryingLate).toBe(true);
    publisher.stop();
    expect(publisher.retryingLate).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });
});
