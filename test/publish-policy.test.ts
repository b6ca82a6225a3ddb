import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  type CardShape,
  decide,
  initialState,
  isIdle,
  isUrgent,
  type PatchFailure,
  type PublishEffect,
  type PublishEvent,
  type PublishLimits,
  type PublishState,
} from "../src/feishu/publish-policy.ts";

/**
 * The publisher's policy as plain data, one event at a time (DESIGN §5): no timers, no limiter, no messenger.
 * Each test drives `decide` to a situation and reads the state and effects it returns. The whole publisher
 * against a reference model is in publisher-model.test.ts; the shell's behaviour on fake time in publisher.test.ts.
 */

const LIMITS: PublishLimits = {
  intervalMs: 1000,
  urgentIntervalMs: 250,
  maxTransientRetries: 3,
  maxRateLimitRetries: 8,
  lateRetryDelaysMs: [30_000, 120_000],
  confirmAfterMs: 10_000,
};
const RUNNING: CardShape = { key: "running|", formOpen: false };
const FORM: CardShape = { key: "running|req1", formOpen: true };

/** Feeds events in order at the given times; returns the last state and every effect, in order. */
function run(state: PublishState, steps: [PublishEvent, number][]) {
  let s = state;
  const effects: PublishEffect[] = [];
  for (const [event, now] of steps) {
    const decision = decide(s, event, now);
    s = decision.state;
    effects.push(...decision.effects);
  }
  return { state: s, effects };
}

const step = (state: PublishState, event: PublishEvent, now = 0) => decide(state, event, now);
const types = (effects: PublishEffect[]) => effects.map((effect) => effect.type);

/** A PATCH of `json` that landed at `at`, from a fresh publisher. */
function landedOnce(json = "A", shape = RUNNING, at = 0): PublishState {
  return run(initialState(LIMITS), [
    [{ type: "changed", shape }, at],
    [{ type: "timerFired" }, at],
    [{ type: "turn" }, at],
    [{ type: "rendered", json, key: shape.key }, at],
    [{ type: "landed" }, at],
    [{ type: "done", sent: true, shape }, at],
    [{ type: "reconciled", json, shape }, at],
  ]).state;
}

/** From `state`, a send that is now on the wire with `json`. */
function onTheWire(state: PublishState, json: string, now: number, shape = RUNNING): PublishState {
  return run(state, [
    [{ type: "changed", shape }, now],
    [{ type: "timerFired" }, now],
    [{ type: "turn" }, now],
    [{ type: "rendered", json, key: shape.key }, now],
  ]).state;
}

const api = (fields: Partial<Extract<PatchFailure, { kind: "api" }>>): PatchFailure => ({
  kind: "api",
  code: undefined,
  gone: false,
  rateLimited: false,
  perMessage: false,
  retryAfterMs: undefined,
  refused: false,
  audited: false,
  transient: false,
  answered: true,
  ...fields,
});

describe("decide: changed", () => {
  it("arms the send timer at once for the first change, which is urgent", () => {
    const { state, effects } = step(initialState(LIMITS), { type: "changed", shape: RUNNING }, 40);
    expect(effects).toEqual([{ type: "arm", at: 40 }]);
    expect(state.timerAt).toBe(40);
    expect(isIdle(state)).toBe(false);
  });

  it("spaces a plain tick by the interval after the last PATCH, an urgent change by the urgent interval", () => {
    const sent = landedOnce("A", RUNNING, 0);
    expect(step(sent, { type: "changed", shape: RUNNING }, 100).effects).toEqual([{ type: "arm", at: 1000 }]);
    const done = { key: "completed|", formOpen: false };
    expect(step(sent, { type: "changed", shape: done }, 100).effects).toEqual([{ type: "arm", at: 250 }]);
  });

  it("coalesces: a later change keeps the timer already armed", () => {
    const first = step(landedOnce(), { type: "changed", shape: RUNNING }, 100).state;
    const second = step(first, { type: "changed", shape: RUNNING }, 200);
    expect(second.effects).toEqual([]);
    expect(second.state.version).toBe(first.version + 1);
  });

  it("brings the timer forward when an urgent change follows a plain one", () => {
    const plain = step(landedOnce(), { type: "changed", shape: RUNNING }, 100).state;
    expect(step(plain, { type: "changed", shape: FORM }, 100).effects).toEqual([{ type: "arm", at: 250 }]);
  });

  it("is form-safe: a plain tick arms nothing while a form is open", () => {
    const { state, effects } = step(landedOnce("F", FORM), { type: "changed", shape: FORM }, 2000);
    expect(effects).toEqual([]);
    expect(isIdle(state)).toBe(true);
  });

  it("waits for the PATCH in flight instead of arming a second one", () => {
    const wire = onTheWire(landedOnce(), "B", 2000);
    expect(step(wire, { type: "changed", shape: RUNNING }, 2010).effects).toEqual([]);
  });

  it("respects a back-off the platform asked for", () => {
    const limited = run(onTheWire(landedOnce(), "B", 2000), [
      [{ type: "patchThrew" }, 2000],
      [
        {
          type: "failed",
          failure: api({ rateLimited: true, perMessage: true, code: 230020, retryAfterMs: 3000 }),
          shape: RUNNING,
        },
        2000,
      ],
    ]);
    expect(limited.effects).toContainEqual({ type: "arm", at: 5000 });
  });
});

