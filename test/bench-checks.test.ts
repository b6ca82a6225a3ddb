import { afterEach, describe, expect, it, vi } from "vitest";
import { acpChecks } from "../bench/acp.ts";
import { agentsChecks } from "../bench/agents.ts";
import {
  type CallbackRow,
  callbackChecks,
  expectedToast,
  formValueFor,
  type Kind,
  toastContent,
} from "../bench/callbacks.ts";
import { cardI18nChecks } from "../bench/card-i18n.ts";
import { type CardKitRow, cardkitChecks } from "../bench/cardkit.ts";
import { type Check, verdict } from "../bench/checks.ts";
import { durableChecks } from "../bench/durable.ts";
import { type ManyCardsRow, manyCardsChecks } from "../bench/many-cards.ts";
import { medianCell } from "../bench/median.ts";
import { type OneCardRow, oneCardChecks } from "../bench/one-card.ts";
import { type ScaleResult, scaleChecks } from "../bench/scale.ts";
import { runSuite } from "../bench/suite.ts";
import { strings } from "../src/strings/index.ts";
import { type FakeChannelRig, startFakeChannel } from "./helpers/fake-channel.ts";
import { formsOn, requestIdsOn } from "./helpers/feishu.ts";

/**
 * Issue 32: a benchmark's correctness columns are checked by the benchmark, so a regression (a stale oracle's
 * 10 unexpected answers, one rate-limited PATCH, a form sent twice) makes `npm run bench` fail and say why.
 * Each benchmark's check is fed the row it printed, once as measured and once regressed.
 */

const failures = (checks: readonly Check[]) => verdict(checks).lines.filter((l) => l.startsWith("FAILED"));

const callbackRow = (over: Partial<CallbackRow> = {}): CallbackRow => ({
  transport: "webhook",
  arrival: "all at once",
  submits: 50,
  p50: 20,
  p99: 40,
  max: 41,
  serialP50: 1,
  unexpected: 0,
  ...over,
});

const publisher = (over: Partial<OneCardRow> = {}): OneCardRow => ({
  rate: 20,
  strategy: "publisher",
  changes: 1234,
  patches: 87,
  rateLimited: 0,
  finals: 18,
  finalsLanded: 18,
  finalP50: 414,
  finalP99: 913,
  worst: 1005,
  worstIsLowerBound: false,
  backlog: 0,
  ...over,
});
const naive: OneCardRow = {
  ...publisher(),
  strategy: "naive",
  patches: 1234,
  rateLimited: 900,
  finalsLanded: 16,
  finalP99: Number.POSITIVE_INFINITY,
};

const wave = (over: Partial<ManyCardsRow> = {}): ManyCardsRow => ({
  scenario: "terminal wave",
  cards: 1000,
  patches: 1000,
  minPerCard: 1,
  maxPerCard: 1,
  rateLimited: 0,
  terminalP50: 8883,
  terminalP99: 18_700,
  terminalMax: 18_700,
  allLandedMs: 19_700,
  landed: 1000,
  forms: 0,
  formsLanded: 0,
  formP50: Number.NaN,
  formP99: Number.NaN,
  plainWhileUrgentWaited: 0,
  staleRenders: 0,
  ...over,
});

const scale = (over: Partial<ScaleResult> = {}): ScaleResult => ({
  asks: 2000,
  connections: 1000,
  heapPerAsk: 2048,
  registerPerSecond: 30_000,
  completePerSecond: 70_000,
  registerPerSecondConnected: 18_000,
  completePerSecondConnected: 29_000,
  heapPerConnection: 1500,
  rssPerConnection: 17_000,
  connectMs: 300,
  resendOneP50: 0.3,
  resendOneP99: 1,
  stormMs: 300,
  stormP50: 200,
  stormP99: 290,
  refusedCompletes: 0,
  leftPending: 0,
  clientsServed: { connect: 1000, one: 200, oneOf: 200, storm: 1000 },
  ...over,
});

