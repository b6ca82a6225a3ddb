import type { NextFunction, Request, Response } from "express";
import { AppError } from "../errors.ts";
import { agentOf } from "./auth.ts";
import { RateLimiter, type RateRule } from "./rate-limit.ts";

/**
 * Requests per agent token on /mcp and /api/tasks|asks (issue 24 item 14), counted after the token is checked
 * and before the body is read: 50 concurrent `tools/list` from one token held a card callback for 4 s. A short
 * window for bursts and a long one for a steady flood; past either, 429 with Retry-After, nothing run.
 * Counted per agent name, which is what a token names (tokens of one name are one identity, guard.ts).
 */

export interface RequestRates {
  perSecond: RateRule;
  perMinute: RateRule;
}

export const DEFAULT_REQUEST_RATES: RequestRates = {
  perSecond: { max: 20, windowMs: 1_000 },
  perMinute: { max: 600, windowMs: 60_000 },
};

export function agentRequestRate(now: () => number, rates: RequestRates = DEFAULT_REQUEST_RATES) {
  const limiters = [new RateLimiter(rates.perSecond, now), new RateLimiter(rates.perMinute, now)];
  return (req: Request, res: Response, next: NextFunction) => {
    const key = `agent:${agentOf(req).agent}`;
    const waitMs = Math.max(...limiters.map((limiter) => limiter.retryAfterMs(key)));
    if (waitMs > 0) {
      const seconds = Math.max(1, Math.ceil(waitMs / 1000));
      res.setHeader("Retry-After", String(seconds));
      next(new AppError("RATE_LIMITED", `too many requests for this agent token: try again in ${seconds} s`));
      return;
    }
    for (const limiter of limiters) limiter.take(key);
    next();
  };
}