describe("decide: a callback", () => {
  it("disarms a pending send while it is answered, and counts that change as not landed", () => {
    const pending = step(landedOnce(), { type: "changed", shape: RUNNING }, 100).state;
    const held = step(pending, { type: "callbackStarted" }, 150);
    expect(held.effects).toEqual([{ type: "disarm" }]);
    expect(isIdle(held.state)).toBe(false);
    expect(step(held.state, { type: "changed", shape: RUNNING }, 160).effects).toEqual([]);
  });

  it("after the answer settled, PATCHes the state once even when it is the answer's card (only the clicker saw it)", () => {
    const held = step(landedOnce(), { type: "callbackStarted" }, 100).state;
    const settled = step(held, { type: "callbackSettled", shown: "ANSWER", shape: RUNNING }, 1100);
    expect(settled.state.lastSentJson).toBeUndefined();
    expect(settled.effects).toEqual([{ type: "arm", at: 1100 }]);
    const turn = run(settled.state, [
      [{ type: "timerFired" }, 1100],
      [{ type: "turn" }, 1100],
      [{ type: "rendered", json: "ANSWER", key: RUNNING.key }, 1100],
    ]);
    expect(types(turn.effects)).toEqual(["queue", "render", "patch"]);
  });

  it("after an answer whose card everyone sees already (the last PATCH's), sends nothing", () => {
    const shown = landedOnce();
    const held = step(shown, { type: "callbackStarted" }, 100).state;
    const settled = step(held, { type: "callbackSettled", shown: shown.lastSentJson, shape: RUNNING }, 1100);
    expect(settled.state.lastSentJson).toBe(shown.lastSentJson);
    expect(settled.effects).toEqual([]);
  });

  it("takes the card as unknown when a PATCH was on the wire as the callback began", () => {
    const wire = onTheWire(landedOnce(), "B", 2000);
    const held = step(wire, { type: "callbackStarted" }, 2010).state;
    expect(held.overlapped).toBe(true);
    const settled = run(held, [
      [{ type: "landed" }, 2050],
      [{ type: "callbackSettled", shown: "ANSWER", shape: RUNNING }, 3000],
    ]).state;
    expect(settled.lastSentJson).toBeUndefined();
  });

  it("takes the card as unknown after two overlapping callbacks", () => {
    const twice = run(landedOnce(), [
      [{ type: "callbackStarted" }, 100],
      [{ type: "callbackStarted" }, 110],
      [{ type: "callbackSettled", shown: "SUBMIT", shape: RUNNING }, 1100],
    ]);
    expect(twice.state.lastSentJson).toBeUndefined();
    expect(twice.effects).toEqual([]); // still held by the second
    const both = step(twice.state, { type: "callbackSettled", shown: "CANCEL", shape: RUNNING }, 1110);
    expect(both.state.lastSentJson).toBeUndefined();
    expect(both.effects).toEqual([{ type: "arm", at: 1110 }]);
  });

  it("gives a turn that comes during a hold back unused, and sends after the answer", () => {
    const queued = run(landedOnce(), [
      [{ type: "changed", shape: RUNNING }, 1000],
      [{ type: "timerFired" }, 1000],
      [{ type: "callbackStarted" }, 1005],
      [{ type: "turn" }, 1010],
    ]);
    expect(types(queued.effects).at(-1)).toBe("unused");
    const after = run(queued.state, [
      [{ type: "done", sent: false, shape: RUNNING }, 1010],
      [{ type: "callbackSettled", shown: undefined, shape: RUNNING }, 2000],
    ]);
    expect(after.effects).toEqual([{ type: "arm", at: 2000 }]);
  });
});

