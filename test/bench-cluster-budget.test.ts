import { describe, expect, it } from "vitest";
import { verdict } from "../bench/checks.ts";
import { clusterBudgetChecks, violations } from "../bench/cluster-budget.ts";

/** The cluster-budget benchmark's check (issue 32's rule: fed its row as measured and regressed) and its count. */
describe("the cluster-budget benchmark's check", () => {
  const windows = { secondMs: 1000, minuteMs: 60_000 };

  it("fails the run on a call over the app's limits", () => {
    const row = {
      scenario: "3 members on Postgres",
      calls: 2060,
      perSecond: 22.9,
      busiestSecond: 50,
      busiestMinute: 1000,
      violations: 0,
    };
    const failures = (rows: (typeof row)[]) =>
      verdict(clusterBudgetChecks(rows)).lines.filter((line) => line.startsWith("FAILED"));
    expect(failures([row])).toEqual([]);
    expect(failures([{ ...row, violations: 91 }])).toEqual([
      "FAILED cluster-budget: calls over the app's limits (3 members on Postgres) is 91, target 0",
    ]);
  });

  it("counts the 51st call in a second and the 1,001st in a minute, and nothing within them", () => {
    const spaced = (count: number, everyMs: number) => Array.from({ length: count }, (_, i) => i * everyMs);
    expect(violations(spaced(51, 10), windows)).toEqual({ count: 1, busiest: [51, 51] });
    expect(violations(spaced(100, 20), windows)).toEqual({ count: 0, busiest: [50, 100] });
    expect(violations(spaced(1001, 59), windows).count).toBe(1);
    expect(violations(spaced(1001, 60), windows).count).toBe(0);
  });
});
