/**
 * What the Feishu side reports for operators (`/metrics`), as a narrow port: the channel, publishers, limiter
 * and transports call these, and only `src/metrics.ts` knows they become Prometheus series. Tests and benches
 * that do not care pass nothing and get `NO_FEISHU_METRICS`.
 */

/**
 * What became of one card PATCH attempt; `coalesced` counts state changes folded into a later PATCH, `degraded`
 * a card the platform refused (230099, 230025) that is re-rendered plainer, `stopped` a card that can no
 * longer be updated (230031, 230011, 230110), after which its publisher sends nothing more.
 */
export const PATCH_OUTCOMES = [
  "sent",
  "coalesced",
  "skipped",
  "rate_limited",
  "failed",
  "degraded",
  "stopped",
] as const;
export type PatchOutcome = (typeof PATCH_OUTCOMES)[number];

/**
 * The long connection's life, as the SDK reports it (webhook mode has none). `standby`: one of several
 * instances, another holds the app's connection (feishu/held-connection.ts).
 */
export type ConnectionState = "connecting" | "ready" | "reconnecting" | "failed" | "closed" | "standby";

export interface FeishuMetrics {
  /** `code`: Feishu's error code (230020, 99991400…) for all but sent/coalesced/skipped; `count` defaults to 1. */
  patch(outcome: PatchOutcome, options?: { code?: number; count?: number }): void;
  /** A card callback answered, from arrival to the response being ready. */
  callback(durationMs: number, outcome: "answered" | "failed"): void;
  /** How long a call waited in the app-wide limiter before its turn. */
  limiterWait(waitMs: number, urgent: boolean): void;
  /** Where to read how many calls wait in the app-wide limiter, at scrape time. */
  limiterQueue(pending: () => number): void;
  connection(state: ConnectionState): void;
}

export const NO_FEISHU_METRICS: FeishuMetrics = {
  patch: () => undefined,
  callback: () => undefined,
  limiterWait: () => undefined,
  limiterQueue: () => undefined,
  connection: () => undefined,
};