describe("the benchmarks' verdict", () => {
  it("fails the run on the stale oracle's 10 unexpected answers and quotes the first one", () => {
    const expected = "第 2 题「附加功能」：请至少选择一项或填写其他";
    const checks = callbackChecks([
      callbackRow({
        unexpected: 10,
        firstUnexpected: { kind: "invalid", got: "第 2 题「附加功能」还没有回答", expected },
      }),
      callbackRow({ arrival: "spread over 1 s" }),
    ]);
    const result = verdict(checks);
    expect(result.exitCode).toBe(1);
    expect(failures(checks)).toEqual([
      `FAILED callbacks: unexpected answers (webhook, all at once) is 10 (first, invalid: got "第 2 题「附加功能」还没有回答", expected "${expected}"), target 0`,
    ]);
    expect(result.lines.at(-1)).toMatch(/1 of \d+ correctness checks FAILED/);
  });

  it("passes a run whose only misses are timing targets, and still prints them", () => {
    const result = verdict(callbackChecks([callbackRow({ p99: 157 })]));
    expect(result.exitCode).toBe(0);
    expect(result.lines).toEqual([
      "missed (timing, not a failure) callbacks: p99 (webhook, all at once) is 157 ms, target ≤ 50 ms",
      "checks: all 1 correctness checks met; 1 timing target(s) missed",
    ]);
  });

  it("one card: checks the publisher's rows (not the baselines' refusals), every burst end and the 10× saving", () => {
    expect(failures(oneCardChecks([publisher(), naive], 1000))).toEqual([]);
    expect(failures(oneCardChecks([publisher({ rateLimited: 1, finalsLanded: 17 }), naive], 1000))).toEqual([
      "FAILED one-card: rate-limited (publisher, 20 changes/s) is 1, target 0",
      "FAILED one-card: finals landed (publisher, 20 changes/s) is 17/18, target 18/18",
    ]);
    expect(failures(oneCardChecks([publisher({ patches: 200 }), naive], 1000))).toEqual([
      "FAILED one-card: naive÷this (publisher, 20 changes/s) is 6.2×, target ≥ 10×",
    ]);
  });

  it("many cards: urgent behind plain, a stale render, a card never shown, a second PATCH in the wave", () => {
    expect(
      failures(
        manyCardsChecks([wave(), wave({ scenario: "mixed", patches: 1115, forms: 200, formsLanded: 200 })]),
      ),
    ).toEqual([]);
    expect(
      failures(
        manyCardsChecks([
          wave({ plainWhileUrgentWaited: 95, staleRenders: 3, patches: 1001, landed: 999, minPerCard: 0 }),
          wave({ scenario: "mixed", patches: 1115, forms: 200, formsLanded: 199 }),
        ]),
      ),
    ).toEqual([
      "FAILED many-cards: terminal states landed by 75 s (terminal wave) is 999/1000, target 1000/1000",
      "FAILED many-cards: PATCHes of the card with fewest (terminal wave) is 0, target ≥ 1",
      "FAILED many-cards: plain while urgent waited (terminal wave) is 95, target 0",
      "FAILED many-cards: stale renders (terminal wave) is 3, target 0",
      "FAILED many-cards: PATCHes (terminal wave) is 1001, target 1000",
      "FAILED many-cards: forms landed (mixed) is 199/200, target 200/200",
    ]);
  });

  it("the others: a refused complete, a chunk never shown, a PATCH after a form's send, a form twice, zh only", () => {
    expect(failures(scaleChecks(scale()))).toEqual([]);
    expect(failures(scaleChecks(scale({ refusedCompletes: 2, leftPending: 2 })))).toEqual([
      "FAILED scale: completes refused is 2, target 0",
      "FAILED scale: asks left pending is 2, target 0",
    ]);
    const acp = { rate: 50, chunks: 100, seconds: 2.2, patches: 3, finalMs: 200 };
    expect(failures(acpChecks([{ ...acp, latencies: new Array(100).fill(500) }]))).toEqual([]);
    expect(failures(acpChecks([{ ...acp, latencies: new Array(99).fill(500), finalMs: Infinity }]))).toEqual([
      "FAILED acp: chunks shown on the card (50 chunks/s) is 99/100, target 100/100",
      "FAILED acp: last chunk shown (50 chunks/s) is 0/1, target 1/1",
    ]);
    const agents = { agents: 40, formsShown: 40, calls: { sends: 40, patches: 0 }, answered: 40 };
    expect(failures(agentsChecks(agents))).toEqual([]);
    expect(failures(agentsChecks({ ...agents, calls: { sends: 40, patches: 40 }, answered: 39 }))).toEqual([
      "FAILED agents: PATCHes for the question cards is 40, target 0",
      "FAILED agents: get_answers calls that returned the answer is 39/40, target 40/40",
    ]);
    // The memory round's waits refused at once (another token's ask) measured nothing: a negative KiB per call.
    expect(failures(agentsChecks({ ...agents, waitsEndedEarly: 0 }))).toEqual([]);
    expect(failures(agentsChecks({ ...agents, waitsEndedEarly: 60 }))).toEqual([
      "FAILED agents: memory round: waits ended before measured is 60, target 0",
    ]);
    const durable = { pending: 10_000, restored: 10_000, cards: 100, lost: 0, doubled: 0 };
    expect(failures(durableChecks(durable))).toEqual([]);
    expect(failures(durableChecks({ ...durable, lost: 1, doubled: 3 }))).toEqual([
      "FAILED durable: forms lost after the restart (of 100 cards) is 1, target 0",
      "FAILED durable: forms sent twice after the restart (of 100 cards) is 3, target 0",
    ]);
    expect(failures(cardI18nChecks(["zh+en", "zh+en"]))).toEqual([]);
    expect(failures(cardI18nChecks(["zh+en", "zh only (over budget)"]))).toEqual([
      "FAILED card-i18n: states rendered in zh+en is 1/2, target 2/2",
    ]);
  });
});

