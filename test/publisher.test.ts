import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Card } from "../src/cards/model.ts";
import { IGNORED_SLOT, type Limiter, type Slot } from "../src/feishu/limits.ts";
import { FeishuApiError } from "../src/feishu/messenger.ts";
import { CardPublisher, type CardShape } from "../src/feishu/publisher.ts";
import { answerCardAction, DEFAULT_SETTLE_MS, type FeishuEventHandlers } from "../src/feishu/transport.ts";
import { createLogger } from "../src/logger.ts";

/** A card whose body says which state it shows, so each PATCH can be read back. */
function cardFor(state: { status: string; step: number; forms: string[] }): Card {
  return {
    schema: "2.0",
    config: { update_multi: true },
    body: {
      elements: [
        { tag: "markdown", content: `${state.status} step ${state.step} forms ${state.forms.join(",")}` },
      ],
    },
  };
}

function setup(
  options: {
    patch?: (card: Card) => Promise<void>;
    intervalMs?: number;
    appLimiter?: Parameters<typeof gateLimiter>[0];
    limiter?: Limiter;
    shown?: string;
  } = {},
) {
  const state = { status: "running", step: 0, forms: [] as string[] };
  const patched: { at: number; content: string }[] = [];
  const gone: FeishuApiError[] = [];
  /** The degrade level of each render that was sent. */
  const levels: number[] = [];
  const patch =
    options.patch ??
    (async () => {
      await new Promise((resolve) => setTimeout(resolve, 100));
    });
  const publisher = new CardPublisher({
    messageId: "om_1",
    messenger: {
      patchCard: async (_id, card) => {
        patched.push({ at: Date.now(), content: JSON.stringify(card.body.elements[0]) });
        const degraded = card.body.elements[1];
        levels.push(degraded?.tag === "markdown" ? Number(degraded.content.split(" ")[1]) : 0);
        await patch(card);
      },
    },
    shape: (): CardShape => ({
      key: `${state.status}|${state.forms.join(",")}`,
      formOpen: state.forms.length > 0,
    }),
    render: (level) => {
      const card = cardFor(state);
      if (level > 0) card.body.elements.push({ tag: "markdown", content: `degraded ${level}` });
      return card;
    },
    intervalMs: options.intervalMs ?? 1000,
    appLimiter:
      options.limiter ?? (options.appLimiter ? gateLimiter(options.appLimiter) : (fn) => fn(IGNORED_SLOT)),
    ...(options.shown !== undefined ? { shown: options.shown } : {}),
    now: Date.now,
    logger: createLogger({ level: "silent" }),
    onGone: (error) => gone.push(error),
  });
  return {
    state,
    patched,
    publisher,
    gone,
    levels,
    contents: () => patched.map((p) => JSON.parse(p.content).content as string),
  };
}

/** An app-wide queue the test opens by hand: the job runs when `gate.open()` is called. */
function gateLimiter(gate: { wait: Promise<void> }) {
  return async <T>(fn: (slot: Slot) => Promise<T>): Promise<T> => {
    await gate.wait;
    return fn(IGNORED_SLOT);
  };
}

function manualGate() {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { wait, open };
}

const rateLimited = (retryAfterMs?: number) =>
  new FeishuApiError({
    method: "patch",
    message: "rate",
    feishuCode: 230020,
    httpStatus: 400,
    ...(retryAfterMs ? { retryAfterMs } : {}),
  });

