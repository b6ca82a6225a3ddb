import { afterEach, describe, expect, it, vi } from "vitest";
import type { Card } from "../src/cards/model.ts";
import type { CardTransport } from "../src/feishu/card-transport.ts";
import { IGNORED_SLOT } from "../src/feishu/limits.ts";
import {
  type CardShape,
  decide,
  initialState,
  type PublishEffect,
  type PublishEvent,
  type PublishState,
} from "../src/feishu/publish-policy.ts";
import { CardPublisher } from "../src/feishu/publisher.ts";
import type { Agent } from "../src/harness/agents/agent.ts";
import type { RecordedCall } from "../src/local/emulator/types.ts";
import { createLogger } from "../src/logger.ts";
import { type FeishuRig, startFeishuRig } from "./helpers/feishu.ts";

/**
 * The app's Open API budget on a CardKit card (issue 29): only text the transport streams as element updates
 * goes at the 200 ms text interval; a change only a full update shows (a step done: the chat list's summary
 * counts it) waits CARD_PATCH_INTERVAL_MS since the last full update, as IM PATCH does, while the text goes on
 * typing out. End to end, the SDK over HTTP to the emulator; the bounds are lower bounds on gaps the bot
 * keeps, which a slow machine only widens.
 */

const ALICE = "ou_alice000000000000000000000000000";
const INTERVAL_MS = 1000;
/** The emulator stamps a call when it arrives, the bot counts from its answer: this much earlier at most. */
const SLACK_MS = 60;
const rigs: FeishuRig[] = [];
afterEach(async () => {
  for (const r of rigs.splice(0)) await r.stop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ANSWER = "部署完成：服务已上线，监控正常，回滚脚本已就绪。".repeat(4);

/** Streams the answer for about 3 s while a step starts or ends every 150 ms. */
const busy: Agent = {
  name: "busy",
  async run(ctx) {
    const chunks = 60;
    for (let i = 1; i <= chunks; i += 1) {
      ctx.reportText(ANSWER.slice(0, Math.ceil((ANSWER.length * i) / chunks)));
      if (i % 3 === 0) {
        const k = Math.floor(i / 6);
        ctx.reportStep(`tool:${k}`, {
          tool: "Read",
          title: `读取 ${k}.md`,
          status: i % 6 === 0 ? "done" : "running",
        });
      }
      await sleep(50);
    }
    return { text: ANSWER };
  },
};

async function run(cardTransport: "im" | "cardkit") {
  const r = await startFeishuRig({ agent: busy, cardTransport, cardPatchIntervalMs: INTERVAL_MS });
  rigs.push(r);
  const userMessageId = await r.send({ chatType: "p2p", senderOpenId: ALICE, text: "部署" });
  const messageId = await r.progressCard(userMessageId);
  await r.until(() => r.cardOf(messageId).header?.template === "green", "the completed card");
  await r.channel.idle();
  return { r, messageId };
}

const gaps = (calls: readonly RecordedCall[]) => calls.slice(1).map((c, i) => c.at - calls[i]!.at);
const isContent = (c: RecordedCall) => c.path.includes("/elements/");
const isFull = (c: RecordedCall) => c.method === "PUT" && /\/cardkit\/v1\/cards\/[^/]+$/.test(c.path);

describe("the Open API budget of a card whose steps tick while its answer streams", () => {
  it("cardkit: full updates no more often than the card's interval, the text at about 200 ms between them", async () => {
    const { r } = await run("cardkit");
    const calls = r.emulator.calls.filter((c) => c.path.startsWith("/open-apis/cardkit/v1/cards/"));
    expect(calls.map((c) => c.code).filter((code) => code !== 0)).toEqual([]);
    const full = calls.filter(isFull);
    const content = calls.filter(isContent);
    // The last full update is the final state: urgent, it goes at once. Every other waits the interval.
    for (const gap of gaps(full.slice(0, -1))) expect(gap).toBeGreaterThanOrEqual(INTERVAL_MS - SLACK_MS);
    // 3 s of typing: a full update about once a second, the text in between at the 200 ms text interval.
    expect(full.length).toBeLessThanOrEqual(6);
    expect(content.length).toBeGreaterThanOrEqual(6);
    expect(content.length).toBeGreaterThan(full.length);
    // Never over the platform's 10 operations a second per entity.
    const times = calls.map((c) => c.at);
    for (const t of times) expect(times.filter((u) => u >= t && u < t + 1000).length).toBeLessThanOrEqual(10);
    expect(
      r.emulator.calls.filter((c) => c.method === "PATCH" && c.path.startsWith("/open-apis/im/")),
    ).toEqual([]);
  });

  it("im: every PATCH but the final one waits the card's interval, as before", async () => {
    const { r, messageId } = await run("im");
    const patches = r.emulator.calls.filter(
      (c) => c.method === "PATCH" && c.path === `/open-apis/im/v1/messages/${messageId}`,
    );
    expect(patches.length).toBeGreaterThanOrEqual(2);
    for (const gap of gaps(patches.slice(0, -1))) expect(gap).toBeGreaterThanOrEqual(INTERVAL_MS - SLACK_MS);
    expect(r.emulator.calls.filter((c) => c.path.startsWith("/open-apis/cardkit/"))).toEqual([]);
  });
});

describe("the policy's two intervals (pure)", () => {
  const LIMITS = {
    intervalMs: 1000,
    urgentIntervalMs: 250,
    textIntervalMs: 200,
    maxTransientRetries: 3,
    maxRateLimitRetries: 8,
    lateRetryDelaysMs: [30_000],
    confirmAfterMs: 10_000,
  };
  const shape = (text: boolean, full: boolean): CardShape => ({
    key: "running|",
    formOpen: false,
    pending: { text, full },
  });
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
  /** A full update that landed at 0 (key known), and a change since. */
  const sentFull = () =>
    run(initialState(LIMITS), [
      [{ type: "changed", shape: shape(false, true) }, 0],
      [{ type: "timerFired" }, 0],
      [{ type: "turn" }, 0],
      [{ type: "rendered", json: "A", key: "running|", pending: { text: false, full: true } }, 0],
      [{ type: "landed" }, 0],
      [{ type: "done", sent: true, shape: shape(false, false) }, 0],
      [{ type: "reconciled", json: "A", shape: shape(false, false) }, 0],
    ]).state;
  const armed = (effects: PublishEffect[]) => effects.filter((e) => e.type === "arm").map((e) => e.at);

  it("arms a full change at the card's interval since the last full update; text does not wait for a full update", () => {
    // A full update is not the typewriter's: text that changed since goes at once (the entity allows 10/s).
    expect(armed(run(sentFull(), [[{ type: "changed", shape: shape(true, false) }, 10]]).effects)).toEqual([
      10,
    ]);
    expect(armed(run(sentFull(), [[{ type: "changed", shape: shape(false, true) }, 10]]).effects)).toEqual([
      1000,
    ]);
    // Text and a full change: the text goes first.
    expect(armed(run(sentFull(), [[{ type: "changed", shape: shape(true, true) }, 10]]).effects)).toEqual([
      10,
    ]);
  });

  it("spaces text from the start of the last text update, so a slow call does not slow the typewriter", () => {
    // A text update starts at 200 and takes 100 ms: the next text is due at 400 (5/s), not at 500.
    const { effects } = run(sentFull(), [
      [{ type: "changed", shape: shape(true, false) }, 10],
      [{ type: "timerFired" }, 200],
      [{ type: "turn" }, 200],
      [{ type: "rendered", json: "B", key: "running|", pending: { text: true, full: false } }, 200],
      [{ type: "landed" }, 300],
      [{ type: "done", sent: true, shape: shape(false, false) }, 300],
      [{ type: "reconciled", json: "B", shape: shape(false, false) }, 300],
      [{ type: "changed", shape: shape(true, false) }, 310],
    ]);
    expect(effects.filter((e) => e.type === "patch")).toHaveLength(1);
    expect(armed(effects).at(-1)).toBe(400);
  });

  it("sends only the text of a mixed change before the full update is due, then the full one at its interval", () => {
    const { state, effects } = run(sentFull(), [
      [{ type: "changed", shape: shape(true, true) }, 10],
      [{ type: "timerFired" }, 200],
      [{ type: "turn" }, 200],
      [{ type: "rendered", json: "B", key: "running|", pending: { text: true, full: true } }, 200],
      [{ type: "landed" }, 220],
      [{ type: "done", sent: true, shape: shape(false, true) }, 220],
    ]);
    expect(effects.filter((e) => e.type === "patch")).toEqual([{ type: "patch", mode: "text" }]);
    expect(state.handled).toBeLessThan(state.version); // the rest is still to send
    expect(state.lastFullAt).toBe(0);
    expect(armed(effects).at(-1)).toBe(1000);
  });

  it("gives the turn back when only a full change is left and it is not due, and arms it for when it is", () => {
    const { effects } = run(sentFull(), [
      [{ type: "changed", shape: shape(true, false) }, 10],
      [{ type: "timerFired" }, 200],
      [{ type: "turn" }, 200],
      // Meanwhile the text became a full change too, and nothing streams on its own.
      [{ type: "rendered", json: "B", key: "running|", pending: { text: false, full: true } }, 200],
      [{ type: "done", sent: false, shape: shape(false, true) }, 200],
    ]);
    expect(effects.some((e) => e.type === "patch")).toBe(false);
    expect(armed(effects).at(-1)).toBe(1000);
  });

  it("without a text interval (IM PATCH) ignores what is pending: the card's interval since the last PATCH", () => {
    const { textIntervalMs: _, ...im } = LIMITS;
    const state = run(initialState(im), [
      [{ type: "changed", shape: shape(true, false) }, 0],
      [{ type: "timerFired" }, 0],
      [{ type: "turn" }, 0],
      [{ type: "rendered", json: "A", key: "running|", pending: { text: true, full: true } }, 0],
      [{ type: "landed" }, 0],
      [{ type: "done", sent: true, shape: shape(true, false) }, 0],
      [{ type: "reconciled", json: "A", shape: shape(true, false) }, 0],
    ]);
    expect(state.effects.filter((e) => e.type === "patch")).toEqual([{ type: "patch" }]);
    expect(armed(run(state.state, [[{ type: "changed", shape: shape(true, false) }, 10]]).effects)).toEqual([
      1000,
    ]);
  });
});

describe("a CardKit card's publisher (fake time)", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("sends each update the moment it renders it: IM's 5 PATCHes a second per message do not hold the typewriter", async () => {
    vi.useFakeTimers();
    let typed = 0;
    const sent: { rendered: number; typedThen: number }[] = [];
    const card = (n: number): Card => ({
      schema: "2.0",
      config: { update_multi: true },
      body: { elements: [{ tag: "markdown", content: `typed ${n}` }] },
    });
    const transport: CardTransport = {
      kind: "cardkit",
      async update(shown) {
        const element = shown.body.elements[0];
        sent.push({
          rendered: Number(element?.tag === "markdown" ? element.content.split(" ")[1] : -1),
          typedThen: typed,
        });
        await new Promise((resolve) => setTimeout(resolve, 20));
      },
      // The text streams, and a step's change (a full update) is always pending too: about 6 calls a second.
      pending: () => ({ text: true, full: true }),
      close: () => undefined,
    };
    const publisher = new CardPublisher({
      messageId: "om_1",
      messenger: { patchCard: async () => undefined },
      transport,
      shape: () => ({ key: "running|", formOpen: false }),
      render: () => card(typed),
      intervalMs: 1000,
      textIntervalMs: 200,
      appLimiter: (fn) => fn(IGNORED_SLOT),
      now: Date.now,
      logger: createLogger({ level: "silent" }),
    });
    for (let i = 0; i < 60; i += 1) {
      typed += 1; // a chunk every 50 ms for 3 s
      publisher.request();
      await vi.advanceTimersByTimeAsync(50);
    }
    publisher.stop();
    expect(sent.length).toBeGreaterThanOrEqual(15); // 5 text updates a second, and the full ones besides
    // What went out was the text of the moment it went: nothing waited between the render and the call.
    expect(sent.filter((s) => s.rendered !== s.typedThen)).toEqual([]);
  });
});
