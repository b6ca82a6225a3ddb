import { describe, expect, it } from "vitest";
import { verdict } from "../bench/checks.ts";
import { type AnswerRow, instancesChecks } from "../bench/instances.ts";
import { type CallCounts, countCalls, overLimit } from "../bench/instances-calls.ts";
import type { TakeoverRow } from "../bench/instances-takeover.ts";
import type { RecordedCall } from "../src/local/emulator/index.ts";

/** The instances benchmark's checks (issue 32's rule: fed its rows as measured and regressed) and its counts. */

const calls: CallCounts = {
  patches: 600,
  busiestMessageSecond: 3,
  overPerMessage: 0,
  appCalls: 1000,
  busiestSecond: 50,
  busiestMinute: 990,
  overApp: 0,
  refused: 0,
};
const outcome = { completed: 200, notOnce: 0, cardsNotOne: 0, green: 200 };
const answer: AnswerRow = {
  setup: "3 processes, Postgres",
  cards: 200,
  p50: 300,
  p99: 900,
  max: 950,
  serialP50: 20,
  accepted: 200,
  strangers: 20,
  strangersRefused: 20,
  outcome,
  endedMs: 40_000,
  calls,
};
const takeover: TakeoverRow = {
  leaseMs: 2000,
  tasks: 20,
  adopted: 20,
  adoptedP50: 1900,
  adoptedMax: 2100,
  formsBack: 20,
  formP50: 2500,
  formMax: 3500,
  replacementListenMs: 4000,
  replacementFirstCallMs: 30_000,
  accepted: 20,
  outcome: { ...outcome, completed: 20, green: 20 },
  calls,
};
const failures = (answers: AnswerRow[], takeovers: TakeoverRow[]) =>
  verdict(instancesChecks(answers, takeovers)).lines.filter((line) => !line.startsWith("checks:"));

describe("the instances benchmark's checks", () => {
  it("passes the rows as measured", () => {
    expect(failures([answer], [takeover])).toEqual([]);
  });

  it("fails on an answer lost or doubled, a second card, a 6th PATCH in a second, a run never adopted", () => {
    const lines = failures(
      [{ ...answer, accepted: 199, outcome: { ...outcome, notOnce: 1, cardsNotOne: 2 } }],
      [
        {
          ...takeover,
          adopted: 19,
          adoptedMax: Number.POSITIVE_INFINITY,
          calls: { ...calls, overPerMessage: 1 },
        },
      ],
    );
    expect(lines).toEqual([
      "FAILED instances: answers accepted (3 processes, Postgres) is 199/200, target 200/200",
      "FAILED instances: questions answered other than once (3 processes, Postgres) is 1, target 0",
      "FAILED instances: messages with other than one card (3 processes, Postgres) is 2, target 0",
      "FAILED instances: runs adopted after kill -9 (lease 2 s) is 19/20, target 20/20",
      "FAILED instances: PATCHes over 5/s per message (lease 2 s) is 1, target 0",
      "missed (timing, not a failure) instances: every run adopted, 1.2 × lease (lease 2 s) is never, target ≤ 2400 ms",
    ]);
  });

  it("reports a slow p99 as a timing target, not a failure", () => {
    const result = verdict(instancesChecks([{ ...answer, p99: 2000 }], []));
    expect(result.exitCode).toBe(0);
    expect(result.lines[0]).toBe(
      "missed (timing, not a failure) instances: callback answer p99 at 200 cards (3 processes, Postgres) is 2000 ms, target ≤ 1500 ms",
    );
  });
});

describe("the instances benchmark's call counts", () => {
  const call = (at: number, method: string, path: string, status = 200, code = 0): RecordedCall => ({
    at,
    method,
    path,
    query: {},
    status,
    code,
    durationMs: 1,
  });

  it("counts the 6th call within a second and nothing within the limit", () => {
    expect(overLimit([0, 100, 200, 300, 400, 999], 1000, 5)).toEqual({ over: 1, busiest: 6 });
    expect(overLimit([0, 200, 400, 600, 800, 1000], 1000, 5)).toEqual({ over: 0, busiest: 5 });
  });

  it("counts PATCHes per message across instances, the app's calls, and refusals, but not the token's", () => {
    const patch = (at: number, id: string) => call(at, "PATCH", `/open-apis/im/v1/messages/${id}`);
    const counted = countCalls([
      call(0, "POST", "/open-apis/auth/v3/tenant_access_token/internal"),
      ...[0, 100, 200, 300, 400, 500].map((at) => patch(at, "om_a")),
      patch(50, "om_b"),
      call(600, "POST", "/open-apis/im/v1/messages/om_a/reply", 429, 99991400),
    ]);
    expect(counted).toEqual({
      patches: 7,
      busiestMessageSecond: 6,
      overPerMessage: 1,
      appCalls: 8,
      busiestSecond: 8,
      busiestMinute: 8,
      overApp: 0,
      refused: 1,
    });
  });
});