describe("CardPublisher", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(0);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("turns a burst of changes into one PATCH carrying the latest state", async () => {
    const { state, publisher, contents } = setup();
    for (let step = 1; step <= 10; step += 1) {
      state.step = step;
      publisher.request();
    }
    await vi.runAllTimersAsync();
    expect(contents()).toEqual(["running step 10 forms "]);
  });

  it("reads the state when the PATCH is sent, not when it was scheduled", async () => {
    const { state, publisher, contents } = setup();
    state.step = 1;
    publisher.request();
    state.step = 2; // changed after scheduling, without a new request
    await vi.runAllTimersAsync();
    expect(contents()).toEqual(["running step 2 forms "]);
  });

  it("reconciles after a PATCH: a change made while it was in flight lands next", async () => {
    const { state, publisher, contents } = setup();
    state.step = 1;
    publisher.request();
    await vi.advanceTimersByTimeAsync(50); // first PATCH in flight (takes 100 ms)
    state.step = 2;
    state.status = "completed"; // no request() call: reconciliation alone must catch it
    await vi.runAllTimersAsync();
    expect(contents()).toEqual(["running step 1 forms ", "completed step 2 forms "]);
  });

  it("skips a render identical to the last one sent", async () => {
    const { state, publisher, patched } = setup();
    state.step = 1;
    publisher.request();
    await vi.runAllTimersAsync();
    publisher.request();
    publisher.request();
    await vi.runAllTimersAsync();
    expect(patched).toHaveLength(1);
    expect(publisher.stats.skipped).toBeGreaterThanOrEqual(1);
  });

  it("spaces plain progress PATCHes by the interval but sends state and form changes sooner", async () => {
    const { state, publisher, patched } = setup({ patch: async () => {} });
    state.step = 1;
    publisher.request();
    await vi.advanceTimersByTimeAsync(0);
    state.step = 2;
    publisher.request();
    await vi.advanceTimersByTimeAsync(999);
    expect(patched).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(patched.map((p) => p.at)).toEqual([0, 1000]);
    state.forms = ["req1"];
    publisher.request();
    await vi.runAllTimersAsync();
    expect(patched.map((p) => p.at)).toEqual([0, 1000, 1250]);
  });

  it("keeps a form intact: step ticks wait while it is open, and go out with the next form change", async () => {
    const { state, publisher, contents } = setup({ patch: async () => {} });
    state.forms = ["req1"];
    publisher.request();
    await vi.runAllTimersAsync();
    for (let step = 1; step <= 5; step += 1) {
      state.step = step;
      publisher.request();
      await vi.advanceTimersByTimeAsync(2000);
    }
    expect(contents()).toEqual(["running step 0 forms req1"]);
    state.forms = [];
    publisher.request();
    await vi.runAllTimersAsync();
    expect(contents()).toEqual(["running step 0 forms req1", "running step 5 forms "]);
  });

  it("holds PATCHes while a callback is answered and publishes after the response", async () => {
    const { state, publisher, patched, contents } = setup({ patch: async () => {} });
    const release = publisher.hold();
    state.status = "completed";
    publisher.request();
    await vi.advanceTimersByTimeAsync(5000);
    expect(patched).toHaveLength(0);
    release();
    release(); // idempotent
    await vi.runAllTimersAsync();
    expect(contents()).toEqual(["completed step 0 forms "]);
  });

  it("backs off on 230020 as long as Feishu says, then lands the latest state", async () => {
    let failures = 2;
    const { state, publisher, patched, contents } = setup({
      patch: async () => {
        if (failures-- > 0) throw rateLimited(3000);
      },
    });
    state.step = 1;
    publisher.request();
    await vi.advanceTimersByTimeAsync(0);
    state.status = "completed";
    await vi.runAllTimersAsync();
    expect(patched.map((p) => p.at)).toEqual([0, 3000, 6000]);
    expect(contents().at(-1)).toBe("completed step 1 forms ");
    expect(publisher.stats).toMatchObject({ sent: 1, rateLimited: 2 });
  });

  it("never retries a rate-limited card without bound", async () => {
    const { state, publisher, patched } = setup({
      patch: async () => {
        throw rateLimited();
      },
    });
    state.step = 1;
    publisher.request();
    await vi.advanceTimersByTimeAsync(20_000);
    expect(patched).toHaveLength(9); // the first try and 8 retries
    expect(publisher.stats.failed).toBe(1);
    await publisher.idle(); // a late retry armed does not keep the card busy
    // Then a late round each after 30 s, 2 min and 10 min, and no more: a rate limit is the platform up and
    // saying when, so each round gets the same spaced waits (a try and 8 retries), not a single shot that a
    // 230020 would spend (the fault property's seed -352752998 left the card at 执行中 that way).
    await vi.runAllTimersAsync();
    expect(patched).toHaveLength(36);
    state.step = 2; // a new state is tried again
    publisher.request();
    await vi.advanceTimersByTimeAsync(1000);
    expect(patched.length).toBeGreaterThan(36);
  });

  it("stops publishing a card older than 14 days (230031)", async () => {
    const { state, publisher, patched, gone } = setup({
      patch: async () => {
        throw new FeishuApiError({
          method: "patch",
          message: "too old",
          feishuCode: 230031,
          httpStatus: 400,
        });
      },
    });
    state.step = 1;
    publisher.request();
    await vi.runAllTimersAsync();
    state.status = "completed";
    publisher.request();
    await vi.runAllTimersAsync();
    expect(patched).toHaveLength(1);
    expect(publisher.stopped).toBe(true);
    expect(gone.map((e) => e.feishuCode)).toEqual([230031]);
  });

  it("retries a 5xx a bounded number of times", async () => {
    const { state, publisher, patched } = setup({
      patch: async () => {
        throw new FeishuApiError({ method: "patch", message: "bad gateway", httpStatus: 502 });
      },
    });
    state.step = 1;
    publisher.request();
    await vi.advanceTimersByTimeAsync(20_000);
    expect(patched).toHaveLength(4);
    expect(publisher.stats.failed).toBe(1);
    await vi.runAllTimersAsync();
    expect(patched).toHaveLength(7); // and one late try after 30 s, 2 min and 10 min
    expect(publisher.stats.failed).toBe(4);
  });

  it("lands a final state given up on when the platform recovers, by a late retry", async () => {
    let failing = true;
    const { state, publisher, patched, contents } = setup({
      patch: async () => {
        if (failing) throw new FeishuApiError({ method: "patch", message: "bad gateway", httpStatus: 502 });
      },
    });
    state.status = "completed";
    publisher.request();
    await vi.advanceTimersByTimeAsync(20_000);
    expect(patched).toHaveLength(4);
    failing = false; // nothing changes on the task any more: only the late retry can bring the state
    await vi.advanceTimersByTimeAsync(30_000);
    expect(patched).toHaveLength(5);
    expect(contents().at(-1)).toContain("completed");
    await vi.runAllTimersAsync();
    expect(patched).toHaveLength(5); // landed: no more late tries
  });

  it("re-renders a refused card one degrade level plainer, up to 2, then tries only the next state", async () => {
    const refused = () =>
      new FeishuApiError({ method: "patch", message: "bad card", feishuCode: 230099, httpStatus: 400 });
    const { state, publisher, patched, levels } = setup({
      patch: async (card) => {
        // The running state is refused at every level; the next state is accepted.
        if (JSON.stringify(card).includes("step 1")) throw refused();
      },
    });
    state.step = 1;
    publisher.request();
    await vi.runAllTimersAsync();
    expect(levels).toEqual([0, 1, 2]);
    expect(publisher.degradeLevel).toBe(2);
    // Given up: the same state is not sent again.
    publisher.request();
    await vi.runAllTimersAsync();
    expect(patched).toHaveLength(3);
    state.step = 2;
    publisher.request();
    await vi.runAllTimersAsync();
    expect(patched).toHaveLength(4);
    expect(levels.at(-1)).toBe(2);
  });

  it("treats 230025 (too large) like 230099: the next render is degraded, and later states stay so", async () => {
    let calls = 0;
    const { state, publisher, levels } = setup({
      patch: async () => {
        calls += 1;
        if (calls === 1)
          throw new FeishuApiError({
            method: "patch",
            message: "too long",
            feishuCode: 230025,
            httpStatus: 400,
          });
      },
    });
    state.step = 1;
    publisher.request();
    await vi.runAllTimersAsync();
    state.step = 2;
    publisher.request();
    await vi.runAllTimersAsync();
    expect(levels).toEqual([0, 1, 1]);
  });

  it("renders when the app-wide budget lets the PATCH go, not when it joined the queue", async () => {
    const gate = manualGate();
    const { state, publisher, contents } = setup({ patch: async () => {}, appLimiter: gate });
    state.step = 1;
    publisher.request();
    await vi.advanceTimersByTimeAsync(0); // queued behind other cards
    state.step = 7;
    state.status = "completed";
    gate.open();
    await vi.runAllTimersAsync();
    expect(contents()).toEqual(["completed step 7 forms "]);
  });

  it("drops a queued PATCH when a callback starts before its turn, and publishes after the response", async () => {
    const gate = manualGate();
    const { state, publisher, patched, contents } = setup({ patch: async () => {}, appLimiter: gate });
    state.step = 1;
    publisher.request();
    await vi.advanceTimersByTimeAsync(0);
    const release = publisher.hold(); // a card callback arrives while the PATCH waits in the queue
    gate.open();
    await vi.advanceTimersByTimeAsync(1000);
    expect(patched).toHaveLength(0); // Feishu would revert an update sent before the response
    state.status = "completed";
    release();
    await vi.runAllTimersAsync();
    expect(contents()).toEqual(["completed step 1 forms "]);
  });

  it("does not count a change waiting for a callback's response as landed", async () => {
    const { state, publisher, patched } = setup({ patch: async () => {} });
    const release = publisher.hold();
    state.status = "completed";
    publisher.request();
    let idle = false;
    void publisher.idle().then(() => {
      idle = true;
    });
    await vi.advanceTimersByTimeAsync(5000);
    expect(idle).toBe(false);
    release();
    await vi.runAllTimersAsync();
    expect(idle).toBe(true);
    expect(patched).toHaveLength(1);
  });

  it("resolves idle() once everything pending has landed", async () => {
    const { state, publisher, patched } = setup();
    state.step = 1;
    publisher.request();
    const idle = publisher.idle();
    await vi.runAllTimersAsync();
    await idle;
    expect(patched).toHaveLength(1);
  });

  describe("a PATCH that got no answer", () => {
    const timedOut = () => new FeishuApiError({ method: "patch", message: "timeout of 10000ms exceeded" });
    /** The first PATCH fails with `error`; the others succeed. */
    const failsOnce = (error: Error) => {
      let calls = 0;
      return async () => {
        calls += 1;
        if (calls === 1) throw error;
      };
    };

    it("sends the latest state once more a request timeout after a later PATCH landed", async () => {
      const { state, publisher, patched, contents } = setup({ patch: failsOnce(timedOut()) });
      state.step = 1;
      publisher.request();
      await vi.advanceTimersByTimeAsync(10);
      // The platform may still apply "step 1" at any moment; meanwhile the run finished.
      state.status = "completed";
      publisher.request();
      let idle = false;
      void publisher.idle().then(() => {
        idle = true;
      });
      await vi.advanceTimersByTimeAsync(2000);
      expect(contents()).toEqual(["running step 1 forms ", "completed step 1 forms "]);
      expect(idle).toBe(false);
      await vi.runAllTimersAsync();
      expect(contents()).toEqual([
        "running step 1 forms ",
        "completed step 1 forms ",
        "completed step 1 forms ",
      ]);
      expect(patched[2]!.at - patched[1]!.at).toBeGreaterThanOrEqual(10_000);
      expect(patched[2]!.at - patched[1]!.at).toBeLessThan(10_300);
      expect(idle).toBe(true);
    });

    it("sends the confirmation even over an open form, which a late PATCH could have removed", async () => {
      const { state, publisher, contents } = setup({ patch: failsOnce(timedOut()) });
      state.step = 1;
      publisher.request();
      await vi.advanceTimersByTimeAsync(10);
      state.forms = ["req1"];
      publisher.request();
      await vi.runAllTimersAsync();
      expect(contents()).toEqual([
        "running step 1 forms ",
        "running step 1 forms req1",
        "running step 1 forms req1",
      ]);
    });

    it("needs no confirmation when the card that landed is the one left without an answer", async () => {
      const { state, publisher, patched } = setup({ patch: failsOnce(timedOut()) });
      state.step = 1;
      publisher.request();
      await vi.runAllTimersAsync();
      expect(patched).toHaveLength(2);
    });

    it("does not confirm a card that failed with an answer (a 5xx was not applied later)", async () => {
      const { state, publisher, patched } = setup({
        patch: failsOnce(new FeishuApiError({ method: "patch", message: "bad", httpStatus: 502 })),
      });
      state.step = 1;
      publisher.request();
      await vi.advanceTimersByTimeAsync(10);
      state.status = "completed";
      await vi.runAllTimersAsync();
      expect(patched).toHaveLength(2);
    });
  });

  describe("its place in the app-wide queue", () => {
    /** Counts the jobs given to the app limiter and the slots they gave back unused. */
    function countingLimiter() {
      const counts = { jobs: 0, unused: 0 };
      const limiter = async <T>(fn: (slot: Slot) => Promise<T>): Promise<T> => {
        counts.jobs += 1;
        return fn({
          unused: () => {
            counts.unused += 1;
          },
        });
      };
      return { counts, limiter };
    }

    it("asks for no budget after a PATCH when nothing changed since its render", async () => {
      const { counts, limiter } = countingLimiter();
      const { state, publisher, patched } = setup({ limiter });
      state.step = 1;
      publisher.request();
      await vi.runAllTimersAsync();
      expect(patched).toHaveLength(1);
      expect(counts).toEqual({ jobs: 1, unused: 0 });
    });

    it("gives its slot back when at its turn the card already shows that state", async () => {
      const { counts, limiter } = countingLimiter();
      const { state, publisher, patched } = setup({ limiter });
      state.step = 1;
      publisher.request();
      await vi.runAllTimersAsync();
      publisher.request(); // announced, but nothing differs
      await vi.runAllTimersAsync();
      expect(patched).toHaveLength(1);
      expect(counts).toEqual({ jobs: 2, unused: 1 });
    });

    it("does not send again what the card was created with", async () => {
      const { state, publisher, patched } = setup({
        shown: JSON.stringify(cardFor({ status: "running", step: 1, forms: [] })),
      });
      state.step = 1;
      publisher.request();
      await vi.runAllTimersAsync();
      expect(patched).toHaveLength(0);
      state.step = 2;
      publisher.request();
      await vi.runAllTimersAsync();
      expect(patched).toHaveLength(1);
    });
  });
});

