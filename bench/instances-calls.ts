import type { RecordedCall } from "../src/local/emulator/index.ts";

/**
 * The Open API calls of one row of the instances benchmark as the emulator recorded them, counted against
 * Feishu's limits across every instance: 5 PATCHes per message per second (230020) and 50 calls per second and
 * 1,000 per minute per app. Every call that reached the platform counts, refused or not (a refused call was
 * still sent over a limit). Pure, so test/bench-instances.test.ts can feed it calls.
 */

export interface CallCounts {
  patches: number;
  /** Most PATCHes of one message within any second. */
  busiestMessageSecond: number;
  /** PATCHes that were a message's 6th or later within a second. */
  overPerMessage: number;
  appCalls: number;
  busiestSecond: number;
  busiestMinute: number;
  /** Calls that were the app's 51st or later within a second, or its 1,001st or later within a minute. */
  overApp: number;
  /** Calls the emulator refused for a rate (HTTP 429, 99991400, 230020). */
  refused: number;
}

const PATCH_OF_MESSAGE = /^\/open-apis\/im\/v1\/messages\/([^/]+)$/;
/** Getting a token and the long connection's endpoint are not calls of the app's budget (§3.3). */
const OUTSIDE_BUDGET = /^\/(open-apis\/auth\/|callback\/)/;
const RATE_CODES = new Set([99991400, 230020]);

/**
 * How many of `times` are beyond the `limit`th within a window `(t - windowMs, t]`, and the most any window
 * holds. `times` need not be sorted.
 */
export function overLimit(
  times: readonly number[],
  windowMs: number,
  limit: number,
): { over: number; busiest: number } {
  const sorted = [...times].sort((a, b) => a - b);
  let over = 0;
  let busiest = 0;
  let from = 0;
  for (let i = 0; i < sorted.length; i += 1) {
    const at = sorted[i] ?? 0;
    while ((sorted[from] ?? 0) <= at - windowMs) from += 1;
    const inWindow = i - from + 1;
    busiest = Math.max(busiest, inWindow);
    if (inWindow > limit) over += 1;
  }
  return { over, busiest };
}

export function countCalls(calls: readonly RecordedCall[]): CallCounts {
  const byMessage = new Map<string, number[]>();
  const app: number[] = [];
  let refused = 0;
  for (const call of calls) {
    if (OUTSIDE_BUDGET.test(call.path)) continue;
    app.push(call.at);
    if (call.status === 429 || (call.code !== undefined && RATE_CODES.has(call.code))) refused += 1;
    const messageId = call.method === "PATCH" ? PATCH_OF_MESSAGE.exec(call.path)?.[1] : undefined;
    if (messageId) byMessage.set(messageId, [...(byMessage.get(messageId) ?? []), call.at]);
  }
  let overPerMessage = 0;
  let busiestMessageSecond = 0;
  for (const times of byMessage.values()) {
    const counted = overLimit(times, 1000, 5);
    overPerMessage += counted.over;
    busiestMessageSecond = Math.max(busiestMessageSecond, counted.busiest);
  }
  const second = overLimit(app, 1000, 50);
  const minute = overLimit(app, 60_000, 1000);
  return {
    patches: [...byMessage.values()].reduce((n, times) => n + times.length, 0),
    busiestMessageSecond,
    overPerMessage,
    appCalls: app.length,
    busiestSecond: second.busiest,
    busiestMinute: minute.busiest,
    overApp: second.over + minute.over,
    refused,
  };
}
