import { afterEach, describe, expect, it, vi } from "vitest";
import type { AskOutcome, PendingAsk } from "../src/asks/pending.ts";
import type { SettledElsewhere } from "../src/asks/row-follow.ts";
import type { CallbackRelay } from "../src/feishu/cluster-options.ts";
import type { ActiveCard } from "../src/feishu/progress/card-book.ts";
import { CALLBACK_ANSWER_MS, RemoteAnswers } from "../src/feishu/progress/remote-answers.ts";

/**
 * A question of this instance's card answered by a click another instance took (issue 27): the card's PATCHes
 * are held until that instance says its answer is sent, or until the platform's 3 s for it are over, and
 * nothing is held for an answer that did not come from a card, or that this instance hears of too late.
 */

const T0 = 1_700_000_000_000;

function world() {
  const events: string[] = [];
  const card = {
    runId: "run-1",
    messageId: "om_card",
    gone: false,
    publisher: {
      hold: () => {
        events.push("hold");
        return (shown?: unknown) => events.push(shown === undefined ? "release" : "release with a card");
      },
    },
  } as unknown as ActiveCard;
  let settledElsewhere: ((settled: SettledElsewhere) => void) | undefined;
  const heard = new Set<(event: "answering" | "responded", messageId: string) => void>();
  const relay: CallbackRelay = {
    answering: (messageId) => events.push(`answering ${messageId}`),
    responded: (messageId) => events.push(`responded ${messageId}`),
    onCallback: (listener) => {
      heard.add(listener);
      return () => heard.delete(listener);
    },
  };
  const remote = new RemoteAnswers({
    registry: {
      mirrorPending: async () => 0,
      on: ((_event: "settledElsewhere", listener: (settled: SettledElsewhere) => void) => {
        settledElsewhere = listener;
        return () => {
          settledElsewhere = undefined;
        };
      }) as never,
    },
    book: {
      get: (runId) => (runId === card.runId ? card : undefined),
      byMessage: (messageId) => (messageId === card.messageId ? card : undefined),
      detached: () => card,
    },
    store: { cardByMessage: async () => undefined },
    runs: { getRun: async () => undefined, session: async () => undefined },
    relay,
    now: () => Date.now(),
  });
  const ask = { runId: "run-1", requestId: "req-1", sessionId: "s-1" } as PendingAsk;
  return {
    events,
    remote,
    settle: (outcome: AskOutcome, settledAt = Date.now(), of = ask) =>
      settledElsewhere?.({ ask: of, outcome, settledAt }),
    answeredElsewhere: (messageId: string) => {
      for (const listener of heard) listener("responded", messageId);
    },
    clickedElsewhere: (messageId: string) => {
      for (const listener of heard) listener("answering", messageId);
    },
    listening: () => settledElsewhere !== undefined || heard.size > 0,
  };
}

const byCard: AskOutcome = { kind: "answered", answers: [], surface: "feishu", userId: "ou_a" };

afterEach(() => {
  vi.useRealTimers();
});

describe("a card's question answered by a click another instance took", () => {
  it("holds the card's PATCHes until that instance says its answer is sent", () => {
    vi.useFakeTimers({ now: T0 });
    const w = world();
    w.settle(byCard);
    expect(w.events).toEqual(["hold"]);
    expect(w.remote.holding).toBe(1);
    // A second question of the same click: one hold per card.
    w.settle(byCard, Date.now(), { runId: "run-1", requestId: "req-2", sessionId: "s-1" } as PendingAsk);
    w.answeredElsewhere("om_other");
    expect(w.events).toEqual(["hold"]);
    w.answeredElsewhere("om_card");
    expect(w.events).toEqual(["hold", "release"]);
    // The timer is gone with the hold: nothing is released twice.
    vi.advanceTimersByTime(CALLBACK_ANSWER_MS * 2);
    expect(w.events).toEqual(["hold", "release"]);
    expect(w.remote.holding).toBe(0);
  });

  it("holds from the click's arrival on the other instance, the settle adding no second hold", () => {
    vi.useFakeTimers({ now: T0 });
    const w = world();
    w.clickedElsewhere("om_other"); // not a card of this instance
    expect(w.events).toEqual([]);
    w.clickedElsewhere("om_card");
    expect(w.events).toEqual(["hold"]);
    w.settle(byCard);
    expect(w.events).toEqual(["hold"]);
    w.answeredElsewhere("om_card");
    expect(w.events).toEqual(["hold", "release"]);
    // Without word of the answer, the hold ends with the callback's 3 s.
    w.clickedElsewhere("om_card");
    vi.advanceTimersByTime(CALLBACK_ANSWER_MS);
    expect(w.events).toEqual(["hold", "release", "hold", "release"]);
  });

  it("lets go when the platform's 3 s for the answer are over, counted from the settle", () => {
    vi.useFakeTimers({ now: T0 });
    const w = world();
    w.settle(byCard, Date.now() - 1_000);
    expect(w.events).toEqual(["hold"]);
    vi.advanceTimersByTime(CALLBACK_ANSWER_MS - 1_000 - 1);
    expect(w.events).toEqual(["hold"]);
    vi.advanceTimersByTime(1);
    expect(w.events).toEqual(["hold", "release"]);
  });

  it("holds nothing for a settle heard after the answer's time, a clock far behind bounded to 3 s", () => {
    vi.useFakeTimers({ now: T0 });
    const w = world();
    w.settle(byCard, Date.now() - CALLBACK_ANSWER_MS);
    expect(w.events).toEqual([]);
    w.settle(byCard, Date.now() + 60_000);
    expect(w.events).toEqual(["hold"]);
    vi.advanceTimersByTime(CALLBACK_ANSWER_MS);
    expect(w.events).toEqual(["hold", "release"]);
  });

  it("holds nothing for an answer from a page or a socket, a timeout or a cancel, or another run", () => {
    vi.useFakeTimers({ now: T0 });
    const w = world();
    w.settle({ kind: "answered", answers: [], surface: "web", userId: "ou_a" });
    w.settle({ kind: "timeout" });
    w.settle({ kind: "cancelled", reason: "Session cancelled" });
    w.settle(byCard, Date.now(), { runId: "run-2", requestId: "req-9", sessionId: "s-2" } as PendingAsk);
    expect(w.events).toEqual([]);
    // 拒绝回答 on the card is a click too.
    w.settle({ kind: "declined", surface: "feishu", userId: "ou_a" });
    expect(w.events).toEqual(["hold"]);
  });

  it("releases what it holds and stops listening when closed", () => {
    vi.useFakeTimers({ now: T0 });
    const w = world();
    w.settle(byCard);
    w.remote.close();
    expect(w.events).toEqual(["hold", "release"]);
    expect(w.listening()).toBe(false);
    w.remote.answering("om_card");
    w.remote.responded("om_card");
    expect(w.events).toEqual(["hold", "release", "answering om_card", "responded om_card"]);
  });
});