describe("after a card callback: the settle rule (docs/long-connection.md)", () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(0);
  });
  afterEach(() => {
    vi.useRealTimers();
  });
  const logger = createLogger({ level: "silent" });

  /** A callback handled like card-actions.ts does: hold, answer with the card of the state, release with it. */
  function callback(rig: ReturnType<typeof setup>, change: () => void): FeishuEventHandlers {
    return {
      onMessage: async () => {},
      onCardAction: async () => {
        const release = rig.publisher.hold();
        change();
        const card = cardFor(rig.state);
        return {
          response: { card: { type: "raw", data: card } },
          afterResponse: (d) => release(d ? card : undefined),
        };
      },
    };
  }

  it("holds the next PATCH until the answer is sent and the settle delay has passed, then sends the state of that moment", async () => {
    const rig = setup({ patch: async () => {} });
    const handlers = callback(rig, () => {
      rig.state.status = "answered";
    });
    const answer = await answerCardAction(handlers, {}, { budgetMs: 2500, logger });
    rig.state.step = 3; // the agent moves on while the answer is on its way
    rig.publisher.request();
    await vi.advanceTimersByTimeAsync(5000);
    expect(rig.patched).toHaveLength(0); // not sent yet: nothing may overtake the answer

    answer.sent();
    await vi.advanceTimersByTimeAsync(DEFAULT_SETTLE_MS - 1);
    expect(rig.patched).toHaveLength(0);
    await vi.runAllTimersAsync();
    expect(rig.patched).toHaveLength(1);
    expect(rig.patched[0]?.at).toBeGreaterThanOrEqual(5000 + DEFAULT_SETTLE_MS);
    expect(rig.patched[0]?.at).toBeLessThan(5000 + DEFAULT_SETTLE_MS + 50);
    expect(rig.contents()).toEqual(["answered step 3 forms "]);
  });

  it("PATCHes the callback's card once after the settle delay: Feishu showed it to the clicker alone", async () => {
    const rig = setup({ patch: async () => {} });
    const handlers = callback(rig, () => {
      rig.state.status = "answered";
      rig.publisher.request();
    });
    const answer = await answerCardAction(handlers, {}, { budgetMs: 2500, logger, settleMs: 1000 });
    answer.sent();
    await vi.advanceTimersByTimeAsync(999);
    expect(rig.patched).toHaveLength(0); // never while the answer settles
    await vi.runAllTimersAsync();
    expect(rig.contents()).toEqual(["answered step 0 forms "]);
  });

  it("sends nothing after an answer whose card is what everyone already sees", async () => {
    const rig = setup({
      patch: async () => {},
      shown: JSON.stringify(cardFor({ status: "running", step: 0, forms: [] })),
    });
    const handlers = callback(rig, () => {}); // e.g. 只有发起人可以回答: the same card, a toast
    const answer = await answerCardAction(handlers, {}, { budgetMs: 2500, logger, settleMs: 1000 });
    answer.sent();
    await vi.runAllTimersAsync();
    expect(rig.patched).toHaveLength(0);
  });

  it("PATCHes the current state when the connection closed before the answer could be sent", async () => {
    const rig = setup({ patch: async () => {} });
    const handlers = callback(rig, () => {
      rig.state.status = "answered";
      rig.publisher.request();
    });
    const answer = await answerCardAction(handlers, {}, { budgetMs: 2500, logger, settleMs: 1000 });
    answer.sent(false); // e.g. the webhook's socket closed first: the platform still shows the old card
    await vi.runAllTimersAsync();
    expect(rig.contents()).toEqual(["answered step 0 forms "]);
  });

  it("PATCHes the current state when the callback's card never reached the platform (the handler overran)", async () => {
    const rig = setup({ patch: async () => {} });
    const base = callback(rig, () => {
      rig.state.status = "answered";
      rig.publisher.request();
    });
    const handlers: FeishuEventHandlers = {
      ...base,
      onCardAction: async (data) => {
        const result = await base.onCardAction(data);
        await new Promise((resolve) => setTimeout(resolve, 3000));
        return result;
      },
    };
    const answering = answerCardAction(handlers, {}, { budgetMs: 2500, logger, settleMs: 1000 });
    await vi.advanceTimersByTimeAsync(2500);
    const answer = await answering;
    expect(answer.response).toHaveProperty("toast"); // the timeout toast went out instead of the card
    answer.sent();
    await vi.runAllTimersAsync();
    expect(rig.contents()).toEqual(["answered step 0 forms "]);
  });

  it("PATCHes the current state when a PATCH already on the wire lands while the callback is answered", async () => {
    let landed: () => void = () => {};
    let calls = 0;
    const first = new Promise<void>((resolve) => {
      landed = resolve;
    });
    const rig = setup({ patch: () => (++calls === 1 ? first : Promise.resolve()) });
    rig.state.step = 1;
    rig.publisher.request();
    await vi.advanceTimersByTimeAsync(0);
    expect(rig.contents()).toEqual(["running step 1 forms "]); // sent, no answer yet
    // The click comes now; the task ends before the answer is built, so the answer carries the final card.
    const release = rig.publisher.hold();
    rig.state.status = "completed";
    rig.publisher.request();
    const answered = cardFor(rig.state);
    landed(); // the step-1 PATCH lands during the callback: the platform may show it, not the answer's card
    await vi.advanceTimersByTimeAsync(0);
    release(answered);
    await vi.runAllTimersAsync();
    expect(rig.contents()).toEqual(["running step 1 forms ", "completed step 1 forms "]);
  });

  it("PATCHes the current state after two overlapping callbacks, whichever card the platform applied last", async () => {
    const rig = setup({ patch: async () => {} });
    const releaseSubmit = rig.publisher.hold();
    const submitCard = cardFor({ ...rig.state, status: "submitted" });
    const releaseCancel = rig.publisher.hold();
    rig.state.status = "cancelled";
    rig.publisher.request();
    const cancelCard = cardFor(rig.state);
    // Released in this order, yet the platform may have applied the submit's answer last: the screen is unknown.
    releaseSubmit(submitCard);
    releaseCancel(cancelCard);
    await vi.runAllTimersAsync();
    expect(rig.contents()).toEqual(["cancelled step 0 forms "]);
  });
});