describe("decide: the turn, the render and the PATCH", () => {
  it("renders at the turn at the card's degrade level, and PATCHes what differs", () => {
    const queued = run(initialState(LIMITS, { degradeLevel: 1 }), [
      [{ type: "changed", shape: RUNNING }, 0],
      [{ type: "timerFired" }, 0],
    ]);
    expect(queued.effects.at(-1)).toEqual({ type: "queue" });
    const turn = step(queued.state, { type: "turn" });
    expect(turn.effects).toEqual([{ type: "render", level: 1, redaction: "none" }]);
    const rendered = step(turn.state, { type: "rendered", json: "A", key: RUNNING.key });
    expect(rendered.effects).toEqual([{ type: "patch" }]);
    expect(rendered.state.patching).toBe(true);
  });

  it("skips a render identical to what the card shows, giving the turn back", () => {
    const queued = run(initialState(LIMITS, { shown: "A" }), [
      [{ type: "changed", shape: RUNNING }, 0],
      [{ type: "timerFired" }, 0],
      [{ type: "turn" }, 0],
    ]).state;
    const { state, effects } = step(queued, { type: "rendered", json: "A", key: RUNNING.key });
    expect(effects).toEqual([{ type: "count", outcome: "skipped" }, { type: "unused" }]);
    expect(state.stats.skipped).toBe(1);
  });

  it("counts the changes folded into one PATCH as coalesced, and the PATCH as sent", () => {
    const { effects, state } = run(initialState(LIMITS), [
      [{ type: "changed", shape: RUNNING }, 0],
      [{ type: "changed", shape: RUNNING }, 0],
      [{ type: "changed", shape: RUNNING }, 0],
      [{ type: "timerFired" }, 0],
      [{ type: "turn" }, 0],
      [{ type: "rendered", json: "A", key: RUNNING.key }, 0],
      [{ type: "landed" }, 90],
      [{ type: "done", sent: true, shape: RUNNING }, 90],
    ]);
    expect(effects).toContainEqual({ type: "count", outcome: "coalesced", count: 2 });
    expect(effects).toContainEqual({ type: "count", outcome: "sent" });
    expect(state.stats.sent).toBe(1);
    expect(state.lastSentAt).toBe(90);
  });

  it("reconciles after a PATCH: asks for a render, and schedules if it differs from what was sent", () => {
    const done = run(onTheWire(initialState(LIMITS), "A", 0), [
      [{ type: "landed" }, 100],
      [{ type: "done", sent: true, shape: RUNNING }, 100],
    ]);
    expect(done.effects.at(-1)).toEqual({ type: "render", level: 0, redaction: "none" });
    const same = step(done.state, { type: "reconciled", json: "A", shape: RUNNING }, 100);
    expect(same.effects).toEqual([]);
    expect(isIdle(same.state)).toBe(true);
    const changed = step(done.state, { type: "reconciled", json: "B", shape: RUNNING }, 100);
    expect(changed.effects).toEqual([{ type: "arm", at: 1100 }]);
  });

  it("sends a change announced while the PATCH was in flight next, without a reconcile render", () => {
    const wire = step(onTheWire(initialState(LIMITS), "A", 0), { type: "changed", shape: RUNNING }, 50).state;
    const done = run(wire, [
      [{ type: "landed" }, 100],
      [{ type: "done", sent: true, shape: RUNNING }, 100],
    ]);
    expect(done.effects.at(-1)).toEqual({ type: "arm", at: 1100 });
  });
});

