/**
 * The bounds one WebSocket client lives within (issue 14 item 1). A client that does not read, floods
 * frames or opens hundreds of sockets must cost the bot a bounded amount of memory and time, and never
 * the service of other users. Pure: no timers, no sockets; `connections.ts` applies them.
 */
export interface WsLimits {
  /**
   * Bytes queued to one connection and not yet written to the network. Above this the connection is
   * terminated: a client that does not read cannot make us hold its frames (a subscribe flood once
   * queued gigabytes and killed the process).
   */
  maxBufferedBytes: number;
  /** Open connections per user; a new one beyond this closes that user's oldest (a stale tab, usually). */
  maxConnectionsPerUser: number;
  /**
   * Sustained frames per second one connection may send. Above it we stop reading its socket for a while,
   * and refuse (with one `rate_limited` error) frames beyond a second burst that were already read.
   */
  framesPerSecond: number;
  /** Frames a connection may send at once above the sustained rate (a page subscribing to a few sessions). */
  frameBurst: number;
  /** Sessions one connection may be subscribed to at once. */
  maxSubscriptionsPerConnection: number;
}

export const DEFAULT_WS_LIMITS: WsLimits = {
  maxBufferedBytes: 4 * 1024 * 1024,
  maxConnectionsPerUser: 16,
  framesPerSecond: 200,
  frameBurst: 400,
  maxSubscriptionsPerConnection: 64,
};

/** A token bucket's state: tokens left (fractional) and when they were counted. */
export interface Bucket {
  tokens: number;
  atMs: number;
}

export function fullBucket(limits: Pick<WsLimits, "frameBurst">, nowMs: number): Bucket {
  return { tokens: limits.frameBurst, atMs: nowMs };
}

export type FrameVerdict =
  /** Handle it; when `pauseMs` > 0, stop reading the socket that long so the average stays within the rate. */
  | { handle: true; pauseMs: number }
  /** Over the rate by more than a burst (frames already read in one chunk): refuse it, and pause. */
  | { handle: false; pauseMs: number };

/**
 * One frame arrived. Up to `frameBurst` frames are free; the next `frameBurst` are handled on credit while
 * reading pauses until the credit is paid back at `framesPerSecond`; beyond that credit frames are refused.
 * Pausing alone would not do: one TCP chunk already read can hold hundreds of small frames.
 */
export function takeFrame(
  bucket: Bucket,
  limits: Pick<WsLimits, "framesPerSecond" | "frameBurst">,
  nowMs: number,
): { bucket: Bucket; verdict: FrameVerdict } {
  const elapsedMs = Math.max(0, nowMs - bucket.atMs);
  const tokens = Math.min(limits.frameBurst, bucket.tokens + (elapsedMs * limits.framesPerSecond) / 1000);
  const waitMs = (level: number) => (level >= 0 ? 0 : Math.ceil((-level * 1000) / limits.framesPerSecond));
  if (tokens - 1 < -limits.frameBurst) {
    return { bucket: { tokens, atMs: nowMs }, verdict: { handle: false, pauseMs: waitMs(tokens) } };
  }
  const left = tokens - 1;
  return { bucket: { tokens: left, atMs: nowMs }, verdict: { handle: true, pauseMs: waitMs(left) } };
}