describe("npm run bench (runSuite)", () => {
  const fake = (checks: Check[]) => async () => checks;
  const ok: Check = { benchmark: "fake", what: "lost", actual: "0", target: "0", ok: true };
  const regressed: Check = { ...ok, what: "lost (injected)", actual: "1", ok: false };

  it("prints its run first (commit, date, --quick, load average) and exits 1 on an injected regression", async () => {
    const lines: string[] = [];
    const code = await runSuite(["--quick"], {}, { a: fake([ok]), b: fake([regressed]) }, (l) =>
      lines.push(l),
    );
    expect(code).toBe(1);
    expect(lines[1]).toMatch(
      /^run: commit [0-9a-f]{7,}.*, \d{4}-\d\d-\d\dT[\d:.]+Z, --quick, load average at start [\d.]+ \/ [\d.]+ \/ [\d.]+/,
    );
    expect(lines).toContain("FAILED fake: lost (injected) is 1, target 0");
  });

  it("exits 0 when every check holds, and runs only the benchmarks named", async () => {
    const lines: string[] = [];
    const code = await runSuite(["a"], {}, { a: fake([ok]), b: fake([regressed]) }, (l) => lines.push(l));
    expect(code).toBe(0);
    expect(lines[1]).toContain(", full, ");
    expect(lines.at(-1)).toBe("checks: all 1 correctness checks met");
  });

  it("refuses an unknown name with exit code 2", async () => {
    const lines: string[] = [];
    expect(await runSuite(["nope"], {}, { a: fake([ok]) }, (l) => lines.push(l))).toBe(2);
    expect(lines[0]).toContain("unknown argument(s): nope");
  });
});

describe("the callbacks benchmark's oracle", () => {
  const ALICE = "ou_alice000000000000000000000000000";
  let rig: FakeChannelRig | undefined;
  afterEach(async () => {
    await rig?.stop();
    rig = undefined;
    vi.useRealTimers();
  });

  it("expects exactly the toasts the channel answers, taken from the product's own texts", async () => {
    vi.useFakeTimers();
    const r = await startFakeChannel({ askPing: false });
    rig = r;
    const cardId = await r.progressCard(r.send({ chatType: "p2p", senderOpenId: ALICE, text: "帮我部署" }));
    const card = await r.until(() => {
      const c = r.cardOf(cardId);
      return formsOn(c).length > 0 && c;
    }, "a form");
    const requestId = requestIdsOn(card)[0] ?? "";
    const ask = r.core.registry.get(requestId);
    const click = (kind: Kind) =>
      r.click({
        messageId: cardId,
        operatorOpenId: kind === "not the sender" ? "ou_stranger0000000000000000000000000" : ALICE,
        name: "ask0_submit",
        value: { kind: "feishu_ask", act: "submit", sessionId: ask?.sessionId, requestId, sender: ALICE },
        formValue: formValueFor(kind),
      });
    for (const kind of ["invalid", "not the sender", "valid"] as const) {
      const answer = JSON.stringify(await click(kind));
      expect(toastContent(answer)).toBe(expectedToast(strings, kind, ask?.questions ?? []));
    }
    // The oracle that went stale: it looked for the seed's words alone, and the toast is not that.
    expect(expectedToast(strings, "invalid", ask?.questions ?? [])).toBe(
      "第 2 题「附加功能」：请至少选择一项或填写其他",
    );
  });
});

describe("bench/median.ts", () => {
  it("gives each figure as the median of the runs and their spread, in the units printed", () => {
    expect(medianCell(["2,763", "7,893", "5,872"])).toBe("5,872 (2,763–7,893)");
    expect(medianCell(["8883 ms", "10.0 s", "8561 ms"])).toBe("8883 ms (8561 ms–10.0 s)");
    expect(medianCell(["0", "0", "0"])).toBe("0");
    expect(medianCell(["19/19", "18/19", "19/19"])).toBe("19/19 / 18/19");
  });
});

describe("the cardkit benchmark's checks", () => {
  const row = (over: Partial<CardKitRow>): CardKitRow => ({
    transport: "im",
    seconds: 6,
    calls: 10,
    byKind: {},
    contentPerSecond: 0,
    maxOpsPerSecond: 2,
    latencies: [100],
    shown: 84,
    changes: 84,
    ...over,
  });
  it("fails on more than 1.2× IM's calls besides element updates, over 10 ops/s on an entity, or a text change never shown", () => {
    // Against IM's 10 calls: 9 creates, sends and full updates are within 1.2×; the 25 element updates are the
    // typewriter's own budget and do not count against it.
    const good = [
      row({}),
      row({
        transport: "cardkit",
        calls: 34,
        byKind: { create: 1, send: 1, "full PUT": 7, "element update": 25 },
        contentPerSecond: 5,
        maxOpsPerSecond: 10,
      }),
    ];
    expect(failures(cardkitChecks(good))).toEqual([]);
    const bad = [
      row({}),
      row({
        transport: "cardkit",
        calls: 39,
        byKind: { create: 1, send: 1, "full PUT": 12, "element update": 25 },
        maxOpsPerSecond: 11,
        shown: 83,
      }),
    ];
    expect(failures(cardkitChecks(bad))).toHaveLength(3);
    // Fewer than 5 element updates a second is reported, not a failure (it measures the machine too).
    expect(verdict(cardkitChecks(bad)).lines.some((l) => l.startsWith("missed (timing"))).toBe(true);
  });
});