describe("decide: failures", () => {
  const failAt = (failure: PatchFailure, now = 2000, from = landedOnce()) =>
    run(onTheWire(from, "B", now), [
      [{ type: "patchThrew" }, now],
      [{ type: "failed", failure, shape: RUNNING }, now],
    ]);

  it("backs off a second on 230020 without a reset header, exponentially on an app-wide 429", () => {
    expect(failAt(api({ rateLimited: true, perMessage: true, code: 230020 })).state.backoffUntil).toBe(3000);
    let state = landedOnce();
    const waits: number[] = [];
    for (let i = 0; i < 3; i += 1) {
      state = failAt(api({ rateLimited: true, code: 429 }), 2000, state).state;
      waits.push(state.backoffUntil - 2000);
    }
    expect(waits).toEqual([1000, 2000, 4000]);
    expect(state.stats.rateLimited).toBe(3);
  });

  it("gives up after the rate-limit retries and does not try that card again", () => {
    let state = landedOnce();
    let last: PublishEffect[] = [];
    for (let i = 0; i <= LIMITS.maxRateLimitRetries; i += 1) {
      ({ state, effects: last } = failAt(
        api({ rateLimited: true, code: 230020, perMessage: true }),
        2000,
        state,
      ));
    }
    expect(last).toContainEqual({ type: "count", outcome: "failed", code: 230020 });
    expect(state.lastFailedJson).toBe("B");
    expect(state.rateFailures).toBe(0);
  });

  it("re-renders a refused card one level plainer, up to 2, counted as degraded", () => {
    const once = failAt(api({ refused: true, code: 230099 }));
    expect(once.state.degrade).toBe(1);
    expect(once.effects).toContainEqual({ type: "count", outcome: "degraded", code: 230099 });
    expect(once.effects).toContainEqual({ type: "arm", at: 2000 }); // urgent, and not spaced from the failure
    const twice = failAt(api({ refused: true, code: 230025 }), 2000, once.state);
    expect(twice.state.degrade).toBe(2);
    const thrice = failAt(api({ refused: true, code: 230099 }), 2000, twice.state);
    expect(thrice.state.degrade).toBe(2);
    expect(thrice.effects).toContainEqual({ type: "count", outcome: "failed", code: 230099 });
  });

  it("re-renders a card the tenant's audit refused (230028) masked, then withheld, then gives up", () => {
    const audited = api({ audited: true, code: 230028 });
    const once = failAt(audited);
    expect(once.state.redaction).toBe("masked");
    expect(once.state.degrade).toBe(0); // the other ladder is untouched
    expect(once.effects).toContainEqual({ type: "count", outcome: "degraded", code: 230028 });
    expect(once.effects).toContainEqual({ type: "arm", at: 2000 });
    const turn = step(step(once.state, { type: "timerFired" }, 2000).state, { type: "turn" }, 2000);
    expect(turn.effects).toEqual([{ type: "render", level: 0, redaction: "masked" }]);
    const twice = failAt(audited, 2000, once.state);
    expect(twice.state.redaction).toBe("withheld");
    const thrice = failAt(audited, 2000, twice.state);
    expect(thrice.state.redaction).toBe("withheld");
    expect(thrice.effects).toContainEqual({ type: "count", outcome: "failed", code: 230028 });
    // A later 230099 still climbs its own ladder, keeping the redaction.
    const refused = failAt(api({ refused: true, code: 230099 }), 2000, thrice.state);
    expect(refused.state).toMatchObject({ degrade: 1, redaction: "withheld" });
  });

  it("stops for good on a card that can no longer be updated, and tells its owner", () => {
    const { state, effects } = failAt(api({ gone: true, code: 230031 }));
    expect(state.stopped).toBe(true);
    expect(effects).toContainEqual({ type: "count", outcome: "stopped", code: 230031 });
    expect(effects).toContainEqual({ type: "gone" });
    expect(step(state, { type: "changed", shape: RUNNING }, 3000).effects).toEqual([]);
    expect(isIdle(state)).toBe(true);
  });

  it("retries a 5xx with a growing back-off, a bounded number of times", () => {
    let state = landedOnce();
    const waits: number[] = [];
    for (let i = 0; i < LIMITS.maxTransientRetries; i += 1) {
      state = failAt(api({ transient: true, code: 502 }), 2000, state).state;
      waits.push(state.backoffUntil - 2000);
    }
    expect(waits).toEqual([500, 1000, 2000]);
    const last = failAt(api({ transient: true, code: 502 }), 2000, state);
    expect(last.effects).toContainEqual({ type: "count", outcome: "failed", code: 502 });
  });

  it("tries a state given up on a failing platform once more after each late delay, and stops after them", () => {
    let state = landedOnce();
    let last: PublishEffect[] = [];
    for (let i = 0; i <= LIMITS.maxTransientRetries; i += 1)
      ({ state, effects: last } = failAt(api({ transient: true, code: 502 }), 2000, state));
    expect(last).toContainEqual({ type: "armLate", at: 32_000 });
    expect(isIdle(state)).toBe(true); // shutdown does not wait for it
    const fired = step(state, { type: "lateRetryFired", shape: RUNNING }, 32_000);
    // The very card given up on goes out again (confirming), as one try: the next failure gives up again.
    expect(fired.state.confirming).toBe(true);
    expect(fired.effects).toContainEqual({ type: "arm", at: 32_000 });
    const again = failAt(api({ transient: true, code: 502 }), 32_000, fired.state);
    expect(again.effects).toContainEqual({ type: "armLate", at: 152_000 });
    const second = step(again.state, { type: "lateRetryFired", shape: RUNNING }, 152_000);
    const third = failAt(api({ transient: true, code: 502 }), 152_000, second.state);
    expect(types(third.effects)).not.toContain("armLate"); // both delays used: given up for good
  });

  it("does not retry later a card the platform refuses, nor one stopped", () => {
    let state = landedOnce();
    for (const code of [230099, 230099, 230099])
      state = failAt(api({ refused: true, code }), 2000, state).state;
    expect(state.lateRetryAt).toBeUndefined();
    const stopped = step(state, { type: "stop" }, 2000).state;
    expect(step(stopped, { type: "lateRetryFired", shape: RUNNING }, 40_000).effects).toEqual([]);
  });

  it("treats a card that got no answer as possibly shown, and confirms the latest state after a later PATCH", () => {
    const lost = failAt(api({ transient: true, answered: false }));
    expect(lost.state.unanswered).toEqual(["B"]);
    expect(lost.state.lastSentJson).toBeUndefined();
    const later = run(onTheWire(lost.state, "C", 3000), [
      [{ type: "landed" }, 3100],
      [{ type: "done", sent: true, shape: RUNNING }, 3100],
    ]);
    expect(later.effects).toContainEqual({ type: "armConfirm", at: 13_100 });
    expect(isIdle(later.state)).toBe(false);
    const confirm = step(later.state, { type: "confirmFired", shape: FORM }, 13_100);
    expect(confirm.state.confirming).toBe(true);
    // Over an open form and with nothing new to render: the confirmation goes out anyway.
    expect(confirm.effects).toEqual([{ type: "arm", at: 13_100 }]);
    expect(isUrgent(confirm.state, FORM.key)).toBe(true);
  });

  it("needs no confirmation when the card that landed is the one that got no answer", () => {
    const lost = failAt(api({ transient: true, answered: false }));
    const again = run(onTheWire(lost.state, "B", 3000), [[{ type: "landed" }, 3100]]);
    expect(types(again.effects)).not.toContain("armConfirm");
  });

  it("after giving up, asks for a render to catch a change nobody announced meanwhile", () => {
    const { state, effects } = failAt(api({ code: 230001 }));
    expect(effects.at(-1)).toEqual({ type: "render", level: 0, redaction: "none" });
    expect(step(state, { type: "reconciled", json: "B", shape: RUNNING }, 2000).effects).toEqual([]);
    const moved = step(state, { type: "reconciled", json: "C", shape: RUNNING }, 2000);
    expect(moved.effects).toEqual([{ type: "arm", at: 2000 }]);
  });

  it("keeps a card that got no answer in mind over later cards, until it can no longer arrive", () => {
    const lost = failAt(api({ transient: true, answered: false }));
    // Its retry lands: nothing to confirm yet, but it may still arrive until 10 s after that landing.
    const retried = run(onTheWire(lost.state, "B", 2500), [[{ type: "landed" }, 2550]]);
    expect(types(retried.effects)).not.toContain("armConfirm");
    expect(retried.state.unansweredUntil).toBe(12_550);
    // A different card lands before then: the old one may cover it, so confirm when it no longer can.
    const later = run(onTheWire(retried.state, "C", 4000), [[{ type: "landed" }, 4050]]);
    expect(later.effects).toContainEqual({ type: "armConfirm", at: 12_550 });
    // So does the PATCH after a callback's answer (its card reached the clicker alone).
    const held = run(retried.state, [
      [{ type: "done", sent: true, shape: RUNNING }, 2550],
      [{ type: "callbackStarted" }, 3000],
      [{ type: "callbackSettled", shown: "ANSWER", shape: RUNNING }, 4000],
    ]);
    expect(held.state.lastSentJson).toBeUndefined();
    expect(run(onTheWire(held.state, "ANSWER", 4000), [[{ type: "landed" }, 4050]]).effects).toContainEqual({
      type: "armConfirm",
      at: 12_550,
    });
    // Past that, it is forgotten.
    const after = run(onTheWire(later.state, "D", 13_000), [[{ type: "landed" }, 13_050]]);
    expect(after.state.unanswered).toEqual([]);
    expect(after.effects).toContainEqual({ type: "disarmConfirm" });
  });

  it("gives up at once on another 4xx, and on an unexpected error", () => {
    expect(failAt(api({ code: 230001 })).effects).toContainEqual({
      type: "count",
      outcome: "failed",
      code: 230001,
    });
    const odd = failAt({ kind: "unexpected" });
    expect(odd.effects).toContainEqual({ type: "count", outcome: "failed" });
    expect(odd.state.lastFailedJson).toBe("B");
  });
});

describe("decide: stop", () => {
  it("clears both timers and ignores everything after", () => {
    const lost = run(onTheWire(landedOnce(), "B", 2000), [
      [{ type: "patchThrew" }, 2000],
      [{ type: "failed", failure: api({ transient: true, answered: false }), shape: RUNNING }, 2000],
    ]).state;
    const confirming = run(onTheWire(lost, "C", 3000), [
      [{ type: "landed" }, 3100],
      [{ type: "done", sent: true, shape: RUNNING }, 3100],
      [{ type: "reconciled", json: "C", shape: RUNNING }, 3100],
      [{ type: "changed", shape: RUNNING }, 3200],
    ]).state;
    const stopped = step(confirming, { type: "stop" }, 3300);
    expect(stopped.effects).toEqual([{ type: "disarm" }, { type: "disarmConfirm" }]);
    expect(isIdle(stopped.state)).toBe(true);
    expect(step(stopped.state, { type: "timerFired" }, 4000).effects).toEqual([]);
    expect(step(stopped.state, { type: "turn" }, 4000).effects).toEqual([{ type: "unused" }]);
  });

  it("never changes the state it was given", () => {
    const before = landedOnce();
    const copy = structuredClone(before);
    step(before, { type: "changed", shape: FORM }, 5000);
    step(before, { type: "failed", failure: api({ gone: true, code: 230031 }), shape: RUNNING }, 5000);
    expect(before).toEqual(copy);
  });
});

describe("the policy is pure", () => {
  const source = (file: string) => fs.readFileSync(path.resolve(import.meta.dirname, "..", file), "utf8");

  const POLICY = [
    "src/feishu/publish-policy.ts",
    "src/feishu/publish-failures.ts",
    "src/feishu/publish-state.ts",
  ];
  it.each(POLICY)("%s imports only types and its own vocabulary, and reads no clock or timer", (file) => {
    const text = source(file);
    const imports = [...text.matchAll(/^import (type )?[^;]*from "([^"]+)";/gm)];
    const own = new Set(POLICY.map((f) => `./${path.basename(f)}`));
    const values = imports.filter((m) => !m[1] && !own.has(m[2] ?? "")).map((m) => m[2]);
    expect(values).toEqual([]);
    expect(text).not.toMatch(/\b(setTimeout|setInterval|Date\.now|performance\.now|Math\.random)\b/);
  });
});
